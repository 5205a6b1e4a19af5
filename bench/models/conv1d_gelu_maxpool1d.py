"""Conv1d with padding and dilation, exact GELU and MaxPool1d over a sequence."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, c_in: int = 4, c_out: int = 8) -> None:
        super().__init__()
        self.conv = nn.Conv1d(c_in, c_out, kernel_size=3, padding=2, dilation=2)
        self.act = nn.GELU()
        self.pool = nn.MaxPool1d(2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(self.act(self.conv(x)))


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(2, 4, 32)]


def get_init_inputs() -> list[int]:
    return [4, 8]
