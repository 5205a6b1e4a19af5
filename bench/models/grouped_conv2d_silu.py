"""A grouped Conv2d (4 groups, stride 2) followed by SiLU and a channel shuffle."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels: int = 16, groups: int = 4) -> None:
        super().__init__()
        self.groups = groups
        self.conv = nn.Conv2d(channels, channels, 3, stride=2, padding=1, groups=groups)
        self.act = nn.SiLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.act(self.conv(x))
        b, c, h, w = y.shape
        return y.view(b, self.groups, c // self.groups, h, w).transpose(1, 2).reshape(b, c, h, w)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(2, 16, 8, 8)]


def get_init_inputs() -> list[int]:
    return [16, 4]
