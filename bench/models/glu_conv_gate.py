"""nn.GLU over channels after a Conv1d (a gated convolution, as in ConvS2S)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels: int = 8) -> None:
        super().__init__()
        self.conv = nn.Conv1d(channels, 2 * channels, 3, padding=1)
        self.glu = nn.GLU(dim=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.glu(self.conv(x))


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(2, 8, 24)]


def get_init_inputs() -> list[int]:
    return [8]
