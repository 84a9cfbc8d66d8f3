"""Numerics of real models through the cpu pipeline, against PyTorch eager.

Tolerances: fp32 through different kernels (IREE's data-tiled matmuls/convs reassociate sums),
so absolute error grows with depth and logit scale; each test states its bound. The
classifiers (ResNet-18, pretrained MobileNetV2, which must also agree on the top-5 classes)
are checked in test_fusion_models.py, which compiles them with the same options.
"""

from __future__ import annotations

import pytest
import torch
from conftest import check_close

import xgen_mlir
from xgen_mlir.models import transformers_zoo, vision


def _compare(model, inputs, atol, rtol):
    with torch.no_grad():
        want = model(*inputs)
    module = xgen_mlir.compile(model, inputs)
    got = module(*inputs)
    check_close(got.numpy(), want.numpy(), atol=atol, rtol=rtol, what=type(model).__name__)
    return got, want


# ResNet-18 at 224 (top-5 agree) and the pretrained MobileNetV2 on china.jpg ("palace", the
# same top-5 classes): test_fusion_models.py makes these checks on its compile of the same
# models with the same options, instead of a second compile here.


def test_vgg_style_cnn_with_batchnorm():
    _compare(vision.small_cnn(), (vision.random_input("small_cnn"),), 1e-4, 1e-4)


@pytest.mark.slow
def test_pretrained_minilm_bert_encoder():
    model, inputs = transformers_zoo.minilm(seq=128)
    _compare(model, inputs, 1e-4, 1e-4)


@pytest.mark.slow
def test_gpt2_small_widths_two_layers():
    """GPT-2 small's real widths (768 hidden, 12 heads, 50257 vocab), 2 layers to keep CI fast."""
    model, inputs = transformers_zoo.gpt2_small(seq=32, n_layer=2)
    _compare(model, inputs, 2e-4, 1e-4)


#: Layers are identical within each model, so 2 of them import every op type the full depth
#: has (and a layer's output feeding the next); MobileBERT's 24 took 5x as long to compile.
LAYERS = {"distilbert": {"n_layers": 2}, "mobilebert": {"num_hidden_layers": 2}}


@pytest.mark.slow
@pytest.mark.parametrize("builder", ["distilbert", "mobilebert"])
def test_more_transformers_import_and_match(builder):
    """Real widths (hidden sizes, heads, MobileBERT's bottlenecks, vocab), 2 layers."""
    model, inputs = getattr(transformers_zoo, builder)(seq=32, **LAYERS[builder])
    _compare(model, inputs, 2e-4, 1e-4)
