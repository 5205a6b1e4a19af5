"""A decimal divisor: ``sign(remainder(a, -0.1))`` cast to int8. Where ``a`` is a multiple of 0.1
up to float32 rounding, eager's remainder is a tiny negative number (sign -1, as in float64),
while a compiled ``a - floor(a / b) * b`` can round to exactly 0 (sign 0). KernelBench convention.
The file's own outputs show the flip; the reason it is strong evidence (float64 sits clearly on
one side of the sign's boundary at 0) is in the graph, not in the outputs alone."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.sign(torch.remainder(a, b)).to(torch.int8)


def get_inputs() -> list[torch.Tensor]:
    a = torch.tensor([0.3, 0.7, 0.9, 1.1, 0.6, 2.3, 0.5])
    return [a, torch.full_like(a, -0.1)]
