"""A tabular MLP over order-book rows: each price is converted to a tick index (price // tick
size, 0.1), embedded, and concatenated with the numeric features; then Linear-LayerNorm-SiLU
blocks and a regression head."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, features=12, levels=64, dim=32, tick=0.1):
        super().__init__()
        self.levels = levels
        self.register_buffer("tick", torch.tensor(tick))
        self.level_embed = nn.Embedding(levels, 8)
        self.fc1 = nn.Linear(features + 8, dim)
        self.norm1 = nn.LayerNorm(dim)
        self.fc2 = nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, 1)

    def forward(self, features, price):
        ticks = torch.floor_divide(price, self.tick)
        level = ticks.clamp(0, self.levels - 1).long()
        x = torch.cat([features, self.level_embed(level)], dim=-1)
        x = F.silu(self.norm1(self.fc1(x)))
        x = x + F.silu(self.norm2(self.fc2(x)))
        return self.head(x)


def get_inputs():
    price = torch.randint(0, 60, (64,)) * 0.1
    return [torch.randn(64, 12), price]
