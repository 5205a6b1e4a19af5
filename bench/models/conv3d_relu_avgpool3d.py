"""Conv3d with stride, ReLU and AvgPool3d over a small video-like volume."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv3d(2, 4, kernel_size=3, stride=(1, 2, 2), padding=1)
        self.pool = nn.AvgPool3d(2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(torch.relu(self.conv(x)))


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(1, 2, 4, 8, 8)]
