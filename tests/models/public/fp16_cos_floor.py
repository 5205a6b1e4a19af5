"""floor(cos(x)) in float16 on x86 CPU: eager rounds cos to fp16 (1.0) before floor, compiled floors the fp32 value

Upstream: https://github.com/pytorch/pytorch/issues/145466
Upstream decision: closed (closing comment not visible in the excerpts read; the sibling report #160730 on fp16 tan/sin was closed by a maintainer as expected: fused fp32 intermediates, more precise than eager)
Maintainers' rule says: benign
Class: cast-roundtrip
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.floor(torch.cos(x))


def get_inputs():
    return [torch.randn(16, 16).to(torch.float16)]


def get_init_inputs():
    return []
