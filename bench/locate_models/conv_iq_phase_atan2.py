"""A 1-D convolutional radar-return classifier on raw I/Q samples: a range gate (1 inside the
gate, 0 outside) is applied to both channels and the calibrated DC offset of the Q channel (0
here) is added back; the magnitude and phase atan2(Q, I) of each sample feed a
Conv1d-BatchNorm-ReLU stack with pooling and a linear head. BatchNorm in eval mode."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, classes=5, q_offset=0.0):
        super().__init__()
        self.q_offset = q_offset
        self.conv1 = nn.Conv1d(2, 16, 5, padding=2)
        self.bn1 = nn.BatchNorm1d(16)
        self.conv2 = nn.Conv1d(16, 16, 3, padding=1)
        self.bn2 = nn.BatchNorm1d(16)
        self.head = nn.Linear(16, classes)
        for bn in (self.bn1, self.bn2):
            bn.running_mean.uniform_(-0.1, 0.1)
            bn.running_var.uniform_(0.5, 1.5)
        self.eval()

    def forward(self, iq, gate):
        i = iq[:, 0] * gate
        q = iq[:, 1] * gate
        q = q + self.q_offset
        phase = torch.atan2(q, i)
        magnitude = torch.sqrt(i * i + q * q)
        x = torch.stack([magnitude, phase], dim=1)
        x = F.max_pool1d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.relu(self.bn2(self.conv2(x)))
        return self.head(x.mean(dim=-1))


def get_inputs():
    gate = (torch.arange(32) >= 8) & (torch.arange(32) < 24)
    return [torch.randn(4, 2, 32), gate.float().repeat(4, 1)]
