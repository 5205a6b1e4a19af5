"""A ResNet-style classifier: a stem and five residual Conv-BN blocks (BatchNorm in eval mode);
block 3's activation is a float16-safe soft clip, cap * erf(x / cap) with cap 30000, the others
ReLU; global average pooling and a linear head."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class SoftClip(nn.Module):
    def __init__(self, cap=30000.0):
        super().__init__()
        self.cap = cap

    def forward(self, x):
        return self.cap * torch.erf(x / self.cap)


class ResBlock(nn.Module):
    def __init__(self, channels, softclip=False):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)
        self.clip = SoftClip() if softclip else nn.ReLU()
        for bn in (self.bn1, self.bn2):
            bn.running_mean.uniform_(-0.1, 0.1)
            bn.running_var.uniform_(0.5, 1.5)

    def forward(self, x):
        h = F.relu(self.bn1(self.conv1(x)))
        return self.clip(x + self.bn2(self.conv2(h)))


class Model(nn.Module):
    def __init__(self, channels=16, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, channels, 3, padding=1, bias=False),
                                  nn.BatchNorm2d(channels), nn.ReLU())
        self.blocks = nn.Sequential(*[ResBlock(channels, i == 3) for i in range(5)])
        self.head = nn.Linear(channels, classes)
        self.eval()

    def forward(self, x):
        x = self.blocks(self.stem(x))
        return self.head(F.adaptive_avg_pool2d(x, 1).flatten(1))


def get_inputs():
    return [torch.randn(2, 3, 12, 12)]
