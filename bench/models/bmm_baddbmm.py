"""bmm, baddbmm with alpha/beta, addmm and matmul with broadcasting over a batch."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor,
                c: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        prod = torch.bmm(a, b)
        fused = torch.baddbmm(c, a, b, beta=0.5, alpha=2.0)
        flat = torch.addmm(c[0], a[0], b[0])
        broadcast = torch.matmul(a, b[0])
        return prod, fused, flat, broadcast


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(4, 6, 10), torch.randn(4, 10, 7), torch.randn(4, 6, 7)]
