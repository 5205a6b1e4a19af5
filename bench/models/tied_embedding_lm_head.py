"""A tiny language model whose output head shares (ties) the token embedding's weight."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, vocab: int = 64, dim: int = 16, block: int = 10) -> None:
        super().__init__()
        self.wte = nn.Embedding(vocab, dim)
        self.wpe = nn.Embedding(block, dim)
        self.ln = nn.LayerNorm(dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)
        self.lm_head.weight = self.wte.weight  # weight tying

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(idx.shape[1], device=idx.device)
        h = self.ln(torch.tanh(self.wte(idx) + self.wpe(pos)))
        return torch.log_softmax(self.lm_head(h), dim=-1)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randint(0, 64, (2, 10))]


def get_init_inputs() -> list[int]:
    return [64, 16, 10]
