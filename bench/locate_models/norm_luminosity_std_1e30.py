"""A standardization-heavy regressor for astrophysical spectra given in raw physical units
(luminosity per band, erg/s, about 1e30 to 1e31): each spectrum is standardized by its own mean
and standard deviation (torch.std), then LayerNorm'd Linear blocks and an RMS-normalized head."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class Model(nn.Module):
    def __init__(self, bands=64, dim=32, outputs=3):
        super().__init__()
        self.fc1 = nn.Linear(bands, dim)
        self.norm1 = nn.LayerNorm(dim)
        self.fc2 = nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim)
        self.rms = RMSNorm(dim)
        self.head = nn.Linear(dim, outputs)

    def forward(self, flux):
        mean = flux.mean(dim=-1, keepdim=True)
        std = torch.std(flux, dim=-1, keepdim=True)
        x = (flux - mean) / std
        x = F.gelu(self.norm1(self.fc1(x)), approximate="tanh")
        x = x + F.gelu(self.norm2(self.fc2(x)), approximate="tanh")
        return self.head(self.rms(x))


def get_inputs():
    return [torch.rand(8, 64) * 3e30 + 1e30]
