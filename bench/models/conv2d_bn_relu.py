"""Conv2d, BatchNorm2d in eval mode (folded running stats) and ReLU: a ResNet stem."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, c_in: int = 3, c_out: int = 8) -> None:
        super().__init__()
        self.conv = nn.Conv2d(c_in, c_out, kernel_size=3, stride=1, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(c_out)
        self.relu = nn.ReLU()
        with torch.no_grad():  # non-trivial running statistics, as after training
            self.bn.running_mean.uniform_(-0.5, 0.5)
            self.bn.running_var.uniform_(0.5, 2.0)
            self.bn.weight.uniform_(0.5, 1.5)
            self.bn.bias.uniform_(-0.2, 0.2)
        self.eval()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.relu(self.bn(self.conv(x)))


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(2, 3, 12, 12)]


def get_init_inputs() -> list[int]:
    return [3, 8]
