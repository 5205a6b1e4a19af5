"""chunk, split with uneven sizes, unbind, stack and cat: tensors taken apart and put together."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        a, b, c = x.chunk(3, dim=-1)
        p, q = torch.split(x, [5, 7], dim=-1)
        rows = torch.unbind(x, dim=0)
        mixed = torch.cat([c * a, b - a, q[..., :2]], dim=-1)
        stacked = torch.stack([r.sum(-1) for r in rows], dim=0)
        return mixed, stacked, torch.stack([p.mean(-1), q.amax(-1)], dim=-1)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(4, 3, 12)]
