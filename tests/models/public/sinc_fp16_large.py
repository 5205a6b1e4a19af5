"""float16 sinc of a large argument: eager returned NaN, compiled (fp32 opmath) a tiny finite value

Upstream: https://github.com/pytorch/pytorch/issues/118176
Upstream decision: not a bug: compiled closer to float64 (closed by a maintainer as "not a real issue"; eager was later changed to use opmath)
Maintainers' rule says: benign
Class: opmath-precision
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.sinc(x)


def get_inputs():
    return [torch.tensor([25152.0, 12345.0, 1000.0, 3.0, 0.5, 0.25, 2.0, 0.0], dtype=torch.float16)]


def get_init_inputs():
    return []
