"""nn.RMSNorm beside the LLaMA hand-written RMSNorm (x * rsqrt(mean(x^2) + eps) * weight)."""

import torch
import torch.nn as nn


class ManualRMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class Model(nn.Module):
    def __init__(self, dim: int = 32) -> None:
        super().__init__()
        self.builtin = nn.RMSNorm(dim, eps=1e-6)
        self.manual = ManualRMSNorm(dim)
        with torch.no_grad():
            self.builtin.weight.uniform_(0.5, 1.5)
            self.manual.weight.copy_(self.builtin.weight)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.builtin(x), self.manual(x)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(3, 7, 32)]


def get_init_inputs() -> list[int]:
    return [32]
