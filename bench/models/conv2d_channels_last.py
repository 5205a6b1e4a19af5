"""Conv2d on a channels_last input with a channels_last model, then a Hardtanh and a mean."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(4, 8, 3, padding=1)
        self.to(memory_format=torch.channels_last)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y = nn.functional.hardtanh(self.conv(x))
        return y, y.mean(dim=(2, 3))


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(2, 4, 8, 8).to(memory_format=torch.channels_last)]
