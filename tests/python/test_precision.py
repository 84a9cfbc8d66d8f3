"""compile(precision=...) and the load-time CPU feature check (docs/precision.md).

bf16 rounds each conv/matmul operand to 8 significant bits (relative step 2^-8 = 3.9e-3) and
accumulates in f32, so a small model's output differs from PyTorch's fp32 by about 1e-3 in
relative L2 norm: 3e-2 is the bound a correct bf16 module stays well inside, and a transformer
block computed in fp32 would be at ~1e-6, so the lower bound shows the demotion took place.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest
import torch

import xgen_mlir
from xgen_mlir.errors import FallbackWarning, UnknownNameError, XGenError
from xgen_mlir.runtime.cpu_features import CpuFeatureError, missing_features
from xgen_mlir.runtime.module import load
from xgen_mlir.target import cpu_flags

BF16_TOLERANCE = 3e-2


def _rel(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def _cnn() -> tuple[torch.nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.Conv2d(16, 32, 3, padding=1, stride=2),
        torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1),
        torch.nn.Flatten(),
        torch.nn.Linear(32, 10),
    ).eval()
    return model, torch.randn(1, 3, 16, 16)


def _block() -> tuple[torch.nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0, batch_first=True).eval()
    return layer, torch.randn(1, 16, 64)


def _needs_bf16_host() -> None:
    if "avx512_bf16" not in cpu_flags() and "amx_bf16" not in cpu_flags():
        pytest.skip("this host has no native bf16 (the fallback test covers it)")


def test_bf16_small_cnn_against_pytorch():
    _needs_bf16_host()
    model, x = _cnn()
    compiled = xgen_mlir.compile(model, (x,), precision="bf16")
    report = compiled.report
    assert report.precision == "bf16"
    with torch.no_grad():
        want = model(x).numpy()
    assert _rel(compiled(x).numpy(), want) < BF16_TOLERANCE
    assert [e["output"] for e in report.precision_errors] == [0]
    err = report.precision_errors[0]
    assert 0 <= err["rel_l2"] < BF16_TOLERANCE and err["ref_max_abs"] > 0
    assert report.precision_inputs == "example inputs"
    # a bf16 module that computes exactly what fp32 does says so instead of passing as bf16
    assert (err["rel_l2"] == 0) == ("no contraction was demoted" in report.precision_note)
    assert "output 0: relative error" in str(report) and "precision: bf16" in str(report)


def test_bf16_transformer_block_demotes_matmuls():
    _needs_bf16_host()
    model, x = _block()
    compiled = xgen_mlir.compile(model, (x,), precision="bf16")
    with torch.no_grad():
        want = model(x).numpy()
    err = _rel(compiled(x).numpy(), want)
    assert 1e-4 < err < BF16_TOLERANCE, err  # bf16 rounding shows; fp32 would be ~1e-6
    (rec,) = compiled.report.precision_errors
    # the report's error against the fp32 compile is the same size as ours against PyTorch
    assert 1e-4 < rec["rel_l2"] < BF16_TOLERANCE
    assert rec["rel_l2"] == pytest.approx(err, rel=0.5)
    assert "--iree-global-opt-demote-contraction-inputs-type=bf16" in compiled.report.iree_flags


def test_fp32_is_the_default_and_checks_nothing():
    model, x = _cnn()
    compiled = xgen_mlir.compile(model, (x,))
    assert compiled.report.precision == "fp32" and compiled.report.precision_errors == []
    assert not any("demote" in f for f in compiled.report.iree_flags)


def test_unsupported_targets_and_values_are_refused():
    model, x = _cnn()
    with pytest.raises(XGenError, match=r"target 'vulkan' cannot compile in bf16.*'precision'"):
        xgen_mlir.compile(model, (x,), target="vulkan", precision="bf16")
    with pytest.raises(UnknownNameError, match="int4"):
        xgen_mlir.compile(model, (x,), precision="int4")
    with pytest.raises(XGenError, match="disagree"):
        xgen_mlir.compile(model, (x,), precision="bf16", target_options={"precision": "fp32"})


def test_cpu_without_bf16_falls_back_to_fp32_with_a_warning():
    model, x = _cnn()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = xgen_mlir.compile(
            model, (x,), target="x86_64", target_options={"cpu": "x86-64-v3"}, precision="bf16"
        )
    messages = [str(w.message) for w in caught if issubclass(w.category, FallbackWarning)]
    assert any("avx512bf16" in m and "precision=fp32" in m for m in messages), messages
    assert compiled.report.precision == "fp32"
    assert "avx512bf16" in compiled.report.precision_note
    with torch.no_grad():
        assert _rel(compiled(x).numpy(), model(x).numpy()) < 1e-5


def test_missing_features_named_with_cpuinfo_names():
    host = {"avx512f", "avx2", "fma"}
    assert missing_features("+avx512f,+amx-tile,+avx512bf16,+crc32", host) == [
        "amx-tile (amx_tile)",
        "avx512bf16 (avx512_bf16)",
    ]
    assert missing_features("+avx512f,+amx-tile", set()) == []  # unknown host: no claim


# LLVM x86 features one of which any x86 host lacks (Intel has no XOP/FMA4, AMD no AMX).
_FOREIGN = ("amx-tile", "avx512fp16", "xop", "fma4")


def test_module_for_missing_cpu_feature_is_refused_at_load(tmp_path):
    from xgen_mlir.runtime.cpu_features import CPUINFO_NAME

    flags = cpu_flags()
    foreign = next((f for f in _FOREIGN if CPUINFO_NAME[f] not in flags), None)
    assert flags and foreign is not None, f"host flags {sorted(flags)[:10]}..."
    model, x = _cnn()
    compiled = xgen_mlir.compile(
        model,
        (x,),
        target="x86_64",
        extra_iree_flags=[f"--iree-llvmcpu-target-cpu-features=+{foreign}"],
    )
    assert f"+{foreign}" in compiled.cpu_features.split(",")
    path = compiled.save(tmp_path / "foreign.vmfb")
    # the cpuinfo name in parentheses where it differs from LLVM's (amx-tile (amx_tile), xop)
    named = foreign if CPUINFO_NAME[foreign] == foreign else f"{foreign} ({CPUINFO_NAME[foreign]})"
    with pytest.raises(CpuFeatureError, match=rf"lacks: .*{re.escape(named)}"):
        load(path)
    with pytest.raises(CpuFeatureError, match=foreign):
        load(path, isolated=True)
    with pytest.raises(CpuFeatureError, match=foreign):
        compiled(x)  # the compiled module itself refuses before running
    bundle = compiled.save_bundle(tmp_path / "bundle")
    with pytest.raises(CpuFeatureError, match=foreign):
        xgen_mlir.load_bundle(bundle)


def test_module_for_this_host_records_its_features_and_loads(tmp_path):
    import json

    model, x = _cnn()
    compiled = xgen_mlir.compile(model, (x,))
    features = compiled.cpu_features.split(",")
    assert "+avx2" in features or "+neon" in features
    assert compiled.report.cpu_target is not None
    loaded = load(compiled.save(tmp_path / "m.vmfb"))
    assert loaded.cpu_features == compiled.cpu_features
    np.testing.assert_allclose(loaded(x.numpy()), compiled(x).numpy(), rtol=0, atol=0)
    bundle = compiled.save_bundle(tmp_path / "b")
    assert json.loads((bundle / "manifest.json").read_text())["cpu_features"] == ",".join(features)
    xgen_mlir.load_bundle(bundle)


def test_cli_precision_flag(tmp_path, capsys):
    _needs_bf16_host()
    from xgen_mlir.frontend import import_model
    from xgen_mlir.tools.xgen_compile import main

    torch.manual_seed(0)
    mlp = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8))
    src = tmp_path / "mlp.mlir"
    src.write_text(str(import_model(mlp.eval(), (torch.randn(2, 64),))))
    assert main([str(src), "--precision", "bf16", "-o", str(tmp_path / "mlp.vmfb")]) == 0
    out = capsys.readouterr().out
    assert "precision: bf16" in out and "output 0: relative error" in out
    assert "random inputs" in out
    assert main([str(src), "--precision", "bf16", "--target", "vulkan"]) == 1
    assert "cannot compile in bf16" in capsys.readouterr().err
