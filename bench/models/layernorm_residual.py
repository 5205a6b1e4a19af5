"""A post-norm residual: LayerNorm(x + Linear(x)), with and without elementwise affine."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim: int = 24) -> None:
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.norm = nn.LayerNorm(dim, eps=1e-5)
        self.norm_plain = nn.LayerNorm(dim, elementwise_affine=False)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y = self.norm(x + self.fc(x))
        return y, self.norm_plain(y * 3.0 + 1.0)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(4, 10, 24)]


def get_init_inputs() -> list[int]:
    return [24]
