"""LogSigmoid in a hand-written logistic loss, beside F.binary_cross_entropy_with_logits."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(10, 1)
        self.logsigmoid = nn.LogSigmoid()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        logits = self.fc(x).squeeze(-1) * 5.0
        manual = -(y * self.logsigmoid(logits) + (1 - y) * self.logsigmoid(-logits)).mean()
        return manual, F.binary_cross_entropy_with_logits(logits, y)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(32, 10), torch.randint(0, 2, (32,)).float()]
