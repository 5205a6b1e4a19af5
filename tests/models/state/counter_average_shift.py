"""A forward with state: a step counter and a running average it updates (buffers), and its
input shifted by one row and rectified in place. KernelBench convention."""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("steps", torch.zeros((), dtype=torch.int64))
        self.register_buffer("avg", torch.zeros(6))

    def forward(self, x):
        self.steps += 1
        self.avg.mul_(0.9).add_(x.mean(0) * 0.1)
        x[1:] = x[:-1].clone()
        x.relu_()
        return x.t() * 2.0, torch.relu(x)


def get_inputs():
    return [torch.randn(4, 6)]
