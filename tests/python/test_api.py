"""The Python API: compile(), calling, save/load, iree-run-module on the saved file, benchmark."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import check_close, compile_and_check

import xgen_mlir
from xgen_mlir.models import vision


@pytest.fixture(scope="module")
def mlp_module():
    model = vision.mlp()
    x = torch.randn(1, 64, generator=torch.Generator().manual_seed(0))
    return model, x, compile_and_check(model, (x,), atol=1e-5, rtol=1e-5)


def test_mlp_matches_pytorch(mlp_module):
    module = mlp_module[2]
    assert module.signature.inputs[0].shape == (1, 64)


def test_small_cnn_matches_pytorch():
    model = vision.small_cnn()
    x = torch.randn(1, 3, 32, 32, generator=torch.Generator().manual_seed(1))
    compile_and_check(model, (x,), atol=1e-4, rtol=1e-4)


def test_numpy_in_numpy_out(mlp_module):
    model, x, module = mlp_module
    out = module(x.numpy())
    assert isinstance(out, np.ndarray)
    check_close(out, model(x).detach().numpy(), atol=1e-5, rtol=1e-5, what="mlp numpy")


def test_multiple_inputs_and_outputs():
    class TwoInTwoOut(torch.nn.Module):
        def forward(self, a, b):
            return a @ b, torch.tanh(a).sum(dim=1)

    a, b = torch.randn(3, 4), torch.randn(4, 5)
    module = xgen_mlir.compile(TwoInTwoOut(), (a, b))
    got = module(a, b)
    want = TwoInTwoOut()(a, b)
    assert isinstance(got, tuple) and len(got) == 2
    for g, w in zip(got, want, strict=True):
        check_close(g.numpy(), w.numpy(), atol=1e-5, rtol=1e-5, what="two outputs")


def test_save_load_roundtrip(mlp_module, tmp_path):
    _, x, module = mlp_module
    path = module.save(tmp_path / "mlp.vmfb")
    loaded = xgen_mlir.load(path)
    check_close(loaded(x).numpy(), module(x).numpy(), atol=0, rtol=0, what="reloaded")
    assert loaded.signature == module.signature


def _iree_run_module() -> str:
    exe = Path(sys.executable).parent / "iree-run-module"
    return str(exe) if exe.exists() else (shutil.which("iree-run-module") or "iree-run-module")


def test_saved_vmfb_runs_in_stock_iree_run_module(mlp_module, tmp_path):
    model, x, module = mlp_module
    path = module.save(tmp_path / "mlp.vmfb")
    np.save(tmp_path / "x.npy", x.numpy())
    out = tmp_path / "y.npy"
    subprocess.run(
        [
            _iree_run_module(),
            f"--module={path}",
            "--function=main",
            "--device=local-task",
            f"--input=@{tmp_path / 'x.npy'}",
            f"--output=@{out}",
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    check_close(np.load(out), model(x).detach().numpy(), atol=1e-5, rtol=1e-5, what="iree-run")


def test_custom_entry_name(tmp_path):
    model = vision.mlp()
    x = torch.randn(1, 64)
    module = xgen_mlir.compile(model, (x,), entry="forward")
    path = module.save(tmp_path / "m.vmfb")
    assert xgen_mlir.load(path, entry="forward")(x).shape == (1, 10)
    with pytest.raises(xgen_mlir.errors.ModuleLoadError, match="no entry function 'main'"):
        xgen_mlir.load(path)


def test_benchmark_returns_stats(mlp_module):
    _, x, module = mlp_module
    stats = module.benchmark(x, runs=5, warmup=1)
    assert stats.runs == 5
    assert 0 < stats.min_ms <= stats.median_ms <= stats.max_ms
    random_stats = module.benchmark(runs=3, warmup=0)  # inputs generated from the signature
    assert random_stats.runs == 3


def test_dump_ir_and_executables(tmp_path):
    model = vision.mlp()
    x = torch.randn(1, 64)
    xgen_mlir.compile(model, (x,), dump_ir=tmp_path / "ir", dump_executables=tmp_path / "exe")
    dumps = sorted(p.name for p in (tmp_path / "ir").iterdir())
    assert dumps[0] == "00-input.mlir"
    assert any("xgen-verify-iree-input" in d for d in dumps)
    assert any((tmp_path / "exe").iterdir()), "IREE wrote no executable dumps"


def test_compile_report_records_flags(mlp_module):
    _, _, module = mlp_module
    assert "--iree-opt-data-tiling" in module.report.iree_flags
    stages = set(module.report.stage_seconds)
    assert {"import", "xgen-passes", "iree-compile"} <= stages
    # the cpu target has dispatch steps: IREE's run is split around them
    assert {
        "iree:iree_to_global-optimization",
        "iree:dispatch_steps",
        "iree:iree_codegen",
    } <= stages


def test_dispatch_count_reads_the_module(mlp_module):
    _, _, module = mlp_module
    n = module.dispatch_count()
    assert 1 <= n < 20, n  # an MLP is a handful of kernels, never zero


def test_compiling_an_imported_module_leaves_it_unchanged():
    """An ir.Module from import_model can be compiled twice (with different options): the
    passes run on a copy. The report gives the FLOPs before and after the rewrites."""
    from xgen_mlir.frontend import import_model

    m = vision.small_cnn()
    x = torch.randn(1, 3, 32, 32, generator=torch.Generator().manual_seed(1))
    module = import_model(m, (x,))
    text = str(module)
    first = xgen_mlir.compile(module)
    second = xgen_mlir.compile(module, target_options={"winograd": "true"})
    assert str(module) == text
    want = m(x).detach().numpy()
    for compiled in (first, second):  # Winograd rounds differently: a wider tolerance
        check_close(compiled(x.numpy()), want, atol=1e-3, rtol=1e-3, what="small_cnn")
    assert first.report.flops_imported == second.report.flops_imported > 0
    assert second.report.flops_after_rewrites < first.report.flops_after_rewrites
