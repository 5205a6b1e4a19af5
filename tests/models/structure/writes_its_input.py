"""A forward that writes its own input (``x.add_(1)``, ``x[0] = 0``) before using it: the file's
own run is judged on its outputs; its capture records the writes."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(6, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x.add_(1)
        x[0] = 0
        return self.fc(x)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(4, 6)]
