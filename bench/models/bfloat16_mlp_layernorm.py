"""A bfloat16 model: weights and inputs in bf16 through Linear, LayerNorm, GELU and a softmax."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(32, 64)
        self.norm = nn.LayerNorm(64)
        self.fc2 = nn.Linear(64, 16)
        self.to(torch.bfloat16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.nn.functional.gelu(self.norm(self.fc1(x)))
        return torch.softmax(self.fc2(h), dim=-1)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(8, 32).to(torch.bfloat16)]
