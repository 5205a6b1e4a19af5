"""A forward that updates its own buffer after using it (``scale`` doubles on every call): each
run must start from the state the model was built with, or eager's two runs, compiled's and the
float64 reference would each see another scale."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("scale", torch.ones(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x * self.scale
        self.scale.mul_(2.0)
        return y


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(2, 4)]
