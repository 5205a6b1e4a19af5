"""A recommendation MLP over a session of item ids with the hashing trick: each (slot, item)
pair is hashed to one of 4093 buckets, (slot * prime + item) mod 4093, embedded and mean-pooled,
then a Linear-ReLU-LayerNorm tower scores the session. It also returns the bucket ids, which the
sparse optimizer uses to update only the rows that were read."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, buckets=4093, dim=16, hidden=32, prime=805459861):
        super().__init__()
        self.buckets = buckets
        self.prime = prime
        self.table = nn.Embedding(buckets, dim)
        self.fc1 = nn.Linear(dim, hidden)
        self.norm = nn.LayerNorm(hidden)
        self.fc2 = nn.Linear(hidden, 1)

    def forward(self, items):
        slots = torch.arange(items.shape[-1], device=items.device)
        hashed = slots * self.prime + items
        bucket = torch.remainder(hashed, self.buckets)
        pooled = self.table(bucket).mean(dim=1)
        score = self.fc2(self.norm(F.relu(self.fc1(pooled))))
        return score, bucket


def get_inputs():
    return [torch.randint(0, 100000, (8, 16))]
