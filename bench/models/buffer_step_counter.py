"""A registered int64 step counter buffer that forward increments in place and uses as a scale."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.register_buffer("steps", torch.zeros((), dtype=torch.int64))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        self.steps += 1
        warmup = torch.clamp(self.steps.float() / 10.0, max=1.0)
        return self.fc(x) * warmup, self.steps.clone()


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(4, 8)]
