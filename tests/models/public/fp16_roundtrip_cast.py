"""Explicit float32 -> float16 -> float32 round trip dropped by the CPU codegen

Upstream: https://github.com/pytorch/pytorch/issues/185337
Upstream decision: expected behaviour by default (closed; PR #185847 makes the round trip exact only under emulate_precision_casts=True, default unchanged)
Maintainers' rule says: expected-by-default
Class: cast-roundtrip
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        y = x.to(torch.float16).to(torch.float32)
        return y, y.sum(dim=1)


def get_inputs():
    return [(torch.arange(20, dtype=torch.float32).reshape(5, 4).t() / 7.0).contiguous()]


def get_init_inputs():
    return []
