"""Shared helpers for the pytest suite: compile a model and compare it with PyTorch."""

from __future__ import annotations

import tempfile

import numpy as np
import pytest
import torch

import xgen_mlir


def max_abs_err(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.max(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64))))


def check_close(got: np.ndarray, want: np.ndarray, *, atol: float, rtol: float, what: str) -> None:
    """Assert |got - want| <= atol + rtol*|want| elementwise, with a readable failure."""
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    ok = np.abs(got - want) <= atol + rtol * np.abs(want)
    assert ok.all(), (
        f"{what}: {int((~ok).sum())} of {ok.size} elements off; max abs err "
        f"{max_abs_err(got, want):.3e} (atol {atol}, rtol {rtol})"
    )


def compile_and_check(model, inputs, *, atol: float, rtol: float, **options):
    """Compile with xgen_mlir (cpu) and compare with PyTorch eager; returns the module."""
    with torch.no_grad():
        want = model(*inputs)
    module = xgen_mlir.compile(model, inputs, **options)
    got = module(*inputs)
    assert isinstance(got, torch.Tensor), "torch inputs must give torch outputs"
    check_close(got.numpy(), want.numpy(), atol=atol, rtol=rtol, what=type(model).__name__)
    return module


@pytest.fixture(autouse=True)
def _limit_torch_threads():
    # IREE's workers and PyTorch's pool would fight over the 2 cores otherwise.
    torch.set_num_threads(1)
    yield


@pytest.fixture
def tmpdir_env(tmp_path, monkeypatch):
    """A fresh, empty temp directory for everything the test (and xgen_mlir) makes."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    monkeypatch.delenv("XGEN_KEEP_TEMPS", raising=False)
    return tmp


def int8_exact_in_ort() -> bool:
    """VNNI here: ONNX Runtime's and oneDNN's int8 GEMMs are exact (xgen_mlir offloads s8
    primitives to oneDNN only then). Without it ORT's outputs miss the ONNX semantics
    (measured: 0.05 off on a dynamically quantized MLP that xgen_mlir matches to 3e-8)."""
    from xgen_mlir.target import EXACT_INT8_FLAGS, has_any

    return has_any(EXACT_INT8_FLAGS)


def vnni_pattern_kernels() -> bool:
    """The cpu target's C compiler (-march=native here) has what xgen-int8-pattern-kernels
    needs by default (AVX512-VNNI and VBMI, no AMX-INT8): pattern-pruned int8 convs then run
    in that kernel."""
    from xgen_mlir.passes.int8_pattern_kernels import Int8PatternOptions, target_has_units

    return target_has_units(Int8PatternOptions())


def assert_int8_offload(offload: dict, expected: dict) -> None:
    """``expected`` on a CPU with VNNI; without it no integer op goes to oneDNN (its s8 sums
    saturate there), each counted as kept (a depthwise conv, f32 on the integers where it
    is not an s8 primitive, is a float op the library takes)."""
    if int8_exact_in_ort():
        assert offload == expected, offload
        return
    integer = {k: n for k, n in offload.items() if not k.startswith(FLOAT_DEPTHWISE)}
    assert integer and all(k.endswith("kept: onednn has no primitive for it") for k in integer), (
        offload
    )


FLOAT_DEPTHWISE = "linalg.depthwise_conv_2d_nhwc_hwc -> onednn"


def _ms_ops():
    """numpy implementations of the com.microsoft integer ops the tests' models hold, for
    ONNX's reference evaluator (it knows the standard domain only)."""
    from onnx.reference.op_run import OpRun

    def dequant_matmul(a, azp, b, bzp, a_scale, b_scale, bias):
        acc = (a.astype(np.int64) - np.int64(0 if azp is None else azp)) @ (
            b.astype(np.int64) - (0 if bzp is None else bzp.astype(np.int64))
        )
        out = acc.astype(np.float64) * a_scale * b_scale
        return (out + (0 if bias is None else bias)).astype(np.float32)

    class MatMulIntegerToFloat(OpRun):
        op_domain = "com.microsoft"

        def _run(self, a, b, a_scale, b_scale, a_zp=None, b_zp=None, bias=None):
            return (dequant_matmul(a, a_zp, b, b_zp, a_scale, b_scale, bias),)

    class DynamicQuantizeMatMul(OpRun):
        op_domain = "com.microsoft"

        def _run(self, a, b, b_scale, b_zp=None, bias=None):
            # DynamicQuantizeLinear's uint8 quantization of A, then the integer product
            lo, hi = min(0.0, float(a.min())), max(0.0, float(a.max()))
            scale = np.float32((hi - lo) / 255.0) if hi > lo else np.float32(1.0)
            zp = np.clip(np.rint(-lo / scale), 0, 255)
            aq = np.clip(np.rint(a / scale) + zp, 0, 255)
            return (dequant_matmul(aq, zp, b, b_zp, scale, b_scale, bias),)

    return [MatMulIntegerToFloat, DynamicQuantizeMatMul]


def int8_reference(proto, feeds: dict[str, np.ndarray]) -> np.ndarray:
    """The first output of quantized ONNX model ``proto`` on ``feeds``: ONNX Runtime where its
    integer kernels are exact here (VNNI), else ONNX's reference evaluator (the ONNX
    semantics, exactly) unless the model holds contrib ops it cannot run."""
    import onnx

    if isinstance(proto, (str, bytes)) or hasattr(proto, "__fspath__"):
        proto = onnx.load(str(proto))
    known = {op.__name__ for op in _ms_ops()}
    foreign = any(n.domain == "com.microsoft" and n.op_type not in known for n in proto.graph.node)
    if int8_exact_in_ort() or foreign:  # ORT also for contrib ops the evaluator lacks
        import onnxruntime as ort

        sess = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
        return np.asarray(sess.run(None, feeds)[0])
    from onnx.reference import ReferenceEvaluator
    from onnx.version_converter import convert_version

    # the evaluator implements Quantize/DequantizeLinear from opset 19 (same semantics for
    # the per-tensor and per-axis forms the tests' older exports use)
    opset = next((o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")), 21)
    if opset < 19:
        proto = convert_version(proto, 19)
    return np.asarray(ReferenceEvaluator(proto, new_ops=_ms_ops()).run(None, feeds)[0])
