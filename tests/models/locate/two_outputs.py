"""Two outputs computed from one hidden value (``numfuzz locate``'s test: a divergence that
shows only when both are compiled together cannot be pinned to one op)."""
import torch


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, x):
        h = torch.tanh(self.fc(x))
        return h * 2.0, h.sum(dim=-1)


def get_inputs():
    return [torch.randn(4, 8)]
