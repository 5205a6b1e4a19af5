"""Vector norms (L2, L1, inf, Frobenius), F.normalize, and logsumexp of large logits."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        return [
            torch.linalg.vector_norm(x, ord=2, dim=-1),
            x.norm(p=1, dim=0),
            torch.linalg.vector_norm(x, ord=float("inf")),
            torch.norm(x),
            F.normalize(x, dim=-1),
            torch.logsumexp(x * 30.0, dim=-1),
        ]


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(8, 24)]
