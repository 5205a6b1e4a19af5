"""A model whose structure a deep copy does not convert: __init__ stores a lambda closing over its
own submodules (minGPT's ``self.mlpf``), the output layer shares the input layer's weight, and one
block is used twice. Its float64 reference must run all of it in float64."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.inp = nn.Linear(dim, dim, bias=False)
        self.out = nn.Linear(dim, dim, bias=False)
        self.out.weight = self.inp.weight  # tied
        self.block = nn.Linear(dim, dim)  # shared: applied twice
        self.mlp = nn.ModuleDict(dict(fc=nn.Linear(dim, 2 * dim), proj=nn.Linear(2 * dim, dim)))
        m = self.mlp
        self.mlpf = lambda x: m.proj(torch.tanh(m.fc(x)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.block(self.block(self.inp(x)))
        return self.out(h + self.mlpf(h))


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(3, 4)]
