"""tril and triu with diagonal offsets, a banded mask made from both, applied to a score matrix."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, s: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        lower = torch.tril(s)
        upper = torch.triu(s, diagonal=2)
        ones = torch.ones(s.shape[-2], s.shape[-1], device=s.device)
        band = torch.triu(torch.tril(ones, diagonal=1), diagonal=-1)
        return lower, upper, (s * band).sum(-1)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(3, 9, 9)]
