"""ceil(x) + zeros: eager turns -0.0 into +0.0, compiled keeps -0.0, so reciprocal flips +inf to -inf

Upstream: https://github.com/pytorch/pytorch/issues/189799
Upstream decision: bug (open; labelled module: edge cases)
Maintainers' rule says: regression
Class: sign-zero
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        v = torch.ceil(x)  # ceil(-0.5) = -0.0
        v = v + torch.zeros_like(v)  # IEEE: -0.0 + 0.0 = +0.0
        return torch.reciprocal(v)


def get_inputs():
    return [torch.tensor([-0.5, -0.1, -0.9, 0.5, -0.3, 1.5, -0.7, -2.2], dtype=torch.float32)]


def get_init_inputs():
    return []
