"""AlexNet's LocalResponseNorm after a Conv2d and ReLU, then MaxPool2d."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 5, stride=2, padding=2)
        self.lrn = nn.LocalResponseNorm(size=5, alpha=1e-4, beta=0.75, k=2.0)
        self.pool = nn.MaxPool2d(3, stride=2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(self.lrn(torch.relu(self.conv(x))))


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(2, 3, 16, 16)]
