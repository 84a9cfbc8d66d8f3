"""Winograd F(4x4, 3x3) convolutions (xgen-winograd-convs), the cpu target's ``winograd``
option: which convs it rewrites, numerics against PyTorch and against a float64 reference,
that the default (``tuned``) rewrites only its prior's wide convs without a measurement of this
host, and the batched GEMM in xgen_mlir's generated kernel."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from conftest import check_close, compile_and_check
from torch import nn

import xgen_mlir
from xgen_mlir.analysis.flops import module_flops
from xgen_mlir.errors import PipelineError
from xgen_mlir.frontend import import_model
from xgen_mlir.models import vision
from xgen_mlir.passes.winograd_convs import WinogradOptions, winograd_convs
from xgen_mlir.pipelines import load_pipeline

WINOGRAD = {"target_options": {"winograd": "true"}}


@pytest.mark.slow
def test_resnet18_rewrites_the_large_3x3_convs_and_matches_pytorch():
    """ResNet-18 at 224: the 13 stride-1 3x3 convs are rewritten, the 56x56, 28x28 and 14x14
    stages' as F(4x4, 3x3) (196, 49 and 16 output tiles), the 7x7 stage's as F(2x2, 3x3) (16
    tiles of 2x2; only 4 of 4x4); the stride-2 ones stay direct. The model's multiply count
    drops by more than half."""
    model, x = vision.resnet18(), vision.random_input("resnet18")
    module = import_model(model, (x,))
    before = module_flops(module.operation)
    counts = winograd_convs(module.operation, WinogradOptions())
    assert counts == {
        "linalg.conv_2d_nchw_fchw as F(4x4, 3x3)": 10,
        "linalg.conv_2d_nchw_fchw as F(2x2, 3x3)": 3,
    }
    assert module_flops(module.operation) < 0.5 * before
    with torch.no_grad():
        want = model(x)
    got = xgen_mlir.compile(module, target="cpu", **WINOGRAD)(x)
    check_close(got.numpy(), want.numpy(), atol=1e-4, rtol=1e-4, what="resnet18 (winograd)")
    assert torch.equal(got.topk(5).indices, want.topk(5).indices)


class _ConvBlock(nn.Module):
    """conv3x3(bias) -> relu -> conv3x3 -> + input: a residual block on a 30x30 image, so the
    4x4 output tiles do not divide the output (30 = 7 * 4 + 2)."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Conv2d(8, 8, 3, padding=1)
        self.b = nn.Conv2d(8, 8, 3, padding=1, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(torch.relu(self.a(x))) + x


def test_ragged_output_and_bias_match_pytorch():
    torch.manual_seed(0)
    model = _ConvBlock().eval()
    x = torch.randn(1, 8, 30, 30)
    compiled = compile_and_check(model, (x,), atol=1e-5, rtol=1e-4, **WINOGRAD)
    # 30x30: 8 x 8 tiles of 4x4, both convs; the compile report says so
    assert compiled.report.rewrites["xgen-winograd-convs"] == {
        "linalg.conv_2d_nchw_fchw as F(4x4, 3x3)": 2
    }


def _conv_nhwc_reference(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Valid 3x3 conv of NHWC ``x`` with HWCF ``w`` in float64."""
    n, h, wd, _ = x.shape
    out = np.zeros((n, h - 2, wd - 2, w.shape[3]))
    for i in range(3):
        for j in range(3):
            out += x[:, i : i + h - 2, j : j + wd - 2, :].astype(np.float64) @ w[i, j]
    return out


def test_nhwc_conv_from_mlir_input_matches_float64_reference(tmp_path):
    """A linalg.conv_2d_nhwc_hwcf given as MLIR (the path ONNX-style NHWC convs take): the
    error against a float64 reference stays within 1e-5 of the output's scale."""
    rng = np.random.default_rng(0)
    w = rng.standard_normal((3, 3, 16, 32)).astype(np.float32) * 0.1
    hex_w = "0x" + w.tobytes().hex().upper()
    src = tmp_path / "conv.mlir"
    xt, wt, yt = "tensor<1x26x26x16xf32>", "tensor<3x3x16x32xf32>", "tensor<1x24x24x32xf32>"
    attrs = "{dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}"
    src.write_text(f"""
func.func @main(%x: {xt}) -> {yt} {{
  %c0 = arith.constant 0.0 : f32
  %w = arith.constant dense<"{hex_w}"> : {wt}
  %e = tensor.empty() : {yt}
  %f = linalg.fill ins(%c0 : f32) outs(%e : {yt}) -> {yt}
  %y = linalg.conv_2d_nhwc_hwcf {attrs} ins(%x, %w : {xt}, {wt}) outs(%f : {yt}) -> {yt}
  return %y : {yt}
}}
""")
    x = rng.standard_normal((1, 26, 26, 16)).astype(np.float32)
    got = xgen_mlir.compile(str(src), target="cpu", **WINOGRAD)(x)
    want = _conv_nhwc_reference(x, w)
    assert np.abs(got - want).max() <= 1e-5 * np.abs(want).max()


def test_tuned_by_default_rewrites_nothing_unmeasured_and_the_option_is_checked(tmp_path):
    """The default mode is ``tuned``: with no measurement of this host (an empty tuning
    database, or none), every conv stays direct; ``true`` / ``false`` still mean all / none."""
    torch.manual_seed(0)
    model, x = _ConvBlock().eval(), torch.randn(1, 8, 30, 30)
    compiled = xgen_mlir.compile(model, (x,), tuning_db=False)
    assert not any("F(" in k for k in compiled.report.rewrites.get("xgen-winograd-convs", {}))
    # the target's width and its bf16 tiles, as the host would state them
    wide = {"vector_bits": "512", "bf16_tiles": "0"}
    steps = [s for s in load_pipeline("cpu").with_options(wide).pass_steps() if "winograd" in s]
    # the pass also weighs the measured oneDNN offload (offload=tuned, the default); the
    # target's vector width decides whether unmeasured f32 convs start in oneDNN
    assert steps == [
        "xgen-winograd-convs{enable=tuned offload=tuned convs=tuned gemm=tuned precision=fp32"
        " vector-bits=512 bf16-tiles=0}"
    ]
    on = load_pipeline("cpu").with_options({"winograd": "true", **wide}).pass_steps()
    assert (
        "xgen-winograd-convs{enable=true offload=tuned convs=tuned gemm=tuned precision=fp32"
        " vector-bits=512 bf16-tiles=0}" in on
    )
    off = load_pipeline("cpu").with_options({"winograd": "false", **wide}).pass_steps()
    assert (
        "xgen-winograd-convs{enable=false offload=tuned convs=tuned gemm=tuned precision=fp32"
        " vector-bits=512 bf16-tiles=0}" in off
    )
    with pytest.raises(PipelineError, match="winograd='yes' is not one of false, true, tuned"):
        load_pipeline("cpu").with_options({"winograd": "yes"})


class _WideBlock(nn.Module):
    """Two 64-channel 3x3 convs (16x16, then 7x7 after a stride-2 conv): the Winograd prior's
    shapes, F(4x4) and F(2x2); the stride-2 conv has no Winograd form."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Conv2d(64, 64, 3, padding=1)
        self.down = nn.Conv2d(64, 64, 3, stride=2, padding=0, bias=False)
        self.b = nn.Conv2d(64, 64, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(torch.relu(self.down(torch.relu(self.a(x)))))


def test_unmeasured_wide_convs_start_as_winograd_unless_forbidden():
    """The prior: with no record, a 3x3 stride-1 conv of 64+ channels on a target of known
    width runs as Winograd (the tile by its output tiles), numbers within 1e-5 of the scale;
    ``winograd=false`` forbids it; the report says why."""
    torch.manual_seed(0)
    model, x = _WideBlock().eval(), torch.randn(1, 64, 16, 16)
    opts = {"vector_bits": "256", "offload": "none"}
    compiled = compile_and_check(
        model, (x,), atol=1e-5, rtol=1e-4, tuning_db=False, target_options=opts
    )
    assert compiled.report.rewrites["xgen-winograd-convs"] == {
        "linalg.conv_2d_nchw_fchw as F(4x4, 3x3)": 1,
        "linalg.conv_2d_nchw_fchw as F(2x2, 3x3)": 1,
    }
    whys = [why for _, decision, why in compiled.report.tuning.choices if "Winograd" in decision]
    assert len(whys) == 2 and all("starts as Winograd" in w for w in whys)
    off = xgen_mlir.compile(
        model, (x,), tuning_db=False, target_options={**opts, "winograd": "false"}
    )
    assert not any("F(" in k for k in off.report.rewrites.get("xgen-winograd-convs", {}))


def test_batched_gemm_in_the_generated_kernel_matches_pytorch():
    """``gemm_kernels=true`` with ``winograd=true``: each Winograd conv's batched GEMM
    (36 or 16 independent GEMMs, one weight matrix each) is one dispatch of the generated
    kernel over a third workgroup id; the numbers are Winograd's."""
    torch.manual_seed(0)
    model, x = _WideBlock().eval(), torch.randn(1, 64, 16, 16)
    opts = {"winograd": "true", "gemm_kernels": "true", "offload": "none"}
    compiled = compile_and_check(model, (x,), atol=1e-5, rtol=1e-4, target_options=opts)
    assert compiled.report.rewrites["xgen-winograd-convs"] == {
        "linalg.conv_2d_nchw_fchw as F(4x4, 3x3) (GEMM kernel)": 1,
        "linalg.conv_2d_nchw_fchw as F(2x2, 3x3) (GEMM kernel)": 1,
    }
    assert compiled.report.rewrites["xgen-gemm-kernels"]["gemm kernels"] == 2


def test_report_shows_the_variants_flops():
    from xgen_mlir.report import render

    record = {
        "graph": {"gflop": 3.64, "gflop_after_rewrites": 3.64, "mapping_types": {}},
        "systems": {
            "xgen_mlir cpu (winograd=true)": {"median_ms": 15.3, "gflop_after_rewrites": 1.77}
        },
    }
    page = render("resnet18", record)
    flops = page.split("FLOPs before/after graph rewriting")[1].split("<h2>")[0]
    assert "xgen_mlir cpu (winograd=true)" in flops and "1.77" in flops


def test_iree_failing_with_winograd_retries_with_direct_convs(monkeypatch):
    """compile() retries once with winograd=false when IREE fails and the caller left the
    option alone, says so, and the module is right; a caller's own winograd choice is not
    overridden (the error stands)."""
    from xgen_mlir import compiler
    from xgen_mlir.errors import BackendCompileError, FallbackWarning

    real = compiler.compile_outputs

    def fails_with_winograd(module, pipeline, **kw):
        if pipeline.option_value("winograd") != "false":
            raise BackendCompileError("IREE could not compile the module (simulated)")
        return real(module, pipeline, **kw)

    monkeypatch.setattr(compiler, "compile_outputs", fails_with_winograd)
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Conv2d(64, 64, 3, padding=1), torch.nn.ReLU()).eval()
    x = torch.randn(1, 64, 8, 8)
    with pytest.warns(FallbackWarning, match="Winograd"):
        compiled = xgen_mlir.compile(net, (x,), tuning_db=False)
    assert "simulated" in compiled.report.winograd_fallback
    assert "Winograd off" in compiled.report.text()
    with torch.no_grad():
        check_close(compiled(x.numpy()), net(x).numpy(), atol=1e-5, rtol=1e-5, what="retried")
    with pytest.raises(BackendCompileError, match="simulated"):
        xgen_mlir.compile(net, (x,), tuning_db=False, target_options={"winograd": "tuned"})


def test_a_failing_compile_tries_winograd_off_before_the_fallback_flags(monkeypatch):
    """The order of the remedies when IREE fails: a module holding Winograd convs tries the
    main flags only, then Winograd off (every flag set), then the fallback flag sets with
    Winograd on; a module without them goes through the flag sets once, with no retry."""
    from xgen_mlir import compiler
    from xgen_mlir.errors import BackendCompileError, FallbackWarning

    calls: list[tuple[str, slice]] = []

    def always_fails(module, pipeline, **kw):
        calls.append((pipeline.option_value("winograd"), kw["flag_sets"]))
        raise BackendCompileError("IREE could not compile the module (simulated)")

    monkeypatch.setattr(compiler, "compile_outputs", always_fails)
    torch.manual_seed(0)
    wide = torch.nn.Sequential(torch.nn.Conv2d(64, 64, 3, padding=1)).eval()
    with pytest.warns(FallbackWarning, match="Winograd"):
        with pytest.raises(BackendCompileError, match="simulated") as failed:
            xgen_mlir.compile(wide, (torch.randn(1, 64, 8, 8),), tuning_db=False)
    assert "also failed: Winograd off" in str(failed.value)
    assert calls == [
        ("tuned", slice(0, 1)),
        ("false", slice(None)),
        ("tuned", slice(1, None)),
    ]
    calls.clear()
    narrow = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1)).eval()  # no Winograd
    with pytest.raises(BackendCompileError, match="simulated") as failed:
        xgen_mlir.compile(narrow, (torch.randn(1, 3, 8, 8),), tuning_db=False)
    assert calls == [("tuned", slice(None))]
    assert failed.value.winograd_convs == 0
