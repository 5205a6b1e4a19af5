"""torch.minimum(-0.0, +0.0) on CPU: compiled returns +0.0 (eager -0.0), flipping 1/x from -inf to +inf

Upstream: https://github.com/pytorch/pytorch/issues/194347
Upstream decision: bug (open; CPU fix PR #194472 open, CUDA counterpart #185610 fixed)
Maintainers' rule says: regression
Class: sign-zero
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, y):
        m = torch.minimum(x, y)
        return m, 1.0 / m


def get_inputs():
    # keep fewer than 8 elements: eager's sign of a zero tie depends on the length (scalar tail vs
    # SIMD body: float32 flips at 16 elements, float64 at 8 on AVX2), and the float64 reference must
    # stay on the scalar path to side with the upstream report
    x = torch.tensor([-0.0, -0.0, 1.0, -2.0], dtype=torch.float32)
    y = torch.tensor([0.0, 0.0, 0.5, 3.0], dtype=torch.float32)
    return [x, y]


def get_init_inputs():
    return []
