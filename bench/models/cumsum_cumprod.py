"""cumsum and cumprod along different dims, and a reversed cumsum via flip (a discounted sum)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        growth = 1.0 + 0.1 * torch.tanh(x)
        rev = torch.flip(torch.cumsum(torch.flip(x, dims=[1]), dim=1), dims=[1])
        return torch.cumsum(x, dim=-1), torch.cumprod(growth, dim=1), rev


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(4, 32)]
