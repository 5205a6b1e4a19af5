"""var_mean of an empty tensor: compiled mean is 0 instead of NaN

Upstream: https://github.com/pytorch/pytorch/issues/197108
Upstream decision: bug (open; the fused var_mean takes its mean from the reduction identity)
Maintainers' rule says: regression
Class: empty-reduction-nan
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        var, mean = torch.var_mean(x, correction=0)
        return var, mean


def get_inputs():
    return [torch.zeros(0, dtype=torch.float32)]


def get_init_inputs():
    return []
