"""An event-sequence transformer: each event's timestamp (seconds, logged at 0.1 s resolution)
is bucketed by a fixed bucket width and embedded, added to the event features, then four
pre-norm encoder layers and a mean-pooled classifier."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class TimeBucketEmbedding(nn.Module):
    def __init__(self, dim, buckets=64, width=0.1):
        super().__init__()
        self.buckets = buckets
        self.register_buffer("width", torch.tensor(width))
        self.table = nn.Embedding(buckets, dim)

    def forward(self, t):
        index = torch.div(t, self.width, rounding_mode="floor")
        index = index.clamp(0, self.buckets - 1).long()
        return self.table(index)


class EncoderLayer(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim)
        self.ff = nn.Sequential(nn.Linear(dim, 2 * dim), nn.ReLU(), nn.Linear(2 * dim, dim))

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).chunk(3, dim=-1)
        q, k, v = (z.view(b, t, self.heads, -1).transpose(1, 2) for z in (q, k, v))
        attn = F.scaled_dot_product_attention(q, k, v)
        x = x + self.out(attn.transpose(1, 2).reshape(b, t, d))
        return x + self.ff(self.norm2(x))


class Model(nn.Module):
    def __init__(self, features=8, dim=32, heads=4, depth=4, classes=5):
        super().__init__()
        self.embed = nn.Linear(features, dim)
        self.time_embed = TimeBucketEmbedding(dim)
        self.layers = nn.ModuleList([EncoderLayer(dim, heads) for _ in range(depth)])
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, events, timestamps):
        x = self.embed(events) + self.time_embed(timestamps)
        for layer in self.layers:
            x = layer(x)
        return self.head(self.norm(x).mean(dim=1))


def get_inputs():
    timestamps = torch.sort(torch.randint(0, 60, (2, 16)), dim=-1).values * 0.1
    return [torch.randn(2, 16, 8), timestamps]
