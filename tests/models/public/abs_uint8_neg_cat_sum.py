"""-abs(x) on uint8 flowing through cat + sum: compiled C++ std::abs promotes to int and loses the uint8 wrap

Upstream: https://github.com/pytorch/pytorch/issues/187018
Upstream decision: bug (closed)
Maintainers' rule says: regression
Class: int-promotion
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        y = -x.abs()
        return torch.cat([y, y]).sum()


def get_inputs():
    return [torch.tensor([200, 200], dtype=torch.uint8)]


def get_init_inputs():
    return []
