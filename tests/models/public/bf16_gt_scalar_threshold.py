"""bfloat16 scores compared with a Python float threshold: eager rounds 0.2 to bf16 first

Upstream: https://github.com/pytorch/pytorch/issues/128306
Upstream decision: not a bug on the compiled side (closed; the reporter, an Intel maintainer, noted bf16 eager is the incorrect one: 0.2002 > 0.2 is true)
Maintainers' rule says: benign
Class: scalar-rounding
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        # the upstream repro fed this mask to nonzero(); the mask itself is the divergent value
        return x > 0.2


def get_inputs():
    return [torch.tensor([[0.1, 0.2002, 0.3, 0.4, 0.2, 0.19, 0.21, 0.2002]]).to(torch.bfloat16)]


def get_init_inputs():
    return []
