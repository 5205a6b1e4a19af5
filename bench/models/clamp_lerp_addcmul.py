"""clamp with tensor bounds, lerp (an EMA step), addcmul and addcdiv (an Adam-style update)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, p: torch.Tensor, g: torch.Tensor, m: torch.Tensor,
                v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        m2 = torch.lerp(m, g, 0.1)
        v2 = torch.addcmul(v * 0.999, g, g, value=0.001)
        step = torch.addcdiv(p, m2, v2.sqrt() + 1e-8, value=-1e-3)
        lo, hi = -torch.ones_like(p), torch.ones_like(p) * 0.5
        return torch.clamp(step, min=lo, max=hi), m2, v2


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(64), torch.randn(64), torch.randn(64) * 0.1, torch.rand(64) * 0.01]
