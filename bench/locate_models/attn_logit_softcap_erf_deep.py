"""A four-layer pre-norm transformer encoder whose third layer soft-caps its attention logits
before the softmax (cap * erf(logits / cap), a smooth variant of tanh logit soft-capping with a
float16-safe cap of 30000); the other layers use plain scaled dot-product attention."""
import torch
import torch.nn as nn


class Attention(nn.Module):
    def __init__(self, dim, heads, softcap=None):
        super().__init__()
        self.heads = heads
        self.softcap = softcap
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).reshape(b, t, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        logits = (q @ k.transpose(-2, -1)) * (d // self.heads) ** -0.5
        if self.softcap is not None:
            logits = self.softcap * torch.erf(logits / self.softcap)
        attn = torch.softmax(logits, dim=-1)
        return self.proj((attn @ v).transpose(1, 2).reshape(b, t, d))


class Layer(nn.Module):
    def __init__(self, dim, heads, softcap=None):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = Attention(dim, heads, softcap)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.ReLU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class Model(nn.Module):
    def __init__(self, dim=32, heads=4, depth=4):
        super().__init__()
        self.layers = nn.ModuleList(
            [Layer(dim, heads, 30000.0 if i == 2 else None) for i in range(depth)])
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return self.norm(x)


def get_inputs():
    return [torch.randn(2, 16, 32) * 2]
