"""A bf16 conv stack with an explicit (erf) GELU feeding an E8M0 exponent head, as MX quantizers
compute it. KernelBench convention: Model, get_inputs, get_init_inputs."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, channels: int = 8) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, channels, 3, padding=1)
        self.norm = nn.GroupNorm(2, channels)
        self.conv2 = nn.Conv2d(channels, channels, 1)
        self.to(torch.bfloat16)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y = self.norm(self.conv1(x))
        y = 0.5 * y * (1.0 + torch.erf(y * 0.7071067811865476))  # GELU, written out
        y = self.conv2(y) + y
        exponent = torch.clamp(torch.ceil(torch.log2(y.abs() + 1e-30)), -127, 127)
        return (exponent + 127).to(torch.uint8), y


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(2, 3, 8, 8).to(torch.bfloat16) * 4]


def get_init_inputs() -> list[int]:
    return [8]
