"""The exponential-linear family: ELU (alpha 1.5), SELU and CELU (alpha 0.5) on one input."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(12, 24)
        self.elu = nn.ELU(alpha=1.5)
        self.selu = nn.SELU()
        self.celu = nn.CELU(alpha=0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.fc(x)
        return self.elu(y) + self.selu(y) * self.celu(y)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(6, 12) * 3.0]
