"""Not an example: a model whose forward raises in plain eager (a shape mismatch), so there is
nothing to compile or capture. numfuzz must say the model itself raised, and where, in one line
(tests/test_cli_promises.py). Files here are kept out of the example models' tests."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(x)
        return y @ torch.ones(3, 5)  # x is (4, 8): the inner sizes do not match


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(4, 8)]
