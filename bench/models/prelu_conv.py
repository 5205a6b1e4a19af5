"""A Conv2d followed by a per-channel PReLU with a learned slope, and a single-slope PReLU."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 6, 3, padding=1)
        self.prelu = nn.PReLU(6, init=0.2)
        self.prelu_shared = nn.PReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.prelu_shared(self.prelu(self.conv(x)) - 0.1)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(2, 3, 8, 8)]
