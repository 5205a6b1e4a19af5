"""An LSTMCell unrolled over four time steps in Python, the last hidden state into a Linear."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, d_in: int = 8, hidden: int = 16) -> None:
        super().__init__()
        self.hidden = hidden
        self.cell = nn.LSTMCell(d_in, hidden)
        self.out = nn.Linear(hidden, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.new_zeros(x.shape[1], self.hidden)
        c = x.new_zeros(x.shape[1], self.hidden)
        for t in range(x.shape[0]):
            h, c = self.cell(x[t], (h, c))
        return self.out(h)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(4, 3, 8)]


def get_init_inputs() -> list[int]:
    return [8, 16]
