"""AvgPool2d with ceil_mode and padding, count_include_pad on and off, and divisor_override."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.with_pad = nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True, count_include_pad=True)
        self.without_pad = nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True,
                                        count_include_pad=False)
        self.divisor = nn.AvgPool2d(2, divisor_override=3)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        return self.with_pad(x), self.without_pad(x), self.divisor(x)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(2, 3, 9, 9)]
