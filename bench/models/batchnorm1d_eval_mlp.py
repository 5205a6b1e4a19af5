"""Linear, BatchNorm1d in eval mode with non-trivial running stats, ReLU: a tabular MLP."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(20, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Linear(32, 5),
        )
        bn = self.net[1]
        with torch.no_grad():
            bn.running_mean.normal_(0.0, 0.3)
            bn.running_var.uniform_(0.2, 3.0)
        self.eval()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(16, 20)]
