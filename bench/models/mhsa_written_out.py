"""Multi-head self-attention written out: separate q/k/v Linears, scaled scores, softmax, merge."""

import math

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim: int = 32, heads: int = 4) -> None:
        super().__init__()
        self.heads = heads
        self.q = nn.Linear(dim, dim)
        self.k = nn.Linear(dim, dim)
        self.v = nn.Linear(dim, dim)
        self.o = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        hd = d // self.heads

        def split(z: torch.Tensor) -> torch.Tensor:
            return z.view(b, t, self.heads, hd).permute(0, 2, 1, 3)

        q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
        att = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(hd))
        att = att.softmax(dim=-1)
        out = torch.matmul(att, v).permute(0, 2, 1, 3).contiguous().view(b, t, d)
        return self.o(out)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(2, 6, 32)]


def get_init_inputs() -> list[int]:
    return [32, 4]
