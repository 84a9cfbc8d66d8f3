"""xgen-fuse-inverted-residuals end to end: MobileNet blocks compiled with the cpu pipeline run
as one generated kernel and match PyTorch, and NaN comes out where the unfused module puts
it. The target option ``inverted_residual_min_bytes`` (0 here: these blocks are small) picks
which blocks are fused."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

import xgen_mlir

FUSE_ALL = {
    "target_options": {"inverted_residual_min_bytes": "0", "inverted_residual_no_expand": "true"}
}
FUSE_NONE = {"target_options": {"inverted_residual_min_bytes": str(1 << 40)}}


class InvertedResidual(nn.Module):
    """MobileNetV2's block: expand 1x1 + BN + ReLU6 (none if ``ce`` is 0: its first block),
    depthwise 3x3 + BN + ReLU6, project 1x1 + BN (+ the input, at stride 1 with as many channels
    out as in)."""

    def __init__(self, cin: int, ce: int, cout: int, stride: int) -> None:
        super().__init__()
        self.residual = stride == 1 and cin == cout
        expand = [nn.Conv2d(cin, ce, 1, bias=False), nn.BatchNorm2d(ce), nn.ReLU6()] if ce else []
        ce = ce or cin
        self.body = nn.Sequential(
            *expand,
            nn.Conv2d(ce, ce, 3, stride, 1, groups=ce, bias=False),
            nn.BatchNorm2d(ce),
            nn.ReLU6(),
            nn.Conv2d(ce, cout, 1, bias=False),
            nn.BatchNorm2d(cout),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.body(x)
        return x + y if self.residual else y


def _model(cin: int, ce: int, cout: int, stride: int) -> nn.Module:
    torch.manual_seed(0)
    m = InvertedResidual(cin, ce, cout, stride)
    for mod in m.modules():  # non-trivial batch-norm statistics
        if isinstance(mod, nn.BatchNorm2d):
            mod.running_mean.uniform_(-0.5, 0.5)
            mod.running_var.uniform_(0.5, 2.0)
            mod.weight.data.uniform_(0.5, 1.5)
            mod.bias.data.uniform_(-0.2, 0.2)
    return m.eval()


@pytest.mark.parametrize(
    ("cin", "ce", "cout", "stride", "hw"),
    [(16, 96, 24, 2, 16), (24, 144, 24, 1, 12), (32, 64, 40, 1, 10), (32, 0, 16, 1, 12)],
)
def test_fused_block_matches_pytorch(cin, ce, cout, stride, hw):
    m = _model(cin, ce, cout, stride)
    x = torch.randn(1, cin, hw, hw)
    compiled = xgen_mlir.compile(m, (x,), **FUSE_ALL)
    want_counts = {"blocks fused": 1}
    if m.residual:  # the add of the block's input is taken into the kernel
        want_counts["of them with their residual add"] = 1
    assert compiled.report.rewrites["xgen-fuse-inverted-residuals"] == want_counts
    want = m(x).detach().numpy()
    np.testing.assert_allclose(np.asarray(compiled(x.numpy())), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("vector_bits", [256, 512])
def test_kernel_for_either_vector_width_matches_pytorch(vector_bits):
    """The kernel's vectors and channel block follow the target's vector width (8 floats with
    AVX2, 16 with AVX-512), whichever this host has: both compute the block's numbers. The
    cpu pipeline's own steps up to the fusion run with ``vector-bits`` set, then compile()."""
    import re

    from xgen_mlir.frontend import import_model
    from xgen_mlir.passes.runner import run_steps
    from xgen_mlir.pipelines import load_pipeline

    m = _model(24, 144, 24, 1)
    x = torch.randn(1, 24, 12, 12)
    steps = load_pipeline("cpu").with_options(FUSE_ALL["target_options"]).pass_steps()
    at = next(i for i, s in enumerate(steps) if s.startswith("xgen-fuse-inverted-residuals"))
    fuse = re.sub(r"vector-bits=\d+", f"vector-bits={vector_bits}", steps[at])
    assert f"vector-bits={vector_bits}" in fuse
    module = import_model(m, (x,))
    run_steps(module, [*steps[:at], fuse])
    assert "linalg.depthwise_conv_2d_nhwc_hwc" not in str(module)
    compiled = xgen_mlir.compile(module, (x,))
    want = m(x).detach().numpy()
    np.testing.assert_allclose(np.asarray(compiled(x.numpy())), want, rtol=1e-4, atol=1e-4)


def test_threshold_leaves_small_blocks_to_iree():
    m = _model(16, 32, 16, 1)
    x = torch.randn(1, 16, 8, 8)
    compiled = xgen_mlir.compile(m, (x,), **FUSE_NONE)
    rewrites = compiled.report.rewrites.get("xgen-fuse-inverted-residuals", {})
    assert "blocks fused" not in rewrites
    assert rewrites["not fused: expanded tensor below min-expanded-bytes"] == 1
    np.testing.assert_allclose(
        np.asarray(compiled(x.numpy())), m(x).detach().numpy(), rtol=1e-4, atol=1e-4
    )


def test_nan_and_inf_come_out_as_unfused():
    """The kernel's activations are the IR's own ops translated, so a NaN or Inf input pixel
    gives the fused module what the unfused one gives (and, since xgen-nan-minmax, what eager
    PyTorch gives: ReLU6's clamp propagates NaN; tests/python/test_nan_propagation.py)."""
    m = _model(16, 96, 24, 2)
    x = torch.randn(1, 16, 16, 16)
    x[0, 3, 5, 7] = float("nan")
    x[0, 0, 0, 0] = float("inf")
    fused = np.asarray(xgen_mlir.compile(m, (x,), **FUSE_ALL)(x.numpy()))
    plain = np.asarray(xgen_mlir.compile(m, (x,), **FUSE_NONE)(x.numpy()))
    np.testing.assert_array_equal(np.isnan(fused), np.isnan(plain))
    finite = np.isfinite(plain)
    np.testing.assert_allclose(fused[finite], plain[finite], rtol=1e-4, atol=1e-4)


def test_reports_count_the_kernels_flops():
    """FLOPs after rewriting (the report's number) count what a fused kernel computes: the
    ops it replaced, so the fusion alone changes nothing."""
    from xgen_mlir.analysis.flops import module_flops
    from xgen_mlir.frontend import import_model
    from xgen_mlir.passes.runner import run_steps

    m = _model(16, 96, 24, 2)
    x = torch.randn(1, 16, 16, 16)
    steps = ["xgen-nhwc-convs", "xgen-cancel-reshapes"]
    fused, plain = import_model(m, (x,)), import_model(m, (x,))
    run_steps(plain, steps)
    run_steps(fused, [*steps, "xgen-fuse-inverted-residuals{min-expanded-bytes=0}"])
    assert "linalg.depthwise_conv_2d_nhwc_hwc" not in str(fused)
    assert module_flops(fused.operation) == module_flops(plain.operation) > 0


@pytest.mark.parametrize(
    ("cin", "ce", "cout", "stride", "hw"),
    [(16, 96, 24, 2, 16), (24, 144, 24, 1, 12), (32, 64, 40, 1, 10), (32, 0, 16, 1, 12)],
)
def test_bf16_block_matches_pytorch(cin, ce, cout, stride, hw):
    """precision="bf16": the expand and project convs as bf16 dot products (f32 sums), the
    depthwise conv in f32; the half (8-wide) project vector (24, 40 outputs) too, and the
    block without an expand conv. Within bf16's error of PyTorch's fp32, and not f32's."""
    from xgen_mlir.target import cpu_flags

    if "avx512_bf16" not in cpu_flags():
        pytest.skip("bf16 compiles as fp32 on a host without AVX512-BF16")
    m = _model(cin, ce, cout, stride)
    x = torch.randn(1, cin, hw, hw)
    # (bf16_tiles=0: the vdpbf16ps kernel, also on a CPU with AMX tiles, where a bf16 compile
    # keeps the f32 kernel: the last lines)
    dot = {"target_options": {**FUSE_ALL["target_options"], "bf16_tiles": "0"}}
    compiled = xgen_mlir.compile(m, (x,), precision="bf16", precision_check=False, **dot)
    assert compiled.report.rewrites["xgen-fuse-inverted-residuals"]["blocks fused"] == 1
    want = m(x).detach().numpy()
    err = np.abs(np.asarray(compiled(x.numpy())) - want).max() / np.abs(want).max()
    assert 1e-5 < err < 1e-2, err
    tiles = {"target_options": {**FUSE_ALL["target_options"], "bf16_tiles": "1"}}
    compiled = xgen_mlir.compile(m, (x,), precision="bf16", precision_check=False, **tiles)
    assert compiled.report.rewrites["xgen-fuse-inverted-residuals"]["blocks fused"] == 1
    err = np.abs(np.asarray(compiled(x.numpy())) - want).max() / np.abs(want).max()
    assert err < 1e-5, err
