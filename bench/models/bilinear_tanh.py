"""nn.Bilinear combining two feature vectors, then tanh."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.bil = nn.Bilinear(8, 6, 4)

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.bil(a, b))


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(10, 8), torch.randn(10, 6)]
