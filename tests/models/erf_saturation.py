"""float32: a conv whose output is pushed through a steep erf (saturating) and tanh into a second
erf and an E8M0 head: erf(tanh(1)) = 0.7175, far from the powers of two where E8M0 flips, so an
erf a quarter of the truth (tests.fakes:erf_quarter) is a strong flip, and one ulp too high
(tests.fakes:erf_ulp) flips nothing."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(4, 8, 3, padding=1)
        self.gate = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = torch.relu(self.conv(x))
        side = torch.sigmoid(self.gate(h))
        h = torch.tanh(torch.erf(h * 40.0)) + side * 0.0
        e = torch.erf(h * 1.0)
        head = (torch.clamp(torch.ceil(torch.log2(e.abs() + 1e-30)), -127, 127) + 127)
        return head.to(torch.uint8), side > 0.5


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(2, 4, 8, 8)]
