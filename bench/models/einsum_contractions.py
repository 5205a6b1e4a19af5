"""einsum in several forms: batched attention scores, a bilinear form, an outer product, a trace."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.w = nn.Parameter(torch.randn(8, 8) * 0.3)

    def forward(self, q: torch.Tensor, k: torch.Tensor) -> list[torch.Tensor]:
        scores = torch.einsum("bhid,bhjd->bhij", q, k)
        bilinear = torch.einsum("bhid,de,bhje->bhij", q, self.w, k)
        outer = torch.einsum("i,j->ij", q[0, 0, 0], k[0, 0, 0])
        trace = torch.einsum("bhii->bh", scores)
        return [scores, bilinear, outer, trace]


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(2, 2, 5, 8), torch.randn(2, 2, 5, 8)]
