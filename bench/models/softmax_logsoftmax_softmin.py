"""Softmax, LogSoftmax and Softmin over different dims of one tensor of logits."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.softmax = nn.Softmax(dim=-1)
        self.log_softmax = nn.LogSoftmax(dim=1)
        self.softmin = nn.Softmin(dim=0)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        return self.softmax(x), self.log_softmax(x), self.softmin(x)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(4, 6, 20) * 5.0]
