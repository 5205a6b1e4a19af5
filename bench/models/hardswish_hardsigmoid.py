"""MobileNetV3's Hardswish and a squeeze-excitation gate with Hardsigmoid."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels: int = 8) -> None:
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1)
        self.act = nn.Hardswish()
        self.squeeze = nn.AdaptiveAvgPool2d(1)
        self.reduce = nn.Conv2d(channels, channels // 4, 1)
        self.expand = nn.Conv2d(channels // 4, channels, 1)
        self.gate = nn.Hardsigmoid()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.act(self.conv(x))
        s = self.gate(self.expand(torch.relu(self.reduce(self.squeeze(y)))))
        return y * s


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(2, 8, 8, 8) * 3.0]
