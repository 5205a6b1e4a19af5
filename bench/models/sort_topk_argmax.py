"""sort (descending), topk with indices, argmax and argmin over logits: values and int64 indices."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(16, 20)

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        logits = self.fc(x)
        values, order = torch.sort(logits, dim=-1, descending=True)
        top_v, top_i = torch.topk(logits, k=3, dim=-1)
        return [values, order, top_v, top_i, logits.argmax(dim=-1), logits.argmin(dim=0)]


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(6, 16)]
