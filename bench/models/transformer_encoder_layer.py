"""nn.TransformerEncoderLayer (norm_first, GELU, batch_first) with dropout 0, as users build it."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(
            d_model=16, nhead=2, dim_feedforward=32, dropout=0.0, activation="gelu",
            batch_first=True, norm_first=True,
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layer(x)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(2, 6, 16)]
