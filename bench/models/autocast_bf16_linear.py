"""A float32 model whose forward runs its Linear layers under torch.autocast to bfloat16."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(24, 48)
        self.fc2 = nn.Linear(48, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        with torch.autocast(device_type=x.device.type, dtype=torch.bfloat16):
            h = torch.relu(self.fc1(x))
            y = self.fc2(h)
        return y.float().log_softmax(dim=-1)


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(6, 24)]
