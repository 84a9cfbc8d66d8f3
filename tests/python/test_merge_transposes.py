"""xgen-merge-sibling-transposes on real attention: Q/K/V's three head transposes become one.

Tiny BERT (after xgen-merge-sibling-matmuls) and tiny GPT-2 (``c_attn`` is one matmul): the
pass fires once per layer, the compiled model still matches PyTorch, and the cpu pipeline
with the pass launches fewer kernels per call than the same pipeline without it.
"""

from __future__ import annotations

import re

import pytest
import torch
from conftest import check_close
from torch import nn

import xgen_mlir
from xgen_mlir.frontend import import_model
from xgen_mlir.models import transformers_zoo
from xgen_mlir.passes.merge_sibling_transposes import merge_sibling_transposes
from xgen_mlir.passes.op_stats import count_ops
from xgen_mlir.passes.runner import run_steps
from xgen_mlir.pipelines import load_pipeline

STEP = "xgen-merge-sibling-transposes"


def _model(which: str) -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    if which == "bert":
        return transformers_zoo.bert_tiny()
    return transformers_zoo.gpt2_tiny(seq=16)


@pytest.mark.parametrize("which", ["bert", "gpt2"])
def test_one_transpose_per_layer_and_match_pytorch(which):
    model, inputs = _model(which)
    module = import_model(model, inputs)
    # the tiny models' projections (N=32) are below the merge's default min-width
    run_steps(module, ["xgen-fold-transpose-pairs", "xgen-merge-sibling-matmuls{min-width=1}"])
    before = count_ops(module.operation)
    counts = merge_sibling_transposes(module.operation)
    after = count_ops(module.operation)
    # 2 layers; Q, K, V each; K is read transposed (K^T) and keeps a transpose of its slice
    assert counts == {"groups": 2, "transposes": 6, "composed": 2}
    assert before["linalg.transpose"] - after["linalg.transpose"] == 2 * (3 - 2)
    assert merge_sibling_transposes(module.operation) == {}  # nothing left to merge
    got = xgen_mlir.compile(module)(*inputs)
    with torch.no_grad():
        want = model(*inputs)
    check_close(got.numpy(), want.numpy(), atol=1e-4, rtol=1e-4, what=which)


def test_fewer_dispatches_than_without_the_pass(tmp_path):
    """Same pipeline and flags but for this step: the pass saves kernel launches. (With the
    attention kernel the per-head transposes are index arithmetic in its one dispatch, so it
    is off here: the pass is for the attention IREE compiles.)"""
    model, inputs = transformers_zoo.bert_tiny()
    cpu = load_pipeline("cpu")
    # the tiny model's projections (N=32) are below the merge's default min-width
    text = cpu.path.read_text().replace(
        '"xgen-merge-sibling-matmuls"', '"xgen-merge-sibling-matmuls{min-width=1}"'
    )
    without = re.sub(
        r'\[\[steps\]\]\npass = "xgen-merge-sibling-transposes"\nwhy = "[^"]*"\n+', "", text
    )
    assert without != text and "min-width=1" in text
    (tmp_path / "cpu_with.toml").write_text(text)
    path = tmp_path / "cpu_without.toml"
    path.write_text(without)
    off = {"attention_kernels": "false"}
    with_pass = xgen_mlir.compile(
        model, inputs, target=str(tmp_path / "cpu_with.toml"), target_options=off
    )
    no_pass = xgen_mlir.compile(model, inputs, target=str(path), target_options=off)
    assert with_pass.report.fallback_used is None and no_pass.report.fallback_used is None
    assert with_pass.dispatch_count() < no_pass.dispatch_count()
    check_close(
        with_pass(*inputs).numpy(),
        no_pass(*inputs).numpy(),
        atol=1e-5,
        rtol=1e-5,
        what="with vs without",
    )


@pytest.mark.parametrize(
    "target", ["cpu", "x86_64", "arm64", "riscv64", "vulkan", "cuda", "embedded"]
)
def test_in_the_pipelines_after_the_matmul_merge(target):
    steps = load_pipeline(target).pass_steps("main")
    assert steps.index(STEP) == steps.index("xgen-merge-sibling-matmuls") + 1
