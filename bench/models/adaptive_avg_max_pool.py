"""AdaptiveAvgPool2d and AdaptiveMaxPool2d to sizes that do not divide the input, concatenated."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.avg = nn.AdaptiveAvgPool2d((3, 5))
        self.max = nn.AdaptiveMaxPool2d((3, 5))
        self.avg1 = nn.AdaptiveAvgPool1d(4)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        pooled = torch.cat([self.avg(x), self.max(x)], dim=1)
        return pooled, self.avg1(x.flatten(2))


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(2, 4, 10, 7)]
