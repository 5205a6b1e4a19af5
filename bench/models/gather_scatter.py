"""torch.gather of chosen classes, scatter into one-hot rows, scatter_add and index_add pooling."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x: torch.Tensor, idx: torch.Tensor,
                seg: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        picked = torch.gather(x, 1, idx)
        placed = torch.zeros_like(x).scatter(1, idx, picked * 2.0)
        pooled = torch.zeros(4, x.shape[1], dtype=x.dtype).scatter_add(
            0, seg.unsqueeze(1).expand(-1, x.shape[1]), x)
        indexed = torch.zeros(4, x.shape[1], dtype=x.dtype).index_add(0, seg, x, alpha=0.5)
        return picked, placed, pooled, indexed


def get_inputs() -> list[torch.Tensor]:
    x = torch.randn(10, 8)
    idx = torch.stack([torch.randperm(8)[:3] for _ in range(10)])  # distinct per row
    seg = torch.randint(0, 4, (10,))
    return [x, idx, seg]
