"""A weight kept as a plain attribute (neither parameter nor buffer): ``.double()`` does not
convert it, so no float64 reference of this model can run (float64 @ float32 raises). numfuzz
cannot judge it, and must say so rather than call it clean."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = torch.randn(4, 3)  # not registered

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x @ self.proj


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(2, 4)]
