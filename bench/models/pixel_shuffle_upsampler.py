"""An ESPCN-style upsampler: Conv2d to r*r*C channels, PixelShuffle, then PixelUnshuffle back."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels: int = 3, r: int = 2) -> None:
        super().__init__()
        self.conv = nn.Conv2d(channels, channels * r * r, 3, padding=1)
        self.shuffle = nn.PixelShuffle(r)
        self.unshuffle = nn.PixelUnshuffle(r)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        up = self.shuffle(self.conv(x))
        return up, self.unshuffle(torch.tanh(up))


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(2, 3, 6, 6)]


def get_init_inputs() -> list[int]:
    return [3, 2]
