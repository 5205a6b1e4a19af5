"""A MobileNet depthwise-separable block: depthwise 3x3 conv, BatchNorm, ReLU6, pointwise 1x1."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels: int = 8, c_out: int = 16) -> None:
        super().__init__()
        self.depthwise = nn.Conv2d(channels, channels, 3, padding=1, groups=channels, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.pointwise = nn.Conv2d(channels, c_out, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.act = nn.ReLU6()
        self.eval()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.act(self.bn1(self.depthwise(x)))
        return self.act(self.bn2(self.pointwise(x)))


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(2, 8, 10, 10)]


def get_init_inputs() -> list[int]:
    return [8, 16]
