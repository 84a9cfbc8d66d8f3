"""int8: compress.quantize (ONNX Runtime's post-training quantization), compile(precision="int8")
and the per-channel QDQ rewrite into integer contractions (frontend/onnx_quant.py).

The tight reference of a quantized model is ONNX Runtime running the same quantized file: the
compiled module may differ by one step of the output's quantization scale (a rounding tie).
Against the fp32 model the error is the quantization's: loose bounds, and the report gives it.
"""

from __future__ import annotations

import copy
import re
import warnings
from collections import Counter
from typing import Any

import numpy as np
import onnx
import pytest
import torch
from conftest import (
    assert_int8_offload,
    check_close,
    int8_exact_in_ort,
    int8_reference,
    vnni_pattern_kernels,
)
from onnx import helper, numpy_helper

import xgen_mlir
from xgen_mlir import compress
from xgen_mlir.errors import FallbackWarning, XGenError
from xgen_mlir.frontend.onnx_import import import_onnx
from xgen_mlir.frontend.onnx_quant import rewrite_per_channel_contractions
from xgen_mlir.models import mlp, small_cnn
from xgen_mlir.pipelines import pipelines_dir
from xgen_mlir.target import TargetFacts, host_fact, integer_contractions
from xgen_mlir.tunedb import TuningDB


def _calibration(n: int = 8, shape: tuple[int, ...] = (1, 3, 32, 32)) -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(1)
    return [torch.randn(shape, generator=gen) for _ in range(n)]


def _ort(proto: onnx.ModelProto, *arrays: np.ndarray) -> np.ndarray:
    """ONNX Runtime's output, or the exact ONNX semantics where its int8 kernels saturate
    (a CPU without VNNI: ``conftest.int8_reference``)."""
    weights = {t.name for t in proto.graph.initializer}
    names = [i.name for i in proto.graph.input if i.name not in weights]
    return int8_reference(proto, dict(zip(names, arrays, strict=True)))


def _output_step(proto: onnx.ModelProto) -> float:
    inits = {t.name: numpy_helper.to_array(t) for t in proto.graph.initializer}
    node = next(n for n in proto.graph.node if proto.graph.output[0].name in n.output)
    assert node.op_type == "DequantizeLinear", node.op_type
    return float(inits[node.input[1]])


def test_static_int8_small_cnn() -> None:
    model, x = small_cnn(), torch.randn(1, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    cal = _calibration()
    compiled = xgen_mlir.compile(model, x, precision="int8", calibration=cal)
    r = compiled.report
    assert r.precision == "int8"
    assert r.quantization["mode"] == "static" and r.quantization["per_channel"] is True
    assert r.quantization["observer"] == "minmax" and r.quantization["calibration_samples"] == 8
    # two per-channel convs and the per-channel classifier: all integer, none float
    assert r.quantization["contractions"] == {"integer": 3, "float": 0}
    got = np.asarray(compiled(x.numpy()))
    # tight: ONNX Runtime on the same quantized model (same settings, same samples)
    quantized = compress.quantize(model, x, calibration=cal)
    want = _ort(quantized, x.numpy())
    check_close(got, want, atol=_output_step(quantized) * 1.001, rtol=0, what="int8 vs ORT")
    # loose: against fp32, the quantization's own error, which the report gives
    with torch.no_grad():
        fp32 = model(x).numpy()
    rel = float(np.linalg.norm(got - fp32) / np.linalg.norm(fp32))
    assert 0 < rel < 0.1, rel
    (err,) = r.precision_errors
    assert 0 < err["rel_l2"] < 0.1 and r.precision_inputs == "example inputs"
    assert "contractions: 3 integer (i8 x i8 -> i32), 0 float" in r.text()


def _assert_same_but_rounding(got: np.ndarray, want: np.ndarray) -> None:
    """The same integer sums, dequantized by another f32 epilogue (oneDNN's in an s8f
    primitive): within a few f32 roundings of the largest output."""
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-6 * float(np.abs(want).max()))


def test_int8_convs_and_linear_offloaded_to_onednn() -> None:
    """offload=onednn: the integer convs (with their zero-point padding) and the integer
    classifier run as oneDNN s8 primitives (the classifier's dequantization and bias in its
    epilogue, s8f), and the output is IREE's own integer code's but for the rounding of
    that epilogue (integer sums are exact) and within one output step of ONNX Runtime
    (integer_contractions=integer: the integer ops as such, on any host)."""
    model, x = small_cnn(), torch.randn(1, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    cal = _calibration()
    common = dict(precision="int8", calibration=cal, precision_check=False)
    integer = {"integer_contractions": "integer"}
    offloaded = xgen_mlir.compile(
        model, x, target_options={"offload": "onednn", **integer}, **common
    )
    assert_int8_offload(
        offloaded.report.offload,
        {
            "linalg.conv_2d_nchw_fchw_q -> NHWC for onednn": 2,
            # (the first conv's pool pools its int8 values: xgen-quantized-max-pool)
            "linalg.conv_2d_nhwc_hwcf_q -> onednn (int8 +requantize+bias)": 1,
            "linalg.conv_2d_nhwc_hwcf_q -> onednn (int8)": 1,
            "linalg.quantized_matmul -> onednn (int8 +dequantize+bias)": 1,
        },
    )
    own = xgen_mlir.compile(model, x, target_options={"offload": "none", **integer}, **common)
    assert own.report.offload == {}
    got = np.asarray(offloaded(x.numpy()))
    _assert_same_but_rounding(got, np.asarray(own(x.numpy())))
    # the 16 -> 32 conv's two parts along its output channels (conv_split): each computes its
    # int32 share into a dense buffer from its dense share of the int8 weights; the same sums
    channels = {"offload": "onednn", "conv_split": "columns", "threads": "2", **integer}
    split = xgen_mlir.compile(model, x, target_options=channels, **common)
    if "linalg.conv_2d_nhwc_hwcf_q -> onednn (int8)" in split.report.offload:
        assert np.array_equal(np.asarray(split(x.numpy())), got)
    quantized = compress.quantize(model, x, calibration=cal)
    want = _ort(quantized, x.numpy())
    check_close(got, want, atol=_output_step(quantized) * 1.001, rtol=0, what="oneDNN int8")


def _two_convs() -> torch.nn.Module:
    """conv-bn-relu three times, back to back (each output quantized straight into the next
    conv's source; the middle conv 1x1, a matmul), then a pool and a linear head."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, padding=1),
        torch.nn.BatchNorm2d(16),
        torch.nn.ReLU(),
        torch.nn.Conv2d(16, 32, 1),
        torch.nn.BatchNorm2d(32),
        torch.nn.ReLU(),
        torch.nn.Conv2d(32, 32, 3, padding=1),
        torch.nn.AdaptiveAvgPool2d(1),
        torch.nn.Flatten(),
        torch.nn.Linear(32, 10),
    )
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.uniform_(-0.5, 0.5)
            m.running_var.uniform_(0.5, 2.0)
    return model.eval()


def test_int8_conv_requantized_in_onednn() -> None:
    """A conv whose output the model quantizes straight away (the next conv's source) is one
    s8q primitive: the int32 sums scaled per channel, the bias, the output's scale, zero
    point and saturation all in oneDNN, the int8 output written once (the output's scale
    folded into the per-channel scales: f32 rounding can move a value within an ulp of a
    half to the other integer, as ONNX Runtime's own requantization can). The output is
    within one output step of ONNX Runtime's and of IREE's own integer code, and the same
    whether the convs are split along their rows or their output channels."""
    model, x = _two_convs(), torch.randn(1, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    cal = _calibration()
    common = dict(precision="int8", calibration=cal, precision_check=False)
    integer = {"integer_contractions": "integer"}
    outs = {}
    for split in ("rows", "columns"):
        options = {"offload": "onednn", "conv_split": split, "threads": "2", **integer}
        compiled = xgen_mlir.compile(model, x, target_options=options, **common)
        outs[split] = np.asarray(compiled(x.numpy()))
        if split == "rows":
            requantized = "-> onednn (int8 +requantize+bias)"
            assert_int8_offload(
                compiled.report.offload,
                {
                    "linalg.conv_2d_nchw_fchw_q -> NHWC for onednn": 2,
                    f"linalg.conv_2d_nhwc_hwcf_q {requantized}": 1,
                    f"linalg.quantized_batch_matmul {requantized}": 1,  # (the 1x1 conv)
                    # (the last conv, dequantized for the pool after it)
                    "linalg.conv_2d_nhwc_hwcf_q -> onednn (int8)": 1,
                    "linalg.quantized_matmul -> onednn (int8 +dequantize+bias)": 1,
                },
            )
    own = xgen_mlir.compile(model, x, target_options={"offload": "none", **integer}, **common)
    quantized = compress.quantize(model, x, calibration=cal)
    step = _output_step(quantized) * 1.001
    check_close(outs["rows"], _ort(quantized, x.numpy()), atol=step, rtol=0, what="s8q vs ORT")
    check_close(outs["rows"], np.asarray(own(x.numpy())), atol=step, rtol=0, what="s8q vs IREE")
    assert np.array_equal(outs["rows"], outs["columns"])


def _check_s8q_model(model: torch.nn.Module, expected: dict, what: str) -> Any:
    """``model`` compiled in int8 with every integer op in oneDNN: its report's offload is
    ``expected`` and its output within one output step of ONNX Runtime's and of IREE's own
    integer code. Returns the compiled module."""
    x = torch.randn(1, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    cal = _calibration()
    common = dict(precision="int8", calibration=cal, precision_check=False)
    integer = {"integer_contractions": "integer"}
    options = {"offload": "onednn", "threads": "2", **integer}
    compiled = xgen_mlir.compile(model, x, target_options=options, **common)
    assert_int8_offload(compiled.report.offload, expected)
    own = xgen_mlir.compile(model, x, target_options={"offload": "none", **integer}, **common)
    quantized = compress.quantize(model, x, calibration=cal)
    step = _output_step(quantized) * 1.001
    got = np.asarray(compiled(x.numpy()))
    check_close(got, _ort(quantized, x.numpy()), atol=step, rtol=0, what=f"{what} vs ORT")
    check_close(got, np.asarray(own(x.numpy())), atol=step, rtol=0, what=f"{what} vs IREE")
    return compiled


class _ResidualBlocks(torch.nn.Module):
    """A stem, then two residual blocks as ResNet has them: one whose shortcut is its input,
    one whose shortcut is a 1x1 stride-2 conv; a pool and a linear head."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        conv = torch.nn.Conv2d
        self.stem = conv(3, 16, 3, padding=1)
        self.a1, self.a2 = conv(16, 16, 3, padding=1), conv(16, 16, 3, padding=1)
        self.b1, self.b2 = conv(16, 32, 3, stride=2, padding=1), conv(32, 32, 3, padding=1)
        self.down = conv(16, 32, 1, stride=2)
        self.head = torch.nn.Linear(32, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.stem(x))
        x = torch.relu(self.a2(torch.relu(self.a1(x))) + x)
        x = torch.relu(self.b2(torch.relu(self.b1(x))) + self.down(x))
        return self.head(x.mean((2, 3)))


def test_int8_residual_block_convs_requantized_in_onednn() -> None:
    """In a quantized residual block the block's last conv and the shortcut conv are
    quantized and dequantized again before the add (QDQ): their output quantize writes its
    integers as floats that only the dequantize, the add and the block's requantize read.
    They are s8q primitives too (the int8 written once, converted back where the add reads
    it), as in the last block, whose output the mean reads as floats. Within one output step
    of ONNX Runtime and of IREE's own integer code."""
    requantized = "-> onednn (int8 +requantize+bias)"
    expected = {
        "linalg.conv_2d_nchw_fchw_q -> NHWC for onednn": 6,
        f"linalg.conv_2d_nhwc_hwcf_q {requantized}": 6,  # (a2, b2 and down among them)
        "linalg.quantized_matmul -> onednn (int8 +dequantize+bias)": 1,
    }
    _check_s8q_model(_ResidualBlocks().eval(), expected, "s8q")


def test_int8_max_pool_pools_the_integers() -> None:
    """A stem's max pool between the dequantize of its conv's output and a quantize with the
    same parameters pools the int8 values (xgen-quantized-max-pool: exact), so the stem conv
    requantizes in its s8q primitive; the output within one step of ONNX Runtime's and of
    IREE's own integer code, and the report counts the rewrite."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.MaxPool2d(3, 2, 1),
        torch.nn.Conv2d(16, 16, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1),
        torch.nn.Flatten(),
        torch.nn.Linear(16, 10),
    ).eval()
    expected = {
        "linalg.conv_2d_nchw_fchw_q -> NHWC for onednn": 2,
        "linalg.conv_2d_nhwc_hwcf_q -> onednn (int8 +requantize+bias)": 1,  # (the stem)
        "linalg.conv_2d_nhwc_hwcf_q -> onednn (int8)": 1,  # (read by the mean as floats)
        "linalg.quantized_matmul -> onednn (int8 +dequantize+bias)": 1,
    }
    compiled = _check_s8q_model(model, expected, "int8 pool")
    assert compiled.report.rewrites.get("xgen-quantized-max-pool", {}) == {
        "max pools on int8": 1
    }, compiled.report.rewrites


def test_untuned_int8_convs_start_in_onednn(tmp_path) -> None:
    """Before any tune (an empty database), compile(precision="int8") puts the integer convs
    and the integer classifier in oneDNN (the prior: IREE has no fast integer conv, and its i8
    matmuls lost to oneDNN's on both AMD hosts), and the report says why; offload="none"
    keeps everything with IREE (integer_contractions=integer: the integer ops as such)."""
    model, x = small_cnn(), torch.randn(1, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    common = dict(precision="int8", calibration=_calibration(), precision_check=False)
    with TuningDB(tmp_path / "empty.db"):
        pass
    integer = {"integer_contractions": "integer"}
    compiled = xgen_mlir.compile(
        model, x, tuning_db=tmp_path / "empty.db", target_options=integer, **common
    )
    assert_int8_offload(
        compiled.report.offload,
        {
            "linalg.conv_2d_nchw_fchw_q -> NHWC for onednn": 2,
            # (the first conv's pool pools its int8 values: xgen-quantized-max-pool)
            "linalg.conv_2d_nhwc_hwcf_q -> onednn (int8 +requantize+bias)": 1,
            "linalg.conv_2d_nhwc_hwcf_q -> onednn (int8)": 1,
            "linalg.quantized_matmul -> onednn (int8 +dequantize+bias)": 1,
        },
    )
    decisions = sorted(
        (d, w.split(":")[0])
        for op, d, w in compiled.report.tuning.choices
        if not op.startswith("split of")  # (the convs' split as a group: its own line)
    )
    assert decisions == [("onednn s8", "no measurement on this host")] * 3, decisions
    kept = xgen_mlir.compile(model, x, target_options={"offload": "none", **integer}, **common)
    assert kept.report.offload == {}
    _assert_same_but_rounding(np.asarray(compiled(x.numpy())), np.asarray(kept(x.numpy())))


def test_dynamic_int8_transformer_offloaded_to_onednn(tmp_path) -> None:
    """Dynamic int8 (activations quantized at run time, their zero point computed by the
    model): each Linear of a 2-layer BERT is a oneDNN integer matmul reading the uint8
    quantization's bytes (u8f: the frontend's "- 128" to int8 dropped, the zero point plus
    128) and taking that zero point as an operand, with its dequantization (the per-column
    scales the model computes from the source's, an operand too), its bias and GELU in the
    primitive, split along the rows or (matmul_split=columns: each share computed into a
    dense buffer, then copied into place) the columns; attention's products of two
    activations stay with IREE. The int32 sums are the same as IREE's integer code; the f32
    epilogue rounds as oneDNN's (its GELU
    is not IREE's erf), so the outputs agree within a few f32 roundings."""
    from xgen_mlir.models.transformers_zoo import bert_tiny

    model, example = bert_tiny()
    common = dict(precision="int8", quantization={"mode": "dynamic"}, precision_check=False)
    outs = []
    for offload, split in (("onednn", "count"), ("onednn", "columns"), ("none", "count")):
        options = {"offload": offload, "integer_contractions": "integer", "matmul_split": split}
        dump = tmp_path / f"{offload}-{split}"
        compiled = xgen_mlir.compile(model, example, target_options=options, dump_ir=dump, **common)
        out = compiled(*[e.numpy() for e in example])
        outs.append(np.asarray(out[0] if isinstance(out, tuple) else out))
        final = sorted(dump.glob("*.mlir"))[-1].read_text()
        parts = set(re.findall(r"xgen_dnnl_matmul_u8f_\w+_([pc])\d+\b", final))
        if offload == "onednn" and int8_exact_in_ort():
            # the uint8 quantization's bytes as the library's source (no "- 128" to int8)
            assert "xgen_dnnl_matmul_s8" not in final
            # the rows by count; the columns where asked (16 rows, 32 or 64 columns)
            assert parts == ({"p"} if split == "count" else {"c"}), parts
        if offload == "onednn":
            library = "-> onednn (int8 +dequantize+bias"
            kept = "kept: onednn has no primitive for it"
            assert compiled.report.offload == (
                {
                    f"linalg.quantized_batch_matmul {library})": 10,
                    f"linalg.quantized_batch_matmul {library}+gelu)": 2,
                    "linalg.batch_matmul kept: right operand not a constant": 4,
                }
                if int8_exact_in_ort()
                else {
                    f"linalg.quantized_batch_matmul {kept}": 12,
                    "linalg.batch_matmul kept: right operand not a constant": 4,
                }
            )
    tolerance = 1e-6 * float(np.abs(outs[2]).max())  # (2.4e-7 of 3.0 when this was written)
    np.testing.assert_allclose(outs[0], outs[2], rtol=0, atol=tolerance)
    np.testing.assert_allclose(outs[1], outs[2], rtol=0, atol=tolerance)


def test_int8_float_ops_in_bf16() -> None:
    """int8_float_ops=bf16: the float contractions a dynamically quantized 2-layer BERT keeps
    (its attention cores) run with bf16 products on a CPU with bf16 dot products, the rest as
    in int8; the output moves by bf16's rounding, far less than the quantization's error.
    Elsewhere the option falls back to f32 with a warning, and the output is int8's."""
    from xgen_mlir.errors import FallbackWarning
    from xgen_mlir.models.transformers_zoo import bert_tiny
    from xgen_mlir.target import NATIVE_BF16_FLAGS, has_any

    model, example = bert_tiny()
    common = dict(precision="int8", quantization={"mode": "dynamic"}, precision_check=False)
    f32 = xgen_mlir.compile(model, example, **common)
    bf16 = has_any(NATIVE_BF16_FLAGS)
    warns = pytest.warns(FallbackWarning, match="int8_float_ops=bf16")
    with warnings.catch_warnings() if bf16 else warns:
        if bf16:
            warnings.simplefilter("error", FallbackWarning)
        mixed = xgen_mlir.compile(
            model, example, target_options={"int8_float_ops": "bf16"}, **common
        )
    counts = mixed.report.rewrites.get("xgen-attention-kernels", {})
    assert counts.get("attention kernels") == 2, mixed.report.rewrites
    assert counts.get("with bf16 products", 0) == (2 if bf16 else 0), counts
    args = [e.numpy() for e in example]
    want = np.asarray(f32(*args)[0] if isinstance(f32(*args), tuple) else f32(*args)).copy()
    got = mixed(*args)
    got = np.asarray(got[0] if isinstance(got, tuple) else got)
    err = float(np.abs(got - want).max() / np.abs(want).max())
    assert (1e-5 < err < 2e-2) if bf16 else err == 0.0, f"relative change {err:.2e}"


def test_integer_contractions_in_f32_equal_the_integer_code() -> None:
    """integer_contractions=float: each integer conv and Linear is the f32 contraction of the
    same integers, rounded back to i32; every sum here stays below 2^24, so the outputs are
    the very same as IREE's integer code, static (convs with zero-point padding, the
    classifier) and dynamic (a 2-layer BERT: the zero point computed at run time). The report
    says how many; auto is kernel on a CPU with AVX2 or AVX-512 and no exact int8 dot product
    (the classifier in the 16-bit kernel, the convs in f32) and keeps integer matmuls on one
    with it; a one-row matmul (the classifier) converts for the pointwise matrix-vector
    kernel, which takes it. integer_contractions=kernel: the BERT's 12 Linear layers in the
    exact 16-bit multiply-add kernel, each with its dequantize (and bias, GELU, residual add)
    fused after the exact i32 sums: the same output but for the rounding of those f32 ops
    (the kernel's erf is not IREE's), within 1e-6."""
    from xgen_mlir.models.transformers_zoo import bert_tiny

    model, x = small_cnn(), torch.randn(1, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    common = dict(precision="int8", calibration=_calibration(), precision_check=False)
    outs, reports = {}, {}
    for mode in ("float", "integer", "auto"):
        options = {"offload": "none", "integer_contractions": mode}
        compiled = xgen_mlir.compile(model, x, target_options=options, **common)
        outs[mode], reports[mode] = np.asarray(compiled(x.numpy())), compiled.report
    assert np.array_equal(outs["float"], outs["integer"])
    assert np.array_equal(outs["auto"], outs["integer"])
    # the two convs and the classifier (its one row in the pointwise matrix-vector kernel)
    assert reports["float"].quantization["computed_in_f32"] == 3
    assert reports["float"].rewrites["xgen-pointwise-kernels"] == {
        "matrix-vector products replaced": 1
    }
    assert reports["integer"].quantization["computed_in_f32"] == 0
    # auto: with VNNI the convs no library takes (offload=none: both); without it, the
    # classifier in the 16-bit kernel (AVX2, AVX-512) and the convs in f32, or all three in f32
    auto = integer_contractions(
        TargetFacts(host_fact("vector_bits"), 0, 0, host_fact("exact_int8"))
    )
    assert reports["auto"].quantization["computed_in_f32"] == (3 if auto == "float" else 2)
    assert reports["auto"].quantization["in_int16_kernels"] == (auto == "kernel")
    assert "3 integer contraction(s) computed as f32" in reports["float"].text()
    assert "computed as f32" not in reports["integer"].text()

    model, example = bert_tiny()
    arrays = [e.numpy() for e in example]
    common = dict(precision="int8", quantization={"mode": "dynamic"}, precision_check=False)
    got = []
    for mode in ("float", "integer", "kernel"):
        options = {"offload": "none", "integer_contractions": mode}
        compiled = xgen_mlir.compile(model, example, target_options=options, **common)
        out = compiled(*arrays)
        got.append(np.asarray(out[0] if isinstance(out, tuple) else out))
        q = compiled.report.quantization
        assert q["computed_in_f32"] == (12 if mode == "float" else 0)
        assert q["in_int16_kernels"] == (12 if mode == "kernel" else 0)
        if mode == "kernel":
            fused = compiled.report.rewrites["xgen-integer-gemm-kernels"]
            assert fused["of them with their dequantize epilogues"] == 12, fused
    assert np.array_equal(got[0], got[1])
    assert float(np.abs(got[2] - got[1]).max() / np.abs(got[1]).max()) < 1e-6
    assert "12 integer Linear layer(s) in the exact 16-bit" in compiled.report.text()
    assert "12 with the dequantize after it fused" in compiled.report.text()


def test_int16_kernel_takes_odd_shapes_and_leaves_block_pruned_layers() -> None:
    """integer_contractions=kernel on a static int8 MLP whose shapes are no whole tiles (13
    rows, 45 inputs: K odd, padded with a zero input; 70 and 33 outputs: partial panels):
    the very output of IREE's integer code. A block-pruned layer stays for the block-sparse
    kernel (its f32 form), the dense one takes the 16-bit kernel."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(45, 70), torch.nn.ReLU(), torch.nn.Linear(70, 33)
    ).eval()
    x = torch.randn(13, 45, generator=torch.Generator().manual_seed(2))
    cal = [torch.randn(13, 45, generator=torch.Generator().manual_seed(i)) for i in range(4)]
    common = dict(precision="int8", calibration=cal, precision_check=False)
    outs, reports = {}, {}
    for mode in ("kernel", "integer"):
        options = {"offload": "none", "integer_contractions": mode}
        compiled = xgen_mlir.compile(model, x, target_options=options, **common)
        outs[mode], reports[mode] = np.asarray(compiled(x.numpy())), compiled.report
    assert reports["kernel"].quantization["in_int16_kernels"] == 2
    assert np.array_equal(outs["kernel"], outs["integer"])

    wide = torch.nn.Sequential(
        torch.nn.Linear(128, 256), torch.nn.ReLU(), torch.nn.Linear(256, 96)
    ).eval()
    pruned = torch.nn.Sequential(*[copy.deepcopy(m) for m in wide])
    pruned[0] = compress.prune(torch.nn.Sequential(pruned[0]), (torch.randn(32, 128),),
                               scheme="block", rate=4.0)[0]  # fmt: skip
    x = torch.randn(32, 128, generator=torch.Generator().manual_seed(0))
    compiled = xgen_mlir.compile(
        pruned, (x,), precision="int8", quantization={"mode": "dynamic"}, precision_check=False,
        target_options={"offload": "none", "integer_contractions": "kernel"},
    )  # fmt: skip
    rw = compiled.report.rewrites
    assert rw["xgen-integer-gemm-kernels"]["int16 kernels"] == 1, rw
    assert any(k.startswith("kept: block-pruned") for k in rw["xgen-integer-gemm-kernels"]), rw
    assert rw["xgen-raise-block-linear"]["raised"] == 1, rw
    from conftest import int8_reference

    quantized = compress.quantize(pruned, (x,), mode="dynamic")
    want = int8_reference(quantized, {quantized.graph.input[0].name: x.numpy()})
    got = np.asarray(compiled(x.numpy()))
    assert float(np.abs(got - want).max() / np.abs(want).max()) < 1e-5


def test_dynamic_int8_linear_model() -> None:
    model, x = mlp(), torch.randn(1, 64, generator=torch.Generator().manual_seed(0))
    compiled = xgen_mlir.compile(
        model, x, precision="int8", quantization={"mode": "dynamic"}, precision_check=False
    )
    r = compiled.report
    assert r.quantization["mode"] == "dynamic" and r.quantization["gemm_as_matmul"] == 2
    assert r.quantization["contractions"] == {"integer": 2, "float": 0}
    quantized = compress.quantize(model, x, mode="dynamic")
    ops = Counter(n.op_type for n in quantized.graph.node)
    assert ops["DynamicQuantizeLinear"] == 2 and ops["MatMulInteger"] == 2
    got, want = np.asarray(compiled(x.numpy())), _ort(quantized, x.numpy())
    check_close(got, want, atol=1e-5 * float(np.abs(want).max()), rtol=0, what="dynamic")
    with torch.no_grad():
        fp32 = model(x).numpy()
    assert 0 < float(np.linalg.norm(got - fp32) / np.linalg.norm(fp32)) < 0.05


def test_missing_or_bad_calibration_is_a_clear_error() -> None:
    model, x = small_cnn(), torch.randn(1, 3, 32, 32)
    with pytest.raises(XGenError, match="static int8 quantization needs calibration data"):
        xgen_mlir.compile(model, x, precision="int8")
    with pytest.raises(XGenError, match=r"calibration sample 1, input 'input0': shape \[1, 3, 8"):
        compress.quantize(model, x, calibration=[x, torch.randn(1, 3, 8, 8)])
    with pytest.raises(XGenError, match="takes no calibration data"):
        compress.quantize(model, x, calibration=[x], mode="dynamic")
    with pytest.raises(XGenError, match="unknown observer 'kl'; known observers: distribution"):
        compress.quantize(model, x, calibration=[x], observer="kl")


@pytest.mark.parametrize("observer", ["percentile", "distribution"])
def test_observers_change_the_ranges(observer: str) -> None:
    model, x = small_cnn(), torch.randn(1, 3, 32, 32)
    cal = _calibration(4)

    def scales(proto: onnx.ModelProto) -> list[float]:
        inits = {t.name: numpy_helper.to_array(t) for t in proto.graph.initializer}
        return [float(inits[n.input[1]]) for n in proto.graph.node if n.op_type == "QuantizeLinear"]

    base = compress.quantize(model, x, calibration=cal)
    other = compress.quantize(model, x, calibration=cal, observer=observer)
    assert compress.quantization_settings(other)["observer"] == observer  # type: ignore[index]
    assert scales(base) != scales(other)


@pytest.mark.parametrize("mode", ["float", "integer"])
def test_pruned_int8_model_keeps_its_zeros_and_its_pattern_kernels(mode: str) -> None:
    """A pattern-pruned model quantized to int8: every pruned weight is an exact int8 zero, and
    where its integer convs are computed in f32 (integer_contractions=float, the default on a
    CPU without VNNI) the pattern kernels take them, within one output step of ONNX Runtime;
    kept integer, the VNNI pattern kernel takes them where the host has one, and elsewhere
    they run dense, and the compile says so once."""
    x = torch.randn(1, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    pruned = compress.prune(small_cnn(), (x,), group_size=8, connectivity=0.3)
    quantized = compress.quantize(pruned, x, calibration=_calibration(2))
    inits = {t.name: numpy_helper.to_array(t) for t in quantized.graph.initializer}
    producers = {o: n for n in quantized.graph.node for o in n.output}
    convs = [n for n in quantized.graph.node if n.op_type == "Conv"]
    layers = compress.pruned_layers(pruned)
    assert len(layers) == 2 and len(convs) == 2
    for conv, layer in zip(convs, layers.values(), strict=True):
        w_q = inits[producers[conv.input[1]].input[0]]
        zeros = (layer.weight == 0).numpy()  # type: ignore[operator]
        assert zeros.sum() > 0 and w_q.dtype == np.int8
        assert (w_q[zeros] == 0).all()  # every pruned weight is an exact int8 zero
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = xgen_mlir.compile(
            pruned,
            x,
            precision="int8",
            calibration=_calibration(2),
            precision_check=False,
            target_options={"integer_contractions": mode, "offload": "none"},
        )
    said = [w for w in caught if issubclass(w.category, FallbackWarning) and "pruned" in str(w)]
    r = compiled.report
    assert set(r.quantization["pruned_layers"]) == set(layers)
    got = np.asarray(compiled(x.numpy()))
    want = _ort(quantized, x.numpy())
    check_close(got, want, atol=_output_step(quantized) * 1.001, rtol=0, what="int8 vs ORT")
    # the quantized file itself, compiled: its metadata names the pruned layers too
    again = xgen_mlir.compile(
        quantized, None, precision="int8", precision_check=False, target_options={"offload": "none"}
    )
    assert set(again.report.quantization["pruned_layers"]) == set(layers)
    if mode == "float":
        assert r.rewrites["xgen-lower-fkw-kernels"] == {"pattern kernels": 2}
        assert not said, [str(w.message) for w in said]
        assert "2 pruned layer(s) (0, 4) are computed in f32" in r.precision_note
        assert "2 sparse kernel(s)" in r.precision_note
    elif vnni_pattern_kernels():  # integer convs: the int8 pattern kernel takes them
        done = r.rewrites["xgen-int8-pattern-kernels"]
        assert done["int8 pattern kernels"] == 2, done
        assert "xgen-lower-fkw-kernels" not in r.rewrites
        assert not said, [str(w.message) for w in said]
        assert "2 on their int8 values in dot products" in r.precision_note
    else:
        assert "xgen-lower-fkw-kernels" not in r.rewrites
        assert len(said) == 1, [str(w.message) for w in caught]
        assert "run as dense integer contractions" in r.precision_note


# --- the per-channel rewrite on small hand-made graphs (no compile) ---------------------------


def _graph(
    op: str, *, per_channel: bool = True, w_zp: int = 0, act_dq: bool = True, w_const: bool = True
) -> onnx.ModelProto:
    """x (int8, from QuantizeLinear) -> DQ -> op with a DQ'd int8 weight (+ bias)."""
    rng = np.random.default_rng(0)
    c = 4
    shape = {"Conv": (c, 3, 3, 3), "Conv1x1": (c, 3, 1, 1), "Gemm": (c, 6), "MatMul": (6, c)}[op]
    axis = 1 if op == "MatMul" else 0
    w = rng.integers(-127, 128, shape, dtype=np.int8)
    n = c if per_channel else 1
    w_s = rng.uniform(0.01, 0.02, n).astype(np.float32)
    inits = [
        numpy_helper.from_array(w_s if per_channel else w_s.reshape(()), "w_s"),
        numpy_helper.from_array(np.full(n if per_channel else (), w_zp, np.int8), "w_zp"),
        numpy_helper.from_array(np.array(0.05, np.float32), "x_s"),
        numpy_helper.from_array(np.array(3, np.int8), "x_zp"),
    ]
    if op != "MatMul":
        inits.append(numpy_helper.from_array(rng.standard_normal(c).astype(np.float32), "bias"))
    x_shape = {"Conv": [1, 3, 8, 8], "Conv1x1": [2, 3, 8, 8], "Gemm": [2, 6], "MatMul": [2, 5, 6]}[
        op
    ]
    inputs = [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, x_shape)]
    if w_const:
        inits.append(numpy_helper.from_array(w, "w"))
    else:
        inputs.append(helper.make_tensor_value_info("w", onnx.TensorProto.INT8, list(shape)))
    nodes = [helper.make_node("QuantizeLinear", ["x", "x_s", "x_zp"], ["xq"], "q")]
    nodes.append(helper.make_node("DequantizeLinear", ["xq", "x_s", "x_zp"], ["xf"], "dqx"))
    kw = {"axis": axis} if per_channel else {}
    nodes.append(helper.make_node("DequantizeLinear", ["w", "w_s", "w_zp"], ["wf"], "dqw", **kw))
    a = "xf" if act_dq else "x"
    if op == "Conv":
        nodes.append(helper.make_node("Conv", [a, "wf", "bias"], ["y"], "op", pads=[1, 1, 1, 1]))
    elif op == "Conv1x1":
        nodes.append(helper.make_node("Conv", [a, "wf", "bias"], ["y"], "op"))
    elif op == "Gemm":
        nodes.append(helper.make_node("Gemm", [a, "wf", "bias"], ["y"], "op", transB=1))
    else:
        nodes.append(helper.make_node("MatMul", [a, "wf"], ["y"], "op"))
    y_shape = {"Conv": [1, c, 8, 8], "Conv1x1": [2, c, 8, 8], "Gemm": [2, c], "MatMul": [2, 5, c]}[
        op
    ]
    y = helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, y_shape)
    graph = helper.make_graph(nodes, "g", inputs, [y], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("op", ["Conv", "Conv1x1", "Gemm", "MatMul"])
def test_per_channel_rewrite_fires_and_matches_ort(op: str) -> None:
    proto = _graph(op)
    shape = [d.dim_value for d in proto.graph.input[0].type.tensor_type.shape.dim]
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    want = _ort(proto, x)
    rewritten = onnx.ModelProto()
    rewritten.CopyFrom(proto)
    assert rewrite_per_channel_contractions(rewritten) == {op[:4] if op != "MatMul" else op: 1}
    ops = Counter(n.op_type for n in rewritten.graph.node)
    assert ops["Mul"] == 1  # the per-channel rescale
    check_close(_ort(rewritten, x), want, atol=1e-5, rtol=1e-5, what=f"rewritten {op}")
    text = str(import_onnx(proto)[0])
    kind = "linalg.conv_2d_nchw_fchw_q" if op == "Conv" else "linalg.quantized_"
    assert kind in text, text[:2000]
    # a 1x1 conv is a MatMul over channels (NHWC), which gets IREE's i8 matmul kernels
    assert ("linalg.conv_2d_nchw_fchw_q" in text) == (op == "Conv")
    got = np.asarray(xgen_mlir.compile(proto)(x)) if op in ("MatMul", "Conv1x1") else None
    if got is not None:
        check_close(got, want, atol=1e-5, rtol=1e-5, what="compiled")


@pytest.mark.parametrize("shared", ["weight", "bias"])
def test_per_channel_rewrite_sees_through_identity(shared: str) -> None:
    """The TorchScript exporter shares equal tensors through Identity nodes (ResNet-18: the
    biases of 16 of its 20 convs); the rewrite looks through them."""
    proto = _graph("Conv")
    if shared == "weight":
        node = next(n for n in proto.graph.node if n.name == "dqw")
        i = 0
    else:
        node = next(n for n in proto.graph.node if n.name == "op")
        i = 2
    proto.graph.node.insert(0, helper.make_node("Identity", [node.input[i]], ["shared"], "id"))
    node.input[i] = "shared"
    shape = [d.dim_value for d in proto.graph.input[0].type.tensor_type.shape.dim]
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    want = _ort(proto, x)
    assert rewrite_per_channel_contractions(proto) == {"Conv": 1}
    check_close(_ort(proto, x), want, atol=1e-5, rtol=1e-5, what=f"shared {shared}")


@pytest.mark.parametrize(
    "kw",
    [
        {"per_channel": False},  # per tensor: torch-mlir fuses it already
        {"w_zp": 2},  # zero points per channel: not symmetric
        {"act_dq": False},  # weight-only quantization: the activation is float
        {"w_const": False},  # weights not a constant
    ],
    ids=["per-tensor", "weight-zero-point", "float-activation", "weight-not-constant"],
)
def test_per_channel_rewrite_does_not_fire(kw: dict) -> None:
    proto = _graph("Conv", **kw)
    before = proto.SerializeToString()
    assert rewrite_per_channel_contractions(proto) == {}
    assert proto.SerializeToString() == before


def test_depthwise_per_channel_runs_on_exact_integers_in_f32() -> None:
    """A per-channel depthwise conv is rewritten too, but as an f32 conv on the integer values
    (exact: 9 products of int8 values stay far below 2^24), not torch-mlir's integer
    depthwise conv, which IREE ran slower than the f32 one (docs/precision.md)."""

    class Net(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.c = torch.nn.Conv2d(3, 8, 3, padding=1)
            self.dw = torch.nn.Conv2d(8, 8, 3, padding=1, groups=8)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.dw(torch.relu(self.c(x)))

    x = torch.randn(1, 3, 7, 7)  # an odd width: xgen-depthwise-tiles would fire (256 bits)
    quantized = compress.quantize(Net(), x, calibration=_calibration(2, (1, 3, 7, 7)))
    rewritten = onnx.ModelProto()
    rewritten.CopyFrom(quantized)
    assert rewrite_per_channel_contractions(rewritten) == {"Conv": 2}
    text = str(import_onnx(quantized)[0])
    assert text.count("linalg.conv_2d_nchw_fchw_q") == 1
    assert "depthwise_conv_2d_nhwc_hwc_q" not in text
    compiled = xgen_mlir.compile(quantized, target_options={"vector_bits": "256"})
    # the dispatch steps are used: the depthwise conv's dispatch dequantizes and requantizes
    # in f32 (xgen-elide-int-roundtrips keeps the quantized values f32), so it takes
    # xgen-depthwise-tiles' tiles, which IREE rejected in a dispatch converting to int8
    assert compiled.report.fusion_note == ""
    assert compiled.report.rewrites["xgen-elide-int-roundtrips"]["i8 tensors kept f32"] >= 1
    tiles = [t for p in compiled.report.fusion_plans for t in p.conv_tiles]
    assert tiles and all(t.taken for t in tiles), [(t.taken, t.reason) for t in tiles]
    got, want = np.asarray(compiled(x.numpy())), _ort(quantized, x.numpy())
    # ONNX's reference evaluator (a CPU without VNNI) runs the QDQ convs in float: a last-bit
    # difference at the inner requantize moves a value one step, which can reach two outputs
    steps = 1.001 if int8_exact_in_ort() else 2.001
    check_close(got, want, atol=_output_step(quantized) * steps, rtol=0, what="depthwise")


def test_cli_int8(tmp_path, capsys) -> None:
    from xgen_mlir.tools.xgen_compile import main

    src = tmp_path / "cnn.onnx"
    model, x = small_cnn(), torch.randn(1, 3, 32, 32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model, (x,), str(src), input_names=["input"], opset_version=17, dynamo=False
        )
    np.savez(tmp_path / "cal.npz", torch.stack(_calibration(4)).numpy())
    out = tmp_path / "cnn.vmfb"
    args = [str(src), "--precision", "int8", "--calibration", str(tmp_path / "cal.npz")]
    assert main([*args, "--observer", "percentile", "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "precision: int8" in text and "observer percentile" in text
    assert "3 integer (i8 x i8 -> i32), 0 float" in text and "relative error" in text
    assert main([str(src), "--precision", "int8", "-o", str(out)]) == 1
    assert "needs calibration data" in capsys.readouterr().err


class _InvertedResidual(torch.nn.Module):
    """A MobileNetV2 block at 16x16 (expand 1x1 + ReLU6, depthwise 3x3 + ReLU6, project 1x1,
    the residual add) and a classifier: int8 requantizes between every layer."""

    def __init__(self) -> None:
        super().__init__()
        nn = torch.nn
        self.expand = nn.Sequential(nn.Conv2d(8, 48, 1), nn.BatchNorm2d(48), nn.ReLU6())
        self.dw = nn.Sequential(nn.Conv2d(48, 48, 3, padding=1, groups=48), nn.ReLU6())
        self.project = nn.Conv2d(48, 8, 1)
        self.head = nn.Linear(8, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x + self.project(self.dw(self.expand(x)))
        return self.head(y.mean((2, 3)))


def test_int8_tensors_converted_back_stay_f32_and_exact(tmp_path) -> None:
    """xgen-elide-int-roundtrips: computed in f32 (integer_contractions=float), the quantized
    activations (i8) and rounded products (i32) that are only converted back to f32 stay f32,
    so the GEMM kernels' epilogues take the requantize (round, scale, clamp) after each 1x1
    conv; the outputs are those of the same pipeline without the pass, and ONNX Runtime's."""
    torch.manual_seed(0)
    model = _InvertedResidual().eval()
    x = torch.randn(1, 8, 16, 16, generator=torch.Generator().manual_seed(0))
    cal = _calibration(shape=(1, 8, 16, 16))
    without = tmp_path / "cpu_without.toml"
    text = (pipelines_dir() / "cpu.toml").read_text()
    step = '[[steps]]\npass = "xgen-elide-int-roundtrips"\n'
    assert step in text
    without.write_text(text.replace(step, '[[steps]]\npass = "xgen-nan-minmax"\n'))
    options = {"offload": "none", "integer_contractions": "float", "gemm_kernels": "true"}
    common = dict(precision="int8", calibration=cal, precision_check=False)
    outs = {}
    for target in ("cpu", str(without)):
        m = xgen_mlir.compile(model, x, target=target, target_options=options, **common)
        outs[target] = np.asarray(m(x.numpy()))
        if target == "cpu":
            elided = m.report.rewrites["xgen-elide-int-roundtrips"]
            gemm = m.report.rewrites["xgen-gemm-kernels"]
    assert elided["i8 tensors kept f32"] >= 3 and elided["i32 tensors kept f32"] >= 3, elided
    assert gemm["of them with their epilogues"] == gemm["gemm kernels"] == 2, gemm
    quantized = compress.quantize(model, x, calibration=cal)
    step_size = _output_step(quantized)
    # the epilogue may contract a scale and a bias into one FMA: a rare tie may round the
    # other way, by one step; all else is the same bits
    same = float(np.mean(outs["cpu"] == outs[str(without)]))
    assert same >= 0.9, same
    check_close(outs["cpu"], outs[str(without)], atol=step_size * 1.001, rtol=0, what="vs without")
    check_close(outs["cpu"], _ort(quantized, x.numpy()), atol=step_size * 2.001, rtol=0, what="ORT")


def test_int8_inverted_residual_block_fuses_and_matches() -> None:
    """An int8 block computed in f32 (its 1x1 convs matmuls on NHWC rows, per-channel
    requantizes between the layers) becomes one xgen-fuse-inverted-residuals kernel, whose
    activations read the per-channel constants and round in C: the same outputs as the
    three layers left unfused."""
    torch.manual_seed(0)
    model = _InvertedResidual().eval()
    x = torch.randn(1, 8, 16, 16, generator=torch.Generator().manual_seed(0))
    common = dict(precision="int8", calibration=_calibration(shape=(1, 8, 16, 16)))
    outs, reports = {}, {}
    for least in ("0", str(1 << 40)):  # every block fused / none
        options = {"offload": "none", "integer_contractions": "float"}
        options["inverted_residual_min_bytes"] = least
        m = xgen_mlir.compile(model, x, target_options=options, precision_check=False, **common)
        outs[least], reports[least] = np.asarray(m(x.numpy())), m.report
    fused = reports["0"].rewrites["xgen-fuse-inverted-residuals"]
    assert fused.get("blocks fused") == 1, fused
    assert "blocks fused" not in reports[str(1 << 40)].rewrites.get(
        "xgen-fuse-inverted-residuals", {}
    )
    step = _output_step(compress.quantize(model, x, calibration=common["calibration"]))
    same = float(np.mean(outs["0"] == outs[str(1 << 40)]))
    assert same >= 0.9, same
    check_close(outs["0"], outs[str(1 << 40)], atol=step * 1.001, rtol=0, what="fused vs not")


class _InvertedResiduals(torch.nn.Module):
    """MobileNetV2's blocks: a stem, then two inverted residual blocks (1x1 expand, 3x3
    depthwise, 1x1 project, ReLU6 after the first two), the first with a stride-2 depthwise
    conv, the second adding its input; a pool and a linear head."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        conv, relu6 = torch.nn.Conv2d, torch.nn.ReLU6

        def block(c: int, out: int, stride: int) -> torch.nn.Sequential:
            e = 4 * c
            return torch.nn.Sequential(
                *(conv(c, e, 1), relu6()),
                *(conv(e, e, 3, stride=stride, padding=1, groups=e), relu6()),
                conv(e, out, 1),
            )

        self.stem = torch.nn.Sequential(conv(3, 16, 3, padding=1), relu6())
        self.b1, self.b2 = block(16, 24, 2), block(24, 24, 1)
        self.head = torch.nn.Linear(24, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.b1(self.stem(x))
        x = x + self.b2(x)
        return self.head(x.mean((2, 3)))


def test_int8_depthwise_convs_in_onednn() -> None:
    """A quantized model's depthwise convs (f32 convs of the exact integers after import)
    run as s8q primitives that read the int8 quantize and write the requantized int8 output
    (``_offload_integer_depthwise``), so the 1x1 expand convs before them requantize in their
    primitive too; within one output step of ONNX Runtime and of IREE's f32 depthwise convs."""
    requantized = "-> onednn (int8 +requantize+bias)"
    expected = {
        "linalg.conv_2d_nchw_fchw_q -> NHWC for onednn": 1,
        f"linalg.conv_2d_nhwc_hwcf_q {requantized}": 1,
        f"linalg.depthwise_conv_2d_nhwc_hwc {requantized}": 2,
        f"linalg.quantized_batch_matmul {requantized}": 4,  # (the 1x1 convs)
        "linalg.quantized_matmul -> onednn (int8 +dequantize+bias)": 1,
    }
    _check_s8q_model(_InvertedResiduals().eval(), expected, "int8 depthwise")


def test_int8_depthwise_conv_dequantized_in_onednn() -> None:
    """A depthwise conv whose output the model reads as floats (here the mean of the last
    one) is an s8f primitive: int8 source, the dequantization (scale and bias) in the call,
    f32 out; within one output step of ONNX Runtime and of IREE's f32 depthwise conv."""
    torch.manual_seed(0)
    conv = torch.nn.Conv2d
    model = torch.nn.Sequential(
        *(conv(3, 32, 3, padding=1), torch.nn.ReLU()),
        conv(32, 32, 3, stride=2, padding=1, groups=32),
        *(torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(32, 10)),
    ).eval()
    expected = {
        "linalg.conv_2d_nchw_fchw_q -> NHWC for onednn": 1,
        "linalg.conv_2d_nhwc_hwcf_q -> onednn (int8 +requantize+bias)": 1,
        "linalg.depthwise_conv_2d_nhwc_hwc -> onednn (int8 +dequantize+bias)": 1,
        "linalg.quantized_matmul -> onednn (int8 +dequantize+bias)": 1,
    }
    _check_s8q_model(model, expected, "int8 depthwise s8f")


def _silu_net() -> torch.nn.Module:
    """A stem conv and a depthwise conv, each with a SiLU (EfficientNet's), a 1x1 conv, a
    pool and a head."""
    torch.manual_seed(0)
    conv, silu = torch.nn.Conv2d, torch.nn.SiLU
    return torch.nn.Sequential(
        *(conv(3, 32, 3, padding=1), silu()),
        *(conv(32, 32, 3, stride=2, padding=1, groups=32), silu()),
        *(conv(32, 16, 1), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten()),
        torch.nn.Linear(16, 10),
    ).eval()


def test_int8_silu_as_a_table() -> None:
    """A quantized SiLU between two int8 tensors (EfficientNet's activation: dequantize,
    sigmoid, quantize, dequantize, product, quantize) is one lookup of a 256-entry table
    (xgen-int8-tables) after the convs' int8 outputs: the report counts it and the output
    stays within one output step of ONNX Runtime's and of IREE's own code."""
    model = _silu_net()
    requantized = "-> onednn (int8 +requantize+bias)"
    expected = {
        "linalg.conv_2d_nchw_fchw_q -> NHWC for onednn": 1,
        f"linalg.conv_2d_nhwc_hwcf_q {requantized}": 1,
        f"linalg.depthwise_conv_2d_nhwc_hwc {requantized}": 1,
        "linalg.quantized_batch_matmul -> onednn (int8)": 1,
        "linalg.quantized_matmul -> onednn (int8 +dequantize+bias)": 1,
    }
    compiled = _check_s8q_model(model, expected, "int8 SiLU table")
    if int8_exact_in_ort():  # (else the convs' sums stay IREE's: no int8 source)
        tables = compiled.report.rewrites.get("xgen-int8-tables", {})
        assert tables == {"int8 -> i8 chains as table kernels": 2}, tables


class _SqueezeExcite(torch.nn.Module):
    """EfficientNet's squeeze-excite on a 16x16 activation: pool, squeeze (SiLU), excite
    (sigmoid), scale."""

    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.stem = torch.nn.Conv2d(3, 32, 3, padding=1)
        self.squeeze, self.excite = torch.nn.Conv2d(32, 8, 1), torch.nn.Conv2d(8, 32, 1)
        self.head = torch.nn.Linear(32, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.nn.functional.silu(self.stem(x))
        s = torch.sigmoid(self.excite(torch.nn.functional.silu(self.squeeze(x.mean((2, 3), True)))))
        return self.head((x * s).mean((2, 3)))


@pytest.mark.parametrize("net", ["silu", "squeeze_excite"])
def test_int8_table_kernel_reads_what_irees_lookup_reads(net: str) -> None:
    """The generated lookup kernel (``int8_table_kernels``, on by default: vpermi2b where the
    CPU has AVX512-VBMI, a gather for f32 tables) gives the outputs of IREE's own lookup of
    the same tables, bit for bit, at a size whose last chunk ends mid-vector (32 x 31 x 29 =
    28768 elements: a chunk of 16384, then 12384, 193.5 vectors of 64). In the
    squeeze-excite, the stem's SiLU is read as floats by the pool and the scale (an f32
    table), the squeeze's quantized for the excite conv (int8)."""
    model = _silu_net() if net == "silu" else _SqueezeExcite().eval()
    shape = (1, 3, 31, 29)
    x = torch.randn(shape, generator=torch.Generator().manual_seed(0))
    common = dict(precision="int8", calibration=_calibration(shape=shape), precision_check=False)
    options = {"offload": "onednn", "integer_contractions": "integer"}
    kernels = xgen_mlir.compile(model, x, target_options=options, **common)
    options["int8_table_kernels"] = "false"
    iree = xgen_mlir.compile(model, x, target_options=options, **common)
    if int8_exact_in_ort():
        got = kernels.report.rewrites["xgen-int8-tables"]
        want = {"silu": {"i8": 2}, "squeeze_excite": {"i8": 1, "f32": 1}}[net]
        assert got == {f"int8 -> {e} chains as table kernels": n for e, n in want.items()}, got
        got = iree.report.rewrites["xgen-int8-tables"]
        assert got == {f"int8 -> {e} chains as tables": n for e, n in want.items()}, got
    for view in (x, -x, 4 * x):  # every table entry read, the saturated ends too
        np.testing.assert_array_equal(np.asarray(kernels(view.numpy())), iree(view.numpy()))


def test_int8_squeeze_excite_matches() -> None:
    """An int8 squeeze-excite whose excite sigmoid (32 values, after a library call) scales
    a 32x32x32 activation (xgen-isolate-broadcast-chains keeps the sigmoid out of the
    scale's loop): within one output step of ONNX Runtime's and IREE's own code."""
    requantized = "-> onednn (int8 +requantize+bias)"
    expected = {
        "linalg.conv_2d_nchw_fchw_q -> NHWC for onednn": 1,
        f"linalg.conv_2d_nhwc_hwcf_q {requantized}": 1,
        f"linalg.quantized_batch_matmul {requantized}": 1,
        "linalg.quantized_batch_matmul -> onednn (int8)": 1,
        "linalg.quantized_matmul -> onednn (int8 +dequantize+bias)": 1,
    }
    _check_s8q_model(_SqueezeExcite().eval(), expected, "int8 squeeze-excite")
