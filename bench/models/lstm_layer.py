"""A whole nn.LSTM layer (two layers, batch_first), the module users reach for before the cell."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lstm = nn.LSTM(input_size=6, hidden_size=8, num_layers=2, batch_first=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.lstm(x)
        return out


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(3, 5, 6)]
