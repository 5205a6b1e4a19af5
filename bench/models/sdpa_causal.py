"""F.scaled_dot_product_attention with is_causal=True, and with an explicit boolean causal mask."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def forward(self, q: torch.Tensor, k: torch.Tensor,
                v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        t = q.shape[-2]
        mask = torch.ones(t, t, dtype=torch.bool, device=q.device).tril()
        return (F.scaled_dot_product_attention(q, k, v, is_causal=True),
                F.scaled_dot_product_attention(q, k, v, attn_mask=mask))


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(2, 2, 8, 16) for _ in range(3)]
