"""masked_fill with -inf before a softmax, torch.where choosing branches, and nan_to_num."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x: torch.Tensor,
                keep: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        scores = x.masked_fill(~keep, float("-inf")).softmax(dim=-1)
        branch = torch.where(x > 0, torch.sqrt(x.clamp(min=0)), torch.exp(x) - 1)
        safe = torch.nan_to_num(torch.log(x), nan=0.0, neginf=-10.0)
        return scores, branch, safe


def get_inputs() -> list[torch.Tensor]:
    keep = torch.rand(5, 12) > 0.3
    keep[:, 0] = True  # no row is fully masked
    return [torch.randn(5, 12), keep]
