"""A motion-prediction MLP head for tracked agents: from a trajectory feature vector it predicts
a longitudinal correction; the next displacement is dx = current longitudinal velocity plus that
correction, and dy = current lateral velocity times the agent's lateral-motion mask (0 for agents
constrained to a lane or rail) plus a lateral bias (0 by default). It returns the heading angle
atan2(dy, dx) and the speed."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, features=16, hidden=32, lateral_bias=0.0):
        super().__init__()
        self.lateral_bias = lateral_bias
        self.fc1 = nn.Linear(features, hidden)
        self.norm1 = nn.LayerNorm(hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.norm2 = nn.LayerNorm(hidden)
        self.to_dx = nn.Linear(hidden, 1)

    def forward(self, x, velocity, lateral_mask):
        h = F.silu(self.norm1(self.fc1(x)))
        h = h + F.silu(self.norm2(self.fc2(h)))
        dx = velocity[:, :1] + self.to_dx(h)
        lateral = velocity[:, 1:] * lateral_mask
        dy = lateral + self.lateral_bias
        heading = torch.atan2(dy, dx)
        speed = torch.sqrt(dx * dx + dy * dy)
        return torch.cat([heading, speed], dim=-1)


def get_inputs():
    lateral_mask = (torch.rand(64, 1) > 0.5).float()
    return [torch.randn(64, 16), torch.randn(64, 2), lateral_mask]
