"""A two-layer MLP: Linear, ReLU, Linear with bias, the most common model there is."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, d_in: int = 32, d_hidden: int = 64, d_out: int = 10) -> None:
        super().__init__()
        self.fc1 = nn.Linear(d_in, d_hidden)
        self.act = nn.ReLU()
        self.fc2 = nn.Linear(d_hidden, d_out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.act(self.fc1(x)))


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(8, 32)]


def get_init_inputs() -> list[int]:
    return [32, 64, 10]
