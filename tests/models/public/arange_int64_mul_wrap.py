"""int64 arange times a large constant: compiled products wrap at int32

Upstream: https://github.com/pytorch/pytorch/issues/175966
Upstream decision: bug (open, pt2: ubn; reported on CUDA/Triton, cause is constant/index propagation computing the product in the index dtype)
Maintainers' rule says: regression
Class: arange-int32-wrap
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        r = torch.arange(0, 16, dtype=torch.int64, device=x.device) * 1500000000
        return r + x.to(torch.int64)


def get_inputs():
    return [torch.zeros(16, dtype=torch.int64)]


def get_init_inputs():
    return []
