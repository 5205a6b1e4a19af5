"""A four-layer causal decoder (pre-norm, RMSNorm written by hand, grouped-query attention with
two key/value heads for four query heads); layer 1's feed-forward soft-caps its hidden units
with cap * erf(h / cap) (cap 30000, float16-safe), the other layers use SiLU."""
import torch
import torch.nn as nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class SoftCap(nn.Module):
    def __init__(self, cap=30000.0):
        super().__init__()
        self.cap = cap

    def forward(self, h):
        return self.cap * torch.erf(h / self.cap)


class GQAttention(nn.Module):
    def __init__(self, dim, heads=4, kv_heads=2):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, dim // heads
        self.q = nn.Linear(dim, dim, bias=False)
        self.kv = nn.Linear(dim, 2 * kv_heads * self.head_dim, bias=False)
        self.o = nn.Linear(dim, dim, bias=False)

    def forward(self, x):
        b, t, d = x.shape
        q = self.q(x).view(b, t, self.heads, self.head_dim).transpose(1, 2)
        k, v = self.kv(x).view(b, t, 2, self.kv_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        repeat = self.heads // self.kv_heads
        k, v = k.repeat_interleave(repeat, dim=1), v.repeat_interleave(repeat, dim=1)
        causal = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
        scores = (q @ k.transpose(-2, -1)) * self.head_dim ** -0.5
        scores = scores.masked_fill(~causal, float("-inf"))
        out = torch.softmax(scores, dim=-1) @ v
        return self.o(out.transpose(1, 2).reshape(b, t, d))


class FeedForward(nn.Module):
    def __init__(self, dim, hidden, softcap):
        super().__init__()
        self.up = nn.Linear(dim, hidden)
        self.act = SoftCap() if softcap else nn.SiLU()
        self.down = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.down(self.act(self.up(x)))


class Layer(nn.Module):
    def __init__(self, dim, softcap):
        super().__init__()
        self.norm1 = RMSNorm(dim)
        self.attn = GQAttention(dim)
        self.norm2 = RMSNorm(dim)
        self.ffn = FeedForward(dim, 2 * dim, softcap)

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.ffn(self.norm2(x))


class Model(nn.Module):
    def __init__(self, vocab=64, dim=32, depth=4):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList([Layer(dim, i == 1) for i in range(depth)])
        self.norm = RMSNorm(dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)

    def forward(self, tokens):
        x = self.embed(tokens)
        for layer in self.layers:
            x = layer(x)
        return self.lm_head(self.norm(x))


def get_inputs():
    return [torch.randint(0, 64, (2, 16))]
