"""One residual MLP submodule applied twice in a row (ALBERT-style weight sharing across depth)."""

import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, 2 * dim)
        self.fc2 = nn.Linear(2 * dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.fc2(torch.relu(self.fc1(self.norm(x))))


class Model(nn.Module):
    def __init__(self, dim: int = 16) -> None:
        super().__init__()
        self.block = Block(dim)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        once = self.block(x)
        return once, self.block(once)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(4, 5, 16)]


def get_init_inputs() -> list[int]:
    return [16]
