"""Softplus (beta 2, threshold 10), Softsign and Tanhshrink on a wide range of inputs."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.softplus = nn.Softplus(beta=2.0, threshold=10.0)
        self.softsign = nn.Softsign()
        self.tanhshrink = nn.Tanhshrink()

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        return self.softplus(x), self.softsign(x), self.tanhshrink(x)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(16, 64) * 6.0]
