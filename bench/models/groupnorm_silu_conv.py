"""A diffusion U-Net ResBlock piece: GroupNorm(4 groups), SiLU, Conv2d, plus the skip."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels: int = 8) -> None:
        super().__init__()
        self.norm = nn.GroupNorm(4, channels)
        self.act = nn.SiLU()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.conv(self.act(self.norm(x)))


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(2, 8, 8, 8)]


def get_init_inputs() -> list[int]:
    return [8]
