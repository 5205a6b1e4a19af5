"""nn.MultiheadAttention (batch_first) as self-attention with a key padding mask, with weights."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim: int = 16, heads: int = 2) -> None:
        super().__init__()
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)

    def forward(self, x: torch.Tensor, pad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        out, weights = self.attn(x, x, x, key_padding_mask=pad, need_weights=True)
        return out, weights


def get_inputs() -> list[torch.Tensor]:
    pad = torch.zeros(2, 7, dtype=torch.bool)
    pad[1, 5:] = True  # the second sequence is two tokens shorter
    return [torch.randn(2, 7, 16), pad]


def get_init_inputs() -> list[int]:
    return [16, 2]
