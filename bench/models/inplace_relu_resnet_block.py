"""A ResNet basic block with nn.ReLU(inplace=True), eval BatchNorm and an in-place += skip."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels: int = 6) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)
        self.eval()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += x
        return self.relu(out)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(2, 6, 8, 8)]


def get_init_inputs() -> list[int]:
    return [6]
