"""A forward that mutates its input in place (x.add_(1); x[0] = 0) before using it."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(10, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x.add_(1)
        x[0] = 0
        x.mul_(0.5)
        return self.fc(x)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(5, 10)]
