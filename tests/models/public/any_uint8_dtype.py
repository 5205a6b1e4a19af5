"""torch.any on uint8 returns bool when compiled (uint8 eager), so later uint8 arithmetic stops wrapping

Upstream: https://github.com/pytorch/pytorch/issues/198081
Upstream decision: bug (open; Inductor's reduce_any lowering returns bool, aten.all keeps uint8)
Maintainers' rule says: regression
Class: any-uint8-dtype
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        # eager: uint8(1) * 200 + 100 wraps to 44; a bool result promotes to int64 and gives 300
        return torch.any(x) * 200 + 100, x.any(0)


def get_inputs():
    return [torch.tensor([[0, 3, 0], [0, 0, 0]], dtype=torch.uint8)]


def get_init_inputs():
    return []
