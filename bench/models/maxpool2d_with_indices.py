"""MaxPool2d with return_indices=True: the pooled values and their int64 argmax indices."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.pool = nn.MaxPool2d(kernel_size=2, stride=2, return_indices=True)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        values, indices = self.pool(x)
        return values, indices


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(2, 3, 8, 8)]
