"""A deep pre-norm MLP stack (four blocks: LayerNorm, Linear, SiLU, Linear, residual) fed raw,
unscaled readings of a 16-channel instrument whose channels span the whole float32 range (most
near 100, a few saturating near 1e38): the first LayerNorm is what brings them to unit scale."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, 2 * dim)
        self.fc2 = nn.Linear(2 * dim, dim)

    def forward(self, x):
        return x + self.fc2(F.silu(self.fc1(self.norm(x))))


class InputNorm(nn.Module):
    def __init__(self, channels, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(channels))
        self.bias = nn.Parameter(torch.zeros(channels))

    def forward(self, x):
        return torch.layer_norm(x, (x.shape[-1],), self.weight, self.bias, self.eps)


class Model(nn.Module):
    def __init__(self, channels=16, dim=32, depth=4, outputs=4):
        super().__init__()
        self.input_norm = InputNorm(channels)
        self.embed = nn.Linear(channels, dim)
        self.blocks = nn.ModuleList([Block(dim) for _ in range(depth)])
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, outputs)

    def forward(self, x):
        x = self.embed(self.input_norm(x))
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


def get_inputs():
    reading = torch.tensor([-91.5, -7.08e37, -91.5, 87.5, 91.5, 129.0, -1.655e38, -17.25,
                            71.0, 86.5, -127.0, -3.3895e38, 86.5, 7.477e37, 1.787e19, 1.787e19])
    return [reading.repeat(4, 1) + torch.randn(4, 16) * 10]
