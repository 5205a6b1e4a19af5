"""The seeds' FMA class: ``exp(x*s - x*s)`` is exactly 1 in eager. A compiler that keeps one product
exact inside a fused multiply-add and rounds the other leaves the rounding error of ``x*s``, which
for |x*s| ~ 1e11 overflows ``exp`` (Triton contracts by default; Inductor's C++ backend compiles
with -ffp-contract=off). KernelBench convention: Model, get_inputs, get_init_inputs."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, scale: float = 3.7) -> None:
        super().__init__()
        self.register_buffer("s", torch.full((16,), scale))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y = torch.exp(x * self.s - x * self.s)
        return y, y > 1.5


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(8, 16) * 3e10]


def get_init_inputs() -> list[float]:
    return [3.7]
