"""roll (a shifted-window step), repeat, repeat_interleave, expand and flip over a feature map."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        shifted = torch.roll(x, shifts=(2, -1), dims=(2, 3))
        tiled = x[:, :1].repeat(1, 3, 1, 1)
        interleaved = torch.repeat_interleave(x, 2, dim=1)
        mirrored = torch.flip(x, dims=[-1, -2])
        expanded = x.mean(dim=(2, 3), keepdim=True).expand(-1, -1, 6, 6) * shifted
        return [shifted, tiled, interleaved, mirrored, expanded]


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(2, 3, 6, 6)]
