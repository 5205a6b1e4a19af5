"""F.interpolate in nearest, nearest-exact, bilinear (both align_corners), bicubic, area modes."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        return [
            F.interpolate(x, size=(11, 13), mode="nearest"),
            F.interpolate(x, scale_factor=1.5, mode="nearest-exact"),
            F.interpolate(x, size=(11, 13), mode="bilinear", align_corners=False),
            F.interpolate(x, size=(11, 13), mode="bilinear", align_corners=True),
            F.interpolate(x, scale_factor=2, mode="bicubic", align_corners=False),
            F.interpolate(x, size=(3, 4), mode="area"),
        ]


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(1, 2, 7, 8)]
