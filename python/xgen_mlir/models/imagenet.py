"""ImageNet-1k class names, image preprocessing and top-k decoding, with PIL and numpy only.

PIL (and scikit-learn, for the default image) come with the ``demo`` extra
(``pip install 'xgen-mlir[demo]'``); they are imported when an image is loaded.

``imagenet_classes.txt`` holds the 1000 names in the standard index order (the first WordNet
synonym of each class, as torchvision lists them; "crane" and "maillot" appear twice there
too). It ships with the package because no installed package carries the list and the
machines cannot download it at run time.
"""

from __future__ import annotations

import importlib.resources
import os
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from ..diagnostics import optional_import

if TYPE_CHECKING:
    from PIL import Image

__all__ = ["IMAGENET_CLASSES", "IMAGENET_MEAN", "IMAGENET_STD", "load_image", "preprocess", "top_k"]

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


def _pil_image() -> Any:
    return optional_import("PIL.Image", "demo", "loading and preprocessing images")


def _load_classes() -> list[str]:
    text = (
        importlib.resources.files(__package__)
        .joinpath("imagenet_classes.txt")
        .read_text(encoding="utf-8")
    )
    names = [line.strip() for line in text.splitlines() if line.strip()]
    if len(names) != 1000:
        raise RuntimeError(f"imagenet_classes.txt has {len(names)} names, expected 1000")
    return names


#: The 1000 ImageNet-1k class names; ``IMAGENET_CLASSES[698] == "palace"``.
IMAGENET_CLASSES: list[str] = _load_classes()


def preprocess(img: Image.Image, resize: int = 256, crop: int = 224) -> torch.Tensor:
    """torchvision's eval transform: shorter side to ``resize`` (bilinear, antialiased),
    center ``crop``, scale to [0, 1], normalise by ImageNet mean/std -> 1x3xcropxcrop."""
    pil = _pil_image()
    img = img.convert("RGB")
    w, h = img.size
    size = (resize, int(resize * h / w)) if w <= h else (int(resize * w / h), resize)
    img = img.resize(size, pil.Resampling.BILINEAR)
    w, h = img.size
    left, top = round((w - crop) / 2.0), round((h - crop) / 2.0)
    img = img.crop((left, top, left + crop, top + crop))
    arr = np.asarray(img, dtype=np.float32) / 255.0
    norm = (arr - np.asarray(IMAGENET_MEAN, np.float32)) / np.asarray(IMAGENET_STD, np.float32)
    return torch.from_numpy(np.ascontiguousarray(norm.transpose(2, 0, 1)))[None]


def load_image(path: str | os.PathLike[str] | None = None) -> torch.Tensor:
    """Load an image as a normalised 1x3x224x224 float32 tensor.

    ``path=None`` uses scikit-learn's bundled ``china.jpg`` (MobileNetV2 says "palace"), so
    demos and tests need no image file of their own.
    """
    pil = _pil_image()
    if path is None:
        datasets = optional_import("sklearn.datasets", "demo", "the default image (china.jpg)")
        return preprocess(pil.fromarray(datasets.load_sample_image("china.jpg")))
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"image file not found: {path!r}")
    try:
        with pil.open(path) as img:
            img.load()
            return preprocess(img)
    except (pil.UnidentifiedImageError, OSError) as e:
        raise ValueError(f"cannot read image {path!r}: {e}") from e


def top_k(logits: torch.Tensor, k: int = 5) -> list[tuple[int, str, float]]:
    """The ``k`` most likely classes of one image's logits as (index, name, softmax prob).

    Accepts shape (C,) or (1, C); names fall back to ``class_<i>`` when C is not 1000.
    """
    logits = torch.as_tensor(logits).detach().float()
    if logits.dim() == 2 and logits.shape[0] == 1:
        logits = logits[0]
    if logits.dim() != 1:
        raise ValueError(f"top_k expects logits of shape (C,) or (1, C), got {tuple(logits.shape)}")
    probs = torch.softmax(logits, dim=0)
    values, indices = torch.topk(probs, min(k, probs.numel()))
    named = probs.numel() == len(IMAGENET_CLASSES)
    return [
        (i, IMAGENET_CLASSES[i] if named else f"class_{i}", float(p))
        for i, p in zip(indices.tolist(), values.tolist(), strict=True)
    ]
