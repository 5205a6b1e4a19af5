"""A tabular MLP over rows of 32 raw 8-bit sensor readings (uint8, as the logger stores them):
each row is min-max scaled by its own min and max, then Linear-BatchNorm-ReLU blocks (BatchNorm
in eval mode), dropout (inactive in eval) and a linear classifier."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, readings=32, hidden=64, classes=4):
        super().__init__()
        self.fc1 = nn.Linear(readings, hidden)
        self.bn1 = nn.BatchNorm1d(hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.bn2 = nn.BatchNorm1d(hidden)
        self.drop = nn.Dropout(0.1)
        self.head = nn.Linear(hidden, classes)
        for bn in (self.bn1, self.bn2):
            bn.running_mean.uniform_(-0.2, 0.2)
            bn.running_var.uniform_(0.5, 1.5)
        self.eval()

    def forward(self, readings):
        lo = readings.amin(dim=-1, keepdim=True)
        hi = readings.amax(dim=-1, keepdim=True)
        x = (readings - lo) / (hi - lo).clamp_min(1)
        x = F.relu(self.bn1(self.fc1(x)))
        x = self.drop(F.relu(self.bn2(self.fc2(x))))
        return self.head(x)


def get_inputs():
    return [torch.randint(40, 220, (16, 32), dtype=torch.uint8)]
