"""A deep residual MLP (six pre-norm blocks) whose fifth block soft-caps its hidden activations
with cap * erf(h / cap) (a smooth clip keeping them inside float16 range, cap 30000); the other
blocks use SiLU. Then a final LayerNorm and a linear head."""
import torch
import torch.nn as nn


class ErfSoftCap(nn.Module):
    def __init__(self, cap=30000.0):
        super().__init__()
        self.cap = cap

    def forward(self, h):
        return self.cap * torch.erf(h / self.cap)


class Block(nn.Module):
    def __init__(self, dim, hidden, softcap):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, hidden)
        self.act = ErfSoftCap() if softcap else nn.SiLU()
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        return x + self.fc2(self.act(self.fc1(self.norm(x))))


class Model(nn.Module):
    def __init__(self, dim=32, hidden=64, depth=6, outputs=4):
        super().__init__()
        self.blocks = nn.ModuleList([Block(dim, hidden, i == 4) for i in range(depth)])
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, outputs)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


def get_inputs():
    return [torch.randn(32, 32)]
