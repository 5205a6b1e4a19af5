"""A four-block residual MLP whose third block's activation is erf (``numfuzz locate``'s test:
a planted erf bug is located at the erf line, in module ``blocks.2.act``)."""
import torch


class Act(torch.nn.Module):
    def forward(self, h):
        return torch.erf(h)  # the line locate must name


class Block(torch.nn.Module):
    def __init__(self, erf: bool):
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)
        self.act = Act() if erf else torch.nn.Tanh()

    def forward(self, x):
        return x + self.act(self.fc(x)) * 0.5


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = torch.nn.ModuleList([Block(i == 2) for i in range(4)])

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return torch.clamp(torch.round(x / 0.1), -128, 127).to(torch.int8)


def get_inputs():
    return [torch.randn(4, 8)]
