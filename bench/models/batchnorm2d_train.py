"""Conv2d and BatchNorm2d in training mode: batch statistics, and running stats updated in place."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 6, 3, padding=1)
        self.bn = nn.BatchNorm2d(6, momentum=0.1)
        self.train()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.bn(self.conv(x)))


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(4, 3, 8, 8)]
