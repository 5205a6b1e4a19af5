"""A minGPT block whose __init__ stores a lambda closing over its own MLP submodules (self.mlpf)."""

import math

import torch
import torch.nn as nn


class NewGELU(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x.pow(3))))


class Model(nn.Module):
    def __init__(self, dim: int = 24, heads: int = 3, block: int = 8) -> None:
        super().__init__()
        self.heads = heads
        self.ln_1 = nn.LayerNorm(dim)
        self.c_attn = nn.Linear(dim, 3 * dim)
        self.c_proj = nn.Linear(dim, dim)
        self.ln_2 = nn.LayerNorm(dim)
        self.register_buffer("bias", torch.tril(torch.ones(block, block)).view(1, 1, block, block))
        self.mlp = nn.ModuleDict(dict(
            c_fc=nn.Linear(dim, 4 * dim), c_proj=nn.Linear(4 * dim, dim), act=NewGELU(),
        ))
        m = self.mlp
        self.mlpf = lambda x: m.c_proj(m.act(m.c_fc(x)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        h = self.ln_1(x)
        q, k, v = self.c_attn(h).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :t, :t] == 0, float("-inf"))
        att = torch.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, d)
        x = x + self.c_proj(y)
        return x + self.mlpf(self.ln_2(x))


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(2, 8, 24)]


def get_init_inputs() -> list[int]:
    return [24, 3, 8]
