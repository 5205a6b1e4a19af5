"""torch.sign, comparisons to bool (gt, le, eq, isclose), and logical ops combining them."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(10, 10)

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        y = self.fc(x)
        pos = y > 0.1
        small = y.abs() <= 0.5
        return [
            torch.sign(y),
            pos,
            torch.logical_and(pos, small),
            torch.logical_xor(y >= y.mean(), x < 0),
            torch.isclose(y, x, atol=0.3),
            (y.round() == x.round()).sum(),
        ]


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(12, 10)]
