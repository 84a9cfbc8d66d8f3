"""A small 3D CNN (video / volumetric style) for block pruning of 3D convolutions.

C3D-like: 3x3x3 convs with a 1x1x1 channel mixer between them, pooled over time and space,
then a linear classifier. Random weights drawn in a forked RNG (same model every call).
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["INPUT_SHAPE", "Small3DCNN", "small_3d_cnn"]

#: Example input: batch 1, 3 channels, 8 frames of 16x16.
INPUT_SHAPE = (1, 3, 8, 16, 16)


class Small3DCNN(nn.Module):
    def __init__(self, classes: int = 10, width: int = 32) -> None:
        super().__init__()
        self.conv1 = nn.Conv3d(3, width, 3, padding=1)
        self.mix = nn.Conv3d(width, 2 * width, 1)
        self.conv2 = nn.Conv3d(2 * width, 2 * width, 3, stride=2, padding=1)
        self.proj = nn.Conv3d(2 * width, 4 * width, 1)
        self.fc = nn.Linear(4 * width, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.conv1(x))
        x = torch.relu(self.mix(x))
        x = torch.relu(self.conv2(x))
        x = torch.relu(self.proj(x))
        return self.fc(x.mean(dim=(2, 3, 4)))


def small_3d_cnn(seed: int = 0, classes: int = 10) -> Small3DCNN:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return Small3DCNN(classes).eval()
