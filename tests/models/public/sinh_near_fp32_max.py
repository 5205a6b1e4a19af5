"""float32 sinh just below the overflow boundary: compiled returns inf where eager is finite

Upstream: https://github.com/pytorch/pytorch/issues/183763
Upstream decision: bug (closed; fix PR #184359 replaces SLEEF float sinh/cosh/acosh with scalar libm)
Maintainers' rule says: regression
Class: sleef-range
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        # sinh(x) is finite in float32 up to |x| ~ 89.41; SLEEF's vector sinhf is documented for |x| <= 88.5
        return torch.sinh(x)


def get_inputs():
    # 8 elements: fewer than eager's 2*Vec::size() so eager takes its scalar loop
    return [torch.tensor([88.6, 88.85, 88.9, 89.1, -89.2, 89.35, 10.0, -1.5], dtype=torch.float32)]


def get_init_inputs():
    return []
