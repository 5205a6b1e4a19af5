"""The piecewise-linear activations side by side: ReLU, ReLU6, LeakyReLU, Hardtanh and Threshold."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(16, 16)
        self.acts = nn.ModuleList([
            nn.ReLU(), nn.ReLU6(), nn.LeakyReLU(0.1), nn.Hardtanh(-0.5, 0.5),
            nn.Threshold(0.2, -1.0),
        ])

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        y = self.fc(x) * 4.0
        return [act(y) for act in self.acts]


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(8, 16)]
