"""A bird's-eye-view occupancy CNN: every cell of a 16x16 BEV grid (0.25 m cells) gets the polar
coordinates of its 0.5 m map tile relative to the ego vehicle (tile index: ceil of the offset
over the tile size, plus the map origin index, 0 here; azimuth atan2), concatenated with the
sensor channels, then three Conv-BN-ReLU blocks with pooling and a 1x1 occupancy head."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class EgoPolarChannels(nn.Module):
    def __init__(self, size=16, cell=0.25, tile=0.5, origin=0):
        super().__init__()
        self.tile = tile
        self.origin = origin
        coords = (torch.arange(size) - size // 2) * cell
        grid = torch.stack(torch.meshgrid(coords, coords, indexing="xy"))
        self.register_buffer("grid", grid)

    def forward(self, ego):
        offset = self.grid[None] - ego[:, :, None, None]
        tile = torch.ceil(offset / self.tile)
        tile = tile + self.origin
        azimuth = torch.atan2(tile[:, 1], tile[:, 0])
        distance = torch.sqrt(tile[:, 0] ** 2 + tile[:, 1] ** 2)
        return torch.stack([azimuth, torch.cos(azimuth), torch.sin(azimuth), distance], dim=1)


class ConvBlock(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(cout)
        self.bn.running_mean.uniform_(-0.1, 0.1)
        self.bn.running_var.uniform_(0.5, 1.5)

    def forward(self, x):
        return F.relu(self.bn(self.conv(x)))


class Model(nn.Module):
    def __init__(self, sensors=4, channels=16):
        super().__init__()
        self.polar = EgoPolarChannels()
        self.block1 = ConvBlock(sensors + 4, channels)
        self.block2 = ConvBlock(channels, channels)
        self.block3 = ConvBlock(channels, channels)
        self.head = nn.Conv2d(channels, 1, 1)
        self.eval()

    def forward(self, sensors, ego):
        x = torch.cat([sensors, self.polar(ego)], dim=1)
        x = F.max_pool2d(self.block1(x), 2)
        x = self.block3(self.block2(x))
        return self.head(x)


def get_inputs():
    return [torch.randn(2, 4, 16, 16), torch.rand(2, 2) * 0.2]
