"""Rotary position embeddings (cos/sin tables from a buffer, rotate_half) on q and k, then SDPA."""

import torch
import torch.nn as nn
import torch.nn.functional as F


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class Model(nn.Module):
    def __init__(self, dim: int = 32, heads: int = 2, max_len: int = 16) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        hd = dim // heads
        inv_freq = 1.0 / (10000 ** (torch.arange(0, hd, 2).float() / hd))
        freqs = torch.outer(torch.arange(max_len).float(), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos", emb.cos(), persistent=False)
        self.register_buffer("sin", emb.sin(), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        cos, sin = self.cos[:t], self.sin[:t]
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return out.transpose(1, 2).reshape(b, t, d)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(2, 12, 32)]


def get_init_inputs() -> list[int]:
    return [32, 2, 16]
