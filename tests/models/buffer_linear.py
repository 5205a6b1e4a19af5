"""A Linear with a registered buffer, a cumulative sum (an op outside numfuzz's grammars) and a
sign head: exercises buffers, generic ops and multiple outputs."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, features: int = 12) -> None:
        super().__init__()
        self.linear = nn.Linear(features, features)
        self.register_buffer("scale", torch.linspace(0.5, 2.0, features))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y = self.linear(x) * self.scale
        y = torch.cumsum(y, dim=-1) / 3.0
        return torch.sign(y - y.mean(dim=-1, keepdim=True)).to(torch.int8), torch.tanh(y)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(4, 12)]
