"""where/full_like, both operands cast to float16, then added: compiled skips the fp16 rounding of the operands

Upstream: https://github.com/pytorch/pytorch/issues/182131
Upstream decision: expected behaviour (closed; the same where + full_like + cast + add pattern, #183761, was closed by a maintainer as intended: vanishes with emulate_precision_casts)
Maintainers' rule says: expected-by-default
Class: cast-roundtrip
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, c):
        z = torch.where(c, torch.full_like(x, 0.5), torch.full_like(x, -0.5))
        y = z.to(torch.float16) + x.to(torch.float16)
        return y, y.float().sum()


def get_inputs():
    x = torch.arange(24, dtype=torch.float32).reshape(2, 3, 4) / 10
    c = (torch.arange(24) % 5 == 0).reshape(2, 3, 4)
    return [x, c]


def get_init_inputs():
    return []
