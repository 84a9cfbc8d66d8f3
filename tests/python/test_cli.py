"""The shell tools: xgen-compile, xgen-opt's reproducer, and runtime_bridge's scripts."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import check_close

from xgen_mlir.models import vision

BIN = Path(sys.executable).parent
ROOT = Path(__file__).resolve().parents[2]


def run(*cmd: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(list(cmd), capture_output=True, text=True)
    if ok:
        assert proc.returncode == 0, f"{cmd} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc


@pytest.fixture(scope="module")
def mlp_pt2(tmp_path_factory) -> tuple[Path, torch.nn.Module, torch.Tensor]:
    model, x = vision.mlp(), torch.randn(1, 64)
    path = tmp_path_factory.mktemp("pt2") / "mlp.pt2"
    torch.export.save(torch.export.export(model, (x,)), str(path))
    return path, model, x


def test_xgen_compile_pt2_then_run_with_bridge(mlp_pt2, tmp_path):
    path, model, x = mlp_pt2
    out = tmp_path / "mlp.vmfb"
    proc = run(str(BIN / "xgen-compile"), str(path), "-o", str(out), "--benchmark")
    assert "latency: median" in proc.stdout
    np.save(tmp_path / "x.npy", x.numpy())
    run(
        str(ROOT / "runtime_bridge" / "run_vmfb.sh"),
        str(out),
        f"--input=@{tmp_path / 'x.npy'}",
        f"--output=@{tmp_path / 'y.npy'}",
    )
    check_close(
        np.load(tmp_path / "y.npy"), model(x).detach().numpy(), atol=1e-5, rtol=1e-5, what="bridge"
    )


def test_xgen_compile_external_weights_beside_the_module(mlp_pt2, tmp_path):
    """The .irpa is written beside the module (atomically: nothing else is left in the
    folder) and the module runs with it."""
    import xgen_mlir

    path, model, x = mlp_pt2
    out = tmp_path / "mlp.vmfb"
    proc = run(str(BIN / "xgen-compile"), str(path), "-o", str(out), "--external-weights")
    params = tmp_path / "mlp.irpa"
    assert f"wrote {params}" in proc.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mlp.irpa", "mlp.vmfb", "mlp.vmfb.sha256"]
    module = xgen_mlir.runtime.CompiledModule(out.read_bytes(), parameters=params)
    want = model(x).detach().numpy()
    check_close(module(x.numpy()), want, atol=1e-5, rtol=1e-5, what="external weights")


def test_xgen_compile_errors_are_one_line_not_tracebacks(tmp_path):
    proc = run(str(BIN / "xgen-compile"), str(tmp_path / "none.onnx"), ok=False)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert "xgen-compile: error:" in proc.stderr and "none.onnx" in proc.stderr
    proc = run(str(BIN / "xgen-compile"), str(tmp_path / "x.pt2"), "--target", "tpu", ok=False)
    assert "unknown target 'tpu'; known targets: arm64, cpu," in proc.stderr


def test_xgen_compile_mlir_input(tmp_path):
    src = tmp_path / "double.mlir"
    src.write_text(
        "func.func @double(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
        "  %e = tensor.empty() : tensor<4xf32>\n"
        "  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>,"
        " affine_map<(d0) -> (d0)>],"
        ' iterator_types = ["parallel"]} ins(%x : tensor<4xf32>) outs(%e : tensor<4xf32>) {\n'
        "  ^bb0(%a: f32, %o: f32):\n    %s = arith.addf %a, %a : f32\n    linalg.yield %s : f32\n"
        "  } -> tensor<4xf32>\n  return %r : tensor<4xf32>\n}\n"
    )
    out = tmp_path / "double.vmfb"
    run(str(BIN / "xgen-compile"), str(src), "-o", str(out))
    proc = run(str(ROOT / "runtime_bridge" / "run_vmfb.sh"), str(out), "--input=4xf32=1 2 3 4")
    assert "4xf32=2 4 6 8" in proc.stdout


def test_failing_pipeline_reproducer_reproduces(tmp_path):
    """The printed xgen-opt command, run as printed, fails the same way on the saved IR."""
    src = tmp_path / "torchy.mlir"
    src.write_text(
        "func.func @f(%x: !torch.vtensor<[4],f32>) -> !torch.vtensor<[4],f32> {\n"
        "  %a = torch.aten.erfinv %x : !torch.vtensor<[4],f32> -> !torch.vtensor<[4],f32>\n"
        "  return %a : !torch.vtensor<[4],f32>\n}\n"
    )
    proc = run(str(BIN / "xgen-opt"), str(src), "--pipeline=cpu", "--keep-temps", ok=False)
    assert proc.returncode == 1
    assert "torch.aten.erfinv x1" in proc.stderr
    cmd = re.search(r"reproduce with:\n\s+(xgen-opt .*)", proc.stderr)
    assert cmd, proc.stderr
    again = subprocess.run(
        f"PATH={BIN}:$PATH {cmd.group(1)}", shell=True, capture_output=True, text=True
    )
    assert again.returncode == 1 and "torch.aten.erfinv x1" in again.stderr
