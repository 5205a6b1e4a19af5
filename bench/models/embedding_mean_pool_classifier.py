"""Embedding with padding_idx, a masked mean over the sequence and a Linear classifier."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, vocab: int = 50, dim: int = 16, classes: int = 4) -> None:
        super().__init__()
        self.emb = nn.Embedding(vocab, dim, padding_idx=0)
        self.head = nn.Linear(dim, classes)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        mask = (tokens != 0).unsqueeze(-1).float()
        summed = (self.emb(tokens) * mask).sum(dim=1)
        mean = summed / mask.sum(dim=1).clamp(min=1.0)
        return self.head(mean)


def get_inputs() -> list[torch.Tensor]:
    tokens = torch.randint(1, 50, (4, 12))
    tokens[:, 9:] = 0  # padding at the end
    return [tokens]


def get_init_inputs() -> list[int]:
    return [50, 16, 4]
