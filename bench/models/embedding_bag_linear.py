"""EmbeddingBag in mean mode with offsets (a bag of words) followed by a Linear layer."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, vocab: int = 40, dim: int = 12) -> None:
        super().__init__()
        self.bag = nn.EmbeddingBag(vocab, dim, mode="mean")
        self.fc = nn.Linear(dim, 3)

    def forward(self, tokens: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
        return self.fc(self.bag(tokens, offsets))


def get_inputs() -> list[torch.Tensor]:
    return [torch.randint(0, 40, (20,)), torch.tensor([0, 3, 7, 12, 15])]
