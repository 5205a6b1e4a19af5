"""Float floor division just below an integer quotient: compiled 1.0 // 0.1 gives 10, eager 9

Upstream: https://github.com/pytorch/pytorch/issues/197895
Upstream decision: bug (open; Inductor lowers float floor division to floor(a / b), eager uses an fmod-based algorithm)
Maintainers' rule says: regression
Class: floor-division
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return a // b


def get_inputs():
    a = torch.tensor([1.0, 0.5, 6.0, 1.0, 7.0, 3.0, -1.0, 2.5], dtype=torch.float32)
    b = torch.tensor([0.1, 0.1, 0.2, 1.0 / 3.0, 0.7, 0.3, 0.1, 0.5], dtype=torch.float32)
    return [a, b]


def get_init_inputs():
    return []
