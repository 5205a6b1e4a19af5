"""A GRUCell unrolled over five steps, returning every hidden state stacked."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, d_in: int = 6, hidden: int = 10) -> None:
        super().__init__()
        self.cell = nn.GRUCell(d_in, hidden)

    def forward(self, x: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        states = []
        for t in range(x.shape[0]):
            h = self.cell(x[t], h)
            states.append(h)
        return torch.stack(states)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(5, 4, 6), torch.randn(4, 10)]
