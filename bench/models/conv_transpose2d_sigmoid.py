"""ConvTranspose2d with stride 2 and output_padding, then a sigmoid: a decoder upsampling step."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, c_in: int = 8, c_out: int = 3) -> None:
        super().__init__()
        self.up = nn.ConvTranspose2d(c_in, c_out, kernel_size=3, stride=2, padding=1,
                                     output_padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.up(x))


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(2, 8, 6, 6)]


def get_init_inputs() -> list[int]:
    return [8, 3]
