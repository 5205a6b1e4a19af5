"""A diffusion-UNet-style residual block with GroupNorm everywhere: the sampler's continuous time
(on a 0.1 grid) is mapped to a discrete timestep bucket by floor division by the bucket width,
embedded, projected and added between GroupNorm-SiLU-Conv stages; a final GroupNorm and 1x1 conv."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class TimestepBuckets(nn.Module):
    def __init__(self, dim, buckets=32, width=0.1):
        super().__init__()
        self.buckets = buckets
        self.register_buffer("width", torch.tensor(width))
        self.table = nn.Embedding(buckets, dim)
        self.proj = nn.Sequential(nn.SiLU(), nn.Linear(dim, dim))

    def forward(self, t):
        bucket = torch.div(t, self.width, rounding_mode="floor")
        bucket = bucket.clamp(0, self.buckets - 1).long()
        return self.proj(self.table(bucket))


class ResBlock(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.norm1 = nn.GroupNorm(4, channels)
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1)
        self.norm2 = nn.GroupNorm(4, channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x, emb):
        h = self.conv1(F.silu(self.norm1(x)))
        h = h + emb[:, :, None, None]
        h = self.conv2(F.silu(self.norm2(h)))
        return x + h


class Model(nn.Module):
    def __init__(self, channels=16):
        super().__init__()
        self.time = TimestepBuckets(channels)
        self.stem = nn.Conv2d(3, channels, 3, padding=1)
        self.block1 = ResBlock(channels)
        self.block2 = ResBlock(channels)
        self.norm = nn.GroupNorm(4, channels)
        self.out = nn.Conv2d(channels, 3, 1)

    def forward(self, x, t):
        emb = self.time(t)
        h = self.stem(x)
        h = self.block2(self.block1(h, emb), emb)
        return self.out(F.silu(self.norm(h)))


def get_inputs():
    return [torch.randn(4, 3, 8, 8), torch.randint(1, 30, (4,)) * 0.1]
