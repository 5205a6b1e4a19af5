"""An instance-segmentation post-processing head: a small conv predicts per-instance mask logits,
which are thresholded into uint8 masks (the storage format of the dataset's masks); it returns
the masks and, per instance, whether its mask is non-empty (torch.any over the mask)."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, channels=8, instances=4):
        super().__init__()
        self.conv1 = nn.Conv2d(3, channels, 3, padding=1)
        self.conv2 = nn.Conv2d(channels, instances, 1)
        self.register_buffer("threshold", torch.tensor(1.5))

    def forward(self, image):
        logits = self.conv2(F.relu(self.conv1(image)))
        masks = (logits > self.threshold).to(torch.uint8)
        present = torch.any(masks.flatten(2), dim=-1)
        return masks, present


def get_inputs():
    return [torch.randn(2, 3, 8, 8)]
