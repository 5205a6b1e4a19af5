"""nn.Upsample (nearest and bilinear) each followed by a Conv2d, as in a U-Net decoder."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.up_nearest = nn.Upsample(scale_factor=2, mode="nearest")
        self.up_bilinear = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
        self.conv = nn.Conv2d(8, 4, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a = self.up_nearest(x)
        b = self.up_bilinear(x)
        return self.conv(torch.cat([a, b], dim=1))


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(2, 4, 6, 6)]
