"""SiLU and Mish activations, and a SwiGLU feed-forward (silu(x W1) * x W3) W2 as in LLaMA."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, dim: int = 16, hidden: int = 32) -> None:
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.mish = nn.Mish()

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        swiglu = self.w2(F.silu(self.w1(x)) * self.w3(x))
        return swiglu, self.mish(x)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(2, 8, 16)]


def get_init_inputs() -> list[int]:
    return [16, 32]
