"""bfloat16 fmod/remainder with a Python float divisor: eager rounds 1.7 to bf16, Inductor kept it in fp32

Upstream: https://github.com/pytorch/pytorch/issues/186875
Upstream decision: bug (fixed by PR #186942: scalars rounded to the tensor dtype for bf16/fp16 fmod and remainder on CPU)
Maintainers' rule says: benign
Class: scalar-rounding
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.fmod(x, 1.7), torch.remainder(x, 1.7)


def get_inputs():
    # 1.703125 is bf16(1.7)
    return [torch.tensor([1.703125, -1.703125, 3.40625, -3.40625, 0.5, 5.0, -1.0, 1.6953125], dtype=torch.bfloat16)]


def get_init_inputs():
    return []
