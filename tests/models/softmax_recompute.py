"""The seeds' recompute class: a softmax over ``x / s`` written out, as attention kernels do. When
``x / s`` is computed once for the row max and again for ``exp(x/s - max)`` in another kernel, the
two may round differently, so the max element no longer gives ``exp(0) = 1``; the comparison head
says whether each row still holds an exact 1. KernelBench convention."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, scale: float = 0.3) -> None:
        super().__init__()
        self.register_buffer("s", torch.tensor(scale))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y = x / self.s
        e = torch.exp(y - y.amax(dim=-1, keepdim=True))
        probs = e / e.sum(dim=-1, keepdim=True)
        return probs, e.amax(dim=-1) == 1.0


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(4, 8, 64) * 7.0]


def get_init_inputs() -> list[float]:
    return [0.3]
