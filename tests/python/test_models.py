"""Numerics of real models through the cpu pipeline, against PyTorch eager.

Tolerances: fp32 through different kernels (IREE's data-tiled matmuls/convs reassociate sums),
so absolute error grows with depth and logit scale; each test states its bound. ResNet-18,
MobileNetV2 (classifiers: the same top-5 classes too), GPT-2, DistilBERT and MobileBERT are
checked in test_fusion_models.py, which compiles them with the same options.
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


# ResNet-18 at 224 (top-5 agree), the pretrained MobileNetV2 on china.jpg ("palace", the same
# top-5 classes), and GPT-2 small, DistilBERT and MobileBERT at their real widths, 2 layers,
# seq 32: test_fusion_models.py makes these checks on its compile of the same models with the
# same (default) options, instead of a second compile here.


def test_vgg_style_cnn_with_batchnorm():
    _compare(vision.small_cnn(), (vision.random_input("small_cnn"),), 1e-4, 1e-4)


@pytest.mark.slow
def test_pretrained_minilm_bert_encoder():
    model, inputs = transformers_zoo.minilm(seq=128)
    _compare(model, inputs, 1e-4, 1e-4)
