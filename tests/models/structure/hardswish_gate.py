"""MobileNetV3's activations: nn.Hardswish and nn.Hardsigmoid, which reach Dynamo's graph as
F.hardswish and F.hardsigmoid (functions torch.overrides files as "ignored")."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.act = nn.Hardswish()
        self.gate = nn.Hardsigmoid()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(x) * self.gate(x)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(2, 8) * 4.0]
