"""A per-tensor int8 quantization head: (x / scale).round().clamp(-128, 127).to(torch.int8)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(32, 32)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y = torch.relu(self.fc(x))
        scale = y.abs().amax() / 127.0
        q = (y / scale).round().clamp(-128, 127).to(torch.int8)
        return q, q.float() * scale


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(8, 32)]
