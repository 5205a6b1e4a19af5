"""torch.frac(-0.0): eager returns +0.0, compiled (decomposition) returned -0.0, so 1/frac flips sign

Upstream: https://github.com/pytorch/pytorch/issues/183606
Upstream decision: bug (fixed by PR #183640: frac decomposition rewritten as x - trunc(x))
Maintainers' rule says: regression
Class: sign-zero
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        f = torch.frac(x)
        return f, 1.0 / f


def get_inputs():
    return [torch.tensor([-0.0, -0.0, -1.0, -3.0, 0.0, -2.5, 4.0, -0.0], dtype=torch.float32)]


def get_init_inputs():
    return []
