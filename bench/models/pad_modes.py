"""F.pad in constant (value 0.5), reflect, replicate and circular modes on a 4-d map."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        pads = (1, 2, 2, 1)
        return [
            F.pad(x, pads, mode="constant", value=0.5),
            F.pad(x, pads, mode="reflect"),
            F.pad(x, pads, mode="replicate"),
            F.pad(x, pads, mode="circular"),
        ]


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(2, 3, 6, 5)]
