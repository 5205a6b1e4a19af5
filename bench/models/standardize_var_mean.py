"""Per-row standardization with torch.var_mean and std (unbiased and not), and a z-score clip."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        var, mean = torch.var_mean(x, dim=-1, keepdim=True, correction=0)
        z = (x - mean) / torch.sqrt(var + 1e-6)
        std = x.std(dim=0, unbiased=True)
        return z.clamp(-3.0, 3.0), std, x.var(dim=-1)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(10, 16) * 2.0 + 5.0]
