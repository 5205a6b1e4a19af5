"""An explicit float16 round trip feeding an integer head: a divergence a backend drops the round
trip for is expected by default when ``emulate_precision_casts`` restores it."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x.to(torch.float16).to(torch.float32)
        return (y * 10.0).clamp(0.0, 200.0).to(torch.uint8)


def get_inputs() -> list[torch.Tensor]:
    return [torch.tensor([0.55, 1.25, 3.35, 7.45, 9.65, 12.05, 2.15, 4.75])]
