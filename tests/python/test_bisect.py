"""xgen-bisect finds where numbers go wrong: IREE's Vulkan depthwise bug with our workaround
taken out, a deliberately broken pass, a deliberately wrong generated kernel; each with its
reproducer written (and the Vulkan one rerun with stock tools, still wrong)."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch
from targets_util import need_vulkan

from xgen_mlir import bisect as B
from xgen_mlir._mlir import ir
from xgen_mlir._paths import iree_tool
from xgen_mlir.irutil import ConstantReader, constant_op
from xgen_mlir.passes import registry

TRACE = """EXEC @main
=== main_dispatch_0::main_dispatch_0_conv_2x2_f32 inputs ===
2x2xf32=[[1 2][3 4]]
=== main_dispatch_0::main_dispatch_0_conv_2x2_f32 outputs ===
2x2xf32=[[1.5 -2][3e-05 nan]]
=== main_dispatch_1::main_dispatch_1_elementwise_4_f32 inputs ===
4xf32=1 2 3 4
=== main_dispatch_1::main_dispatch_1_elementwise_4_f32 outputs ===
4xi32=1 2 3 4
result[0]: hal.buffer_view
4xf32=1 2 3 4
"""


def _net() -> torch.nn.Module:
    torch.manual_seed(0)
    nn = torch.nn
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1), nn.Hardswish(), nn.Conv2d(16, 16, 3, padding=1, groups=16),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 5),
    ).eval()  # fmt: skip


def _disable(monkeypatch, *names: str) -> None:
    registry.registered_passes()
    for name in names:
        info = registry.get_pass(name)
        monkeypatch.setitem(registry._REGISTRY, name, replace(info, fn=lambda *a: None))


def test_parses_iree_dispatch_traces():
    traced = B.parse_trace(TRACE)
    assert [t.kind for t in traced] == ["conv_2x2_f32", "elementwise_4_f32"]
    assert traced[0].symbol == "main_dispatch_0"
    np.testing.assert_array_equal(traced[0].inputs[0], [[1, 2], [3, 4]])
    assert np.isnan(traced[0].outputs[0][1, 1]) and traced[0].outputs[0][1, 0] == 3e-05
    assert traced[1].outputs[0].dtype == np.int32


def test_aligns_by_kind_and_blames_the_first_divergence_with_agreeing_inputs():
    def t(name, inputs, outputs):
        return B.Traced(name, [np.array(v, np.float32) for v in inputs],
                        [np.array(v, np.float32) for v in outputs])  # fmt: skip

    ref = [t("m_dispatch_0::m_dispatch_0_a_f32", [[1.0]], [[2.0]]),
           t("m_dispatch_1::m_dispatch_1_b_f32", [[2.0]], [[4.0]]),
           t("m_dispatch_2::m_dispatch_2_c_f32", [[4.0]], [[5.0]])]  # fmt: skip
    got = [t("m_dispatch_0::m_dispatch_0_a_f32", [[1.0]], [[2.0]]),
           t("m_dispatch_1::m_dispatch_1_copy", [[2.0]], [[2.0]]),  # only on the target
           t("m_dispatch_2::m_dispatch_2_b_f32", [[2.0]], [[4.5]]),
           t("m_dispatch_3::m_dispatch_3_c_f32", [[4.5]], [[5.5]])]  # fmt: skip
    compared, unmatched, first, suspects = B.compare(got, ref, 1e-4)
    assert [d.target.split("::")[0] for d in compared] == ["m_dispatch_0", "m_dispatch_2",
                                                           "m_dispatch_3"]  # fmt: skip
    assert unmatched == ["m_dispatch_1::m_dispatch_1_copy"]
    assert first is not None and first.target.startswith("m_dispatch_2") and first.inputs_agree
    assert suspects == []
    nan = [t("x_dispatch_0_a", [], [[np.nan]])]
    nan_ok = B.compare(nan, nan, 1e-4)
    assert nan_ok[2] is None, "NaN where the reference has NaN is agreement"


def test_finds_irees_vulkan_depthwise_bug_without_our_workaround(tmp_path, monkeypatch):
    need_vulkan()
    _disable(monkeypatch, "xgen-unroll-depthwise-taps", "xgen-isolate-pad-sources")
    x = torch.randn(1, 3, 16, 16, generator=torch.Generator().manual_seed(0))
    report = B.bisect(_net(), (x,), target="vulkan", out_dir=tmp_path)
    assert report.first is not None and report.first.inputs_agree, report.describe()
    assert "conv_16x16x16x3x3_f32" in report.culprit, report.describe()
    assert "culprit" in report.describe() and (tmp_path / "report.json").is_file()
    # The reproducer is one depthwise conv; stock IREE tools still get it wrong on Vulkan.
    repro = (tmp_path / "repro.mlir").read_text()
    assert repro.count("linalg.generic") == 1 and "reduction" in repro
    vmfb = tmp_path / "repro.vmfb"
    subprocess.run([iree_tool("iree-compile"), str(tmp_path / "repro.mlir"),
                    "--iree-hal-target-backends=vulkan-spirv",
                    "--iree-vulkan-target=vp_android_baseline_2022", "-o", str(vmfb)],
                   check=True)  # fmt: skip
    ins = sorted(tmp_path.glob("input*.npy"))
    out = tmp_path / "got.npy"
    subprocess.run([iree_tool("iree-run-module"), "--device=vulkan", f"--module={vmfb}",
                    "--function=main", *[f"--input=@{p}" for p in ins], f"--output=@{out}"],
                   check=True, capture_output=True)  # fmt: skip
    got, want = np.load(tmp_path / "got.npy"), np.load(tmp_path / "reference_output0.npy")
    assert np.abs(got - want).max() > 1e-2


def test_finds_a_deliberately_broken_pass(tmp_path, monkeypatch):
    """A pass that scales the depthwise conv's weights by 1.5: against the pipeline without
    it, the depthwise conv's dispatch is the first to diverge, with agreeing inputs."""

    def corrupt(module_op, opts):
        reader = ConstantReader(module_op)
        consts = [op for op in module_op.regions[0].blocks[0].operations[0].regions[0]
                  .blocks[0].operations if op.name == "arith.constant"
                  and str(op.results[0].type) == "tensor<16x1x3x3xf32>"]  # fmt: skip
        assert len(consts) == 1
        old = consts[0]
        with module_op.context, ir.Location.unknown(), ir.InsertionPoint(old):
            new = constant_op(reader.value_of(old.results[0]) * 1.5, "broken")
        old.results[0].replace_all_uses_with(new.result)
        return {"corrupted": 1}

    _disable(monkeypatch)
    info = registry.get_pass("xgen-algebraic-simplify")
    monkeypatch.setitem(registry._REGISTRY, info.name, replace(info, fn=corrupt))
    x = torch.randn(1, 3, 16, 16, generator=torch.Generator().manual_seed(0))
    report = B.bisect(_net(), (x,), target="cpu", reference="pipeline",
                      leave_out=["xgen-algebraic-simplify"], out_dir=tmp_path)  # fmt: skip
    assert report.first is not None and report.first.inputs_agree, report.describe()
    assert report.output_max_abs_err > 1e-3
    assert report.culprit == report.first.target and "3x3" in report.culprit, report.describe()
    assert (tmp_path / "repro.mlir").is_file() and (tmp_path / "input0.npy").is_file()


def test_finds_a_deliberately_wrong_generated_kernel(tmp_path, monkeypatch):
    """The matrix-vector kernel of xgen-pointwise-kernels made to scale its results: the
    bisection against the pipeline without that pass names the kernel's dispatch."""
    from xgen_mlir.passes import pointwise_kernels

    real = pointwise_kernels.generate
    monkeypatch.setattr(
        pointwise_kernels,
        "generate",
        lambda spec: real(spec).replace("act(acc[", "1.5f * act(acc["),
    )
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.Linear(256, 32),
                                torch.nn.Tanh()).eval()  # fmt: skip
    x = torch.randn(1, 64)
    report = B.bisect(model, (x,), target="cpu", reference="pipeline",
                      leave_out=["xgen-pointwise-kernels"], out_dir=tmp_path)  # fmt: skip
    assert report.output_max_abs_err > 1e-3, report.describe()
    assert report.culprit and report.culprit in report.unmatched_target, report.describe()
    assert (tmp_path / "README.txt").read_text().startswith(f"Culprit dispatch: {report.culprit}")


def test_agreeing_builds_blame_nothing_and_bad_requests_are_clear(tmp_path):
    x = torch.randn(1, 3, 16, 16, generator=torch.Generator().manual_seed(0))
    report = B.bisect(_net(), (x,), target="cpu", out_dir=tmp_path)
    assert report.first is None and not report.culprit and report.output_max_abs_err < 1e-4
    with pytest.raises(B.BisectError, match="unknown reference 'torch'"):
        B.bisect(_net(), (x,), target="cpu", reference="torch")
    with pytest.raises(B.BisectError, match="leave_out"):
        B.bisect(_net(), (x,), target="cpu", reference="pipeline")


def test_cli_on_a_model_file(tmp_path):
    path = tmp_path / "net.onnx"
    torch.onnx.export(_net(), (torch.randn(1, 3, 16, 16),), str(path), dynamo=False)
    cli = Path(sys.executable).with_name("xgen-bisect")
    proc = subprocess.run([str(cli), str(path), "--target", "cpu", "-o", str(tmp_path / "o")],
                          capture_output=True, text=True)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "no dispatch diverges" in proc.stdout
    bad = subprocess.run([str(cli), str(tmp_path / "missing.onnx")], capture_output=True,
                         text=True)  # fmt: skip
    assert bad.returncode == 1 and "xgen-bisect: error:" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_bisects_an_arm64_build_under_qemu(tmp_path):
    """A foreign-arch target runs under its emulator with stock tools built for it."""
    from targets_util import need_qemu

    need_qemu("aarch64")
    x = torch.randn(1, 3, 16, 16, generator=torch.Generator().manual_seed(0))
    report = B.bisect(_net(), (x,), target="arm64", out_dir=tmp_path)
    assert report.compared and report.first is None, report.describe()
    assert report.output_max_abs_err < 1e-4
