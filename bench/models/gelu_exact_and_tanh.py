"""Both GELUs (erf and tanh approximation) on one input, and their difference."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        exact = F.gelu(x)
        approx = F.gelu(x, approximate="tanh")
        return exact, approx, exact - approx


def get_inputs() -> list[torch.Tensor]:
    return [torch.linspace(-8.0, 8.0, 1024).reshape(4, 256)]
