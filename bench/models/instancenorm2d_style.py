"""InstanceNorm2d with affine parameters, as in style transfer networks, then LeakyReLU."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 6, 3, padding=1, padding_mode="reflect")
        self.norm = nn.InstanceNorm2d(6, affine=True)
        self.act = nn.LeakyReLU(0.2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.norm(self.conv(x)))


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(2, 3, 10, 10)]
