"""sign(GELU(x)) in the far negative tail: vectorized erf leaves a tiny negative value where eager gives -0.0

Upstream: https://github.com/pytorch/pytorch/issues/189804
Upstream decision: not planned (closed; a maintainer called it an ill-conditioned input, vectorized erf differs from std::erf by ulps and closing the gap would slow vectorized code)
Maintainers' rule says: benign
Class: libm-ulp
"""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        g = F.gelu(x)
        return torch.sign(g), g


def get_inputs():
    return [torch.linspace(-6.5, -5.0, 32, dtype=torch.float32)]


def get_init_inputs():
    return []
