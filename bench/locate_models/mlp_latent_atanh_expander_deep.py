"""The receiving half of a split-computing MLP: the latent arrives companded (the sender applied
cap * tanh(z / cap), cap 30000, to keep it inside float16), the receiver expands it back with
cap * atanh(z / cap) and decodes it with four residual Linear-LayerNorm-GELU(tanh) blocks."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Expander(nn.Module):
    def __init__(self, cap=30000.0):
        super().__init__()
        self.cap = cap

    def forward(self, z):
        return self.cap * torch.atanh(z / self.cap)


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        return x + F.gelu(self.norm(self.fc(x)), approximate="tanh")


class Model(nn.Module):
    def __init__(self, dim=32, depth=4, outputs=10):
        super().__init__()
        self.expand = Expander()
        self.blocks = nn.ModuleList([Block(dim) for _ in range(depth)])
        self.head = nn.Linear(dim, outputs)

    def forward(self, latent):
        x = self.expand(latent)
        for block in self.blocks:
            x = block(x)
        return self.head(x)


def get_inputs():
    return [torch.randn(32, 32) * 4]
