"""Float floor division by decimals, as int32 codes summed: compiled ``a // b`` is ``floor(a /
b)``, one too high where the quotient rounds up to an integer (1.0 // 0.1 gives 10, eager and
float64 9; upstream #197895, open). The sum turns five one-step flips into one code five steps
off, on 2.11, 2.13 and 2.15 alike. KernelBench convention."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return (a // b).to(torch.int32).sum()


def get_inputs() -> list[torch.Tensor]:
    a = torch.tensor([1.0, 0.5, 6.0, 1.0, 7.0, 3.0, -1.0, 2.5])
    b = torch.tensor([0.1, 0.1, 0.2, 1.0 / 3.0, 0.7, 0.3, 0.1, 0.5])
    return [a, b]
