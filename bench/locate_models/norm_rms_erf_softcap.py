"""A norm-heavy gated MLP block in the style of modern LLMs: RMSNorm (written by hand), a SwiGLU
feed-forward, a second RMSNorm, a float16-safe soft cap of the block output (cap * erf(x / cap),
cap 30000), then a LayerNorm and a GroupNorm over the feature groups before the head."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim) + 0.1 * torch.randn(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class SwiGLU(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.gate = nn.Linear(dim, hidden, bias=False)
        self.up = nn.Linear(dim, hidden, bias=False)
        self.down = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        return self.down(F.silu(self.gate(x)) * self.up(x))


class Model(nn.Module):
    def __init__(self, dim=32, hidden=64, cap=30000.0, outputs=8):
        super().__init__()
        self.cap = cap
        self.norm1 = RMSNorm(dim)
        self.ffn = SwiGLU(dim, hidden)
        self.norm2 = RMSNorm(dim)
        self.norm3 = nn.LayerNorm(dim)
        self.groups = nn.GroupNorm(4, dim)
        self.head = nn.Linear(dim, outputs)

    def forward(self, x):
        x = x + self.ffn(self.norm1(x))
        x = self.norm2(x)
        x = self.cap * torch.erf(x / self.cap)
        x = self.groups(self.norm3(x))
        return self.head(x)


def get_inputs():
    return [torch.randn(32, 32)]
