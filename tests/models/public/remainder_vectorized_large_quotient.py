"""Vectorized float remainder on CPU: NaN for an infinite divisor and 0 for 1e20 % 3 (eager: dividend and 2)

Upstream: https://github.com/pytorch/pytorch/issues/198057
Upstream decision: bug (open; the vector path computes a - floor(a / b) * b instead of fmod with sign correction)
Maintainers' rule says: regression
Class: remainder-vectorized
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return torch.remainder(a, b)


def get_inputs():
    inf = float("inf")
    a = torch.tensor([5.5, -5.5, 0.0, 1e20, 2147483648.0, 7.0, 1.0, -0.0], dtype=torch.float32)
    b = torch.tensor([inf, -inf, inf, 3.0, 3.0, 0.7, 0.1, 1.0], dtype=torch.float32)
    return [a, b]


def get_init_inputs():
    return []
