"""nn.Flatten of a feature map into a Linear, and nn.Unflatten of the result back to a map."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.flatten = nn.Flatten()
        self.fc = nn.Linear(4 * 5 * 5, 2 * 6 * 6)
        self.unflatten = nn.Unflatten(1, (2, 6, 6))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.unflatten(torch.relu(self.fc(self.flatten(x))))


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(3, 4, 5, 5)]
