"""The usual losses on one prediction: MSE, L1, SmoothL1, Huber and KL divergence (log targets)."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def forward(self, pred: torch.Tensor, target: torch.Tensor) -> list[torch.Tensor]:
        return [
            F.mse_loss(pred, target),
            F.l1_loss(pred, target, reduction="sum"),
            F.smooth_l1_loss(pred, target, beta=0.5),
            F.huber_loss(pred, target, delta=1.5, reduction="none"),
            F.kl_div(pred.log_softmax(-1), target.log_softmax(-1), reduction="batchmean",
                     log_target=True),
        ]


def get_inputs() -> list[torch.Tensor]:
    return [torch.randn(8, 10), torch.randn(8, 10)]
