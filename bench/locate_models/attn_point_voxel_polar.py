"""A point-cloud transformer for bird's-eye-view LiDAR points: each point is snapped to its
voxel (ceil of xy over the voxel size, plus the grid origin index, 0 here), the voxel's polar
coordinates (azimuth atan2(y, x) and range) are embedded as its position, added to the point
features, then two pre-norm self-attention blocks and a max-pooled scene descriptor."""
import torch
import torch.nn as nn


class VoxelPolarEncoding(nn.Module):
    def __init__(self, dim, voxel=0.5, origin=0):
        super().__init__()
        self.voxel = voxel
        self.origin = origin
        self.proj = nn.Linear(4, dim)

    def forward(self, xy):
        cell = torch.ceil(xy / self.voxel)
        cell = cell + self.origin
        azimuth = torch.atan2(cell[..., 1], cell[..., 0])
        radius = torch.linalg.vector_norm(cell, dim=-1)
        feats = torch.stack([torch.cos(azimuth), torch.sin(azimuth), azimuth, radius], dim=-1)
        return self.proj(feats)


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.ReLU(), nn.Linear(2 * dim, dim))

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).reshape(b, n, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        attn = torch.softmax(q @ k.transpose(-2, -1) * (d // self.heads) ** -0.5, dim=-1)
        x = x + self.proj((attn @ v).transpose(1, 2).reshape(b, n, d))
        return x + self.mlp(self.norm2(x))


class Model(nn.Module):
    def __init__(self, features=4, dim=32, heads=4):
        super().__init__()
        self.embed = nn.Linear(features, dim)
        self.position = VoxelPolarEncoding(dim)
        self.blocks = nn.ModuleList([Block(dim, heads) for _ in range(2)])
        self.norm = nn.LayerNorm(dim)

    def forward(self, xy, point_features):
        x = self.embed(point_features) + self.position(xy)
        for block in self.blocks:
            x = block(x)
        return self.norm(x).amax(dim=1)


def get_inputs():
    return [torch.randn(2, 32, 2) * 3.0, torch.randn(2, 32, 4)]
