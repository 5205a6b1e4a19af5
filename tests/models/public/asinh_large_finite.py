"""float32 asinh of large finite inputs: compiled returns +-inf where eager is finite

Upstream: https://github.com/pytorch/pytorch/issues/183767
Upstream decision: bug (closed; emulate_precision_casts does not change it per the repro bot)
Maintainers' rule says: regression
Class: sleef-range
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.asinh(x)


def get_inputs():
    return [torch.tensor([3e22, 7e25, -8e23, 1e10, 1e30, -2e19, 2.0, 0.5], dtype=torch.float32)]


def get_init_inputs():
    return []
