"""A float16 model: Conv2d, BatchNorm (eval) and sigmoid, weights and input in half precision."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)
        self.half()
        self.eval()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.bn(self.conv(x)) * 2.0)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(2, 3, 8, 8).half()]
