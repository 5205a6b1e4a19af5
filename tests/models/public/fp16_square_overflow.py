"""Cast to float16 then square: eager overflows to inf, compiled keeps the product in fp32 and stays finite

Upstream: https://github.com/pytorch/pytorch/issues/183607
Upstream decision: open (the repro bot on CUDA found emulate_precision_casts did not remove it)
Maintainers' rule says: expected-by-default
Class: fp16-overflow
"""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        y = x.to(torch.float16)
        return (y * y).to(torch.float32)


def get_inputs():
    # fp16 max is 65504: 256*256 and above overflow, 255*255 = 65025 does not
    return [torch.tensor([5000.0, 256.0, 255.0, 300.0, -4000.0, 100.0, 1.5, 0.0], dtype=torch.float32)]


def get_init_inputs():
    return []
