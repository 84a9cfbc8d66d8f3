"""Already-quantized ONNX models (made with ONNX Runtime's own quantization tools) import,
compile and match ONNX Runtime.

Tolerances: a model whose output is dequantized from int8/uint8 (static QDQ / QOperator) may
differ from ONNX Runtime by one step of the output's quantization scale (a value on a rounding
tie, or ORT's fixed-point requantization, lands on the neighbouring grid point); the models
here match exactly today. A dynamically quantized model's output is float: the integer
products are exact, so only float reassociation differs (1e-5 of the output's range).
"""

from __future__ import annotations

import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from conftest import check_close, int8_reference
from onnx import helper, numpy_helper
from onnxruntime.quantization import (
    CalibrationDataReader,
    QuantFormat,
    QuantType,
    quantize_dynamic,
    quantize_static,
)

import xgen_mlir
from xgen_mlir import errors
from xgen_mlir.frontend.onnx_import import import_onnx
from xgen_mlir.frontend.onnx_quant import rewrite_quantized_contrib_ops


class _Block(torch.nn.Module):
    """A transformer-style MLP block with a residual (MatMul on 3-D input, Add)."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = torch.nn.Linear(32, 64), torch.nn.Linear(64, 32)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(torch.relu(self.a(x))) + x


class _Net(torch.nn.Module):
    """Conv, residual add, sigmoid gate, concat, leaky ReLU, global pool, classifier: every
    op ONNX Runtime's QOperator format turns into a com.microsoft QLinear* op."""

    def __init__(self) -> None:
        super().__init__()
        self.c1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.c2 = torch.nn.Conv2d(8, 8, 3, padding=1)
        self.c3 = torch.nn.Conv2d(16, 8, 1)
        self.fc = torch.nn.Linear(8, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.c1(x))
        z = self.c2(y) + y
        z = torch.cat([z, y * torch.sigmoid(z)], 1)
        z = torch.nn.functional.leaky_relu(self.c3(z), 0.1)
        return self.fc(torch.nn.functional.adaptive_avg_pool2d(z, 1).flatten(1))


class _Reader(CalibrationDataReader):
    def __init__(self) -> None:
        rng = np.random.default_rng(1)
        self.it = iter([{"input": rng.random((1, 3, 16, 16), np.float32)} for _ in range(8)])

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self.it, None)


def _export(model: torch.nn.Module, x: torch.Tensor, path: Path, name: str) -> Path:
    torch.manual_seed(0)
    torch.onnx.export(
        model.eval(), (x,), str(path), input_names=[name], opset_version=17, dynamo=False
    )
    return path


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("quantized_onnx")
    torch.manual_seed(0)
    blk = _export(_Block(), torch.randn(2, 8, 32), d / "block.onnx", "x")
    net = _export(_Net(), torch.randn(1, 3, 16, 16), d / "net.onnx", "input")
    out = {}
    out["dynamic"] = d / "block_dyn.onnx"
    quantize_dynamic(str(blk), str(out["dynamic"]), weight_type=QuantType.QInt8)
    # ONNX Runtime's graph optimizer fuses that into com.microsoft DynamicQuantizeMatMul
    out["dynamic_fused"] = d / "block_dyn_fused.onnx"
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    so.optimized_model_filepath = str(out["dynamic_fused"])
    ort.InferenceSession(str(out["dynamic"]), so, providers=["CPUExecutionProvider"])
    # convs too: standard-domain ConvInteger (uint8 weights, as ORT's CPU kernel requires)
    out["dynamic_conv"] = d / "net_dyn.onnx"
    quantize_dynamic(
        str(net),
        str(out["dynamic_conv"]),
        weight_type=QuantType.QUInt8,
        op_types_to_quantize=["Conv"],
    )
    for key, kw in {
        "qdq": {"quant_format": QuantFormat.QDQ},
        "qdq_per_channel": {"quant_format": QuantFormat.QDQ, "per_channel": True},
        "qdq_u8": {
            "quant_format": QuantFormat.QDQ,
            "activation_type": QuantType.QUInt8,
            "weight_type": QuantType.QUInt8,
        },
        "qoperator": {"quant_format": QuantFormat.QOperator},
    }.items():
        out[key] = d / f"net_{key}.onnx"
        quantize_static(str(net), str(out[key]), _Reader(), **kw)  # type: ignore[arg-type]
    return out


def _ops(path: Path) -> Counter[str]:
    return Counter(f"{n.domain or 'onnx'}.{n.op_type}" for n in onnx.load(str(path)).graph.node)


def _output_step(model: onnx.ModelProto) -> float:
    """The scale of the DequantizeLinear that produces the graph's output."""
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    node = next(n for n in model.graph.node if model.graph.output[0].name in n.output)
    assert node.op_type == "DequantizeLinear", node.op_type
    return float(inits[node.input[1]])


def _run_both(path: Path | onnx.ModelProto, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    proto = path if isinstance(path, onnx.ModelProto) else onnx.load(str(path))
    want = int8_reference(proto, {proto.graph.input[0].name: x})
    got = np.asarray(xgen_mlir.compile(path)(x))
    return got, want


@pytest.mark.parametrize("key", ["dynamic", "dynamic_fused"])
def test_dynamic_quantization_matches_ort(models: dict[str, Path], key: str) -> None:
    ops = _ops(models[key])
    if key == "dynamic":  # standard-domain ops only
        assert ops["onnx.DynamicQuantizeLinear"] == 2 and ops["onnx.MatMulInteger"] == 2
    else:
        assert ops["com.microsoft.DynamicQuantizeMatMul"] == 2
    x = np.random.default_rng(0).standard_normal((2, 8, 32)).astype(np.float32)
    got, want = _run_both(models[key], x)
    check_close(got, want, atol=1e-5 * float(np.abs(want).max()), rtol=0, what=key)


@pytest.mark.parametrize("key", ["qdq", "qdq_per_channel", "qdq_u8", "qoperator"])
def test_static_quantization_matches_ort(models: dict[str, Path], key: str) -> None:
    ops = _ops(models[key])
    if key == "qoperator":
        assert ops["onnx.QLinearConv"] == 3
        assert {o for o in ops if o.startswith("com.microsoft.")} == {
            f"com.microsoft.{op}"
            for op in (
                "QLinearAdd QLinearSigmoid QLinearMul QLinearConcat QLinearLeakyRelu "
                "QLinearGlobalAveragePool QGemm"
            ).split()
        }
    else:
        assert ops["onnx.QuantizeLinear"] > 5 and ops["onnx.DequantizeLinear"] > 5
    x = np.random.default_rng(2).random((1, 3, 16, 16), np.float32)
    got, want = _run_both(models[key], x)
    step = _output_step(onnx.load(str(models[key])))
    check_close(got, want, atol=step * 1.001, rtol=0, what=key)


def test_dynamic_conv_integer_matches_ort(models: dict[str, Path]) -> None:
    assert _ops(models["dynamic_conv"])["onnx.ConvInteger"] == 3
    x = np.random.default_rng(6).random((1, 3, 16, 16), np.float32)
    got, want = _run_both(models["dynamic_conv"], x)
    check_close(got, want, atol=1e-5 * float(np.abs(want).max()), rtol=0, what="ConvInteger")
    text = str(import_onnx(models["dynamic_conv"])[0])
    assert text.count("linalg.conv_2d_nchw_fchw_q") == 3


def _matmul_integer_to_float(per_column: bool) -> onnx.ModelProto:
    """com.microsoft MatMulIntegerToFloat as ONNX Runtime fuses it: uint8 A from a
    DynamicQuantizeLinear (its scale and zero point too), int8 B with zero points, a bias."""
    rng = np.random.default_rng(3)
    n = 6
    b = rng.integers(-128, 128, (5, n), dtype=np.int8)
    b_scale = rng.uniform(0.01, 0.05, n if per_column else ()).astype(np.float32)
    b_zp = rng.integers(-3, 3, n if per_column else (), dtype=np.int8)
    inits = [
        numpy_helper.from_array(b, "B"),
        numpy_helper.from_array(b_scale, "b_scale"),
        numpy_helper.from_array(b_zp, "b_zp"),
        numpy_helper.from_array(rng.standard_normal(n).astype(np.float32), "bias"),
    ]
    nodes = [
        helper.make_node("DynamicQuantizeLinear", ["x"], ["A", "a_scale", "a_zp"], "dql"),
        helper.make_node(
            "MatMulIntegerToFloat",
            ["A", "B", "a_scale", "b_scale", "a_zp", "b_zp", "bias"],
            ["Y"],
            "mitf",
            domain="com.microsoft",
        ),
    ]
    graph = helper.make_graph(
        nodes,
        "mitf",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [3, 5])],
        [helper.make_tensor_value_info("Y", onnx.TensorProto.FLOAT, [3, n])],
        inits,
    )
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    return helper.make_model(graph, opset_imports=opsets)


@pytest.mark.parametrize("per_column", [False, True])
def test_matmul_integer_to_float_matches_ort(per_column: bool) -> None:
    model = _matmul_integer_to_float(per_column)
    x = np.random.default_rng(4).standard_normal((3, 5)).astype(np.float32)
    got, want = _run_both(model, x)
    check_close(got, want, atol=1e-5 * float(np.abs(want).max()), rtol=0, what="mitf")


def test_rewrite_counts_and_leaves_the_caller_model_alone(models: dict[str, Path]) -> None:
    model = onnx.load(str(models["qoperator"]))
    before = model.SerializeToString()
    import_onnx(model)  # imports a copy
    assert model.SerializeToString() == before
    done = rewrite_quantized_contrib_ops(model)
    assert done == {
        "QLinearAdd": 1,
        "QLinearSigmoid": 1,
        "QLinearMul": 1,
        "QLinearConcat": 1,
        "QLinearLeakyRelu": 1,
        "QLinearGlobalAveragePool": 1,
        "QGemm": 1,
    }
    assert not any(n.domain == "com.microsoft" for n in model.graph.node)
    assert all(o.domain != "com.microsoft" for o in model.opset_import)
    onnx.checker.check_model(model)


def test_contrib_ops_without_a_rewrite_are_reported_together() -> None:
    """Unknown com.microsoft ops: one error naming each kind with its count; the rewritable
    one next to them is not listed as a contrib op (its standard ops may be, once lowering
    stopped at the unknown ones)."""

    def u8(name: str) -> onnx.ValueInfoProto:
        return helper.make_tensor_value_info(name, onnx.TensorProto.UINT8, [4])

    s = numpy_helper.from_array(np.array(0.1, np.float32), "s")
    z = numpy_helper.from_array(np.array(3, np.uint8), "z")
    ms = {"domain": "com.microsoft"}
    nodes = [
        helper.make_node("QLinearSoftmax", ["x", "s", "z", "s", "z"], ["a"], "sm1", **ms),
        helper.make_node("QLinearSoftmax", ["a", "s", "z", "s", "z"], ["b"], "sm2", **ms),
        helper.make_node("QLinearSigmoid", ["x", "s", "z", "s", "z"], ["c"], "sig", **ms),
        helper.make_node(
            "QLinearWhere", ["x", "s", "z", "x", "s", "z", "s", "z"], ["w"], "wh", **ms
        ),
    ]
    graph = helper.make_graph(nodes, "g", [u8("x")], [u8("b"), u8("c"), u8("w")], [s, z])
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    with pytest.raises(errors.UnsupportedOpsError) as info:
        import_onnx(helper.make_model(graph, opset_imports=opsets))
    counts = info.value.counts()
    assert counts["com.microsoft.QLinearSoftmax"] == 2, str(info.value)
    assert counts["com.microsoft.QLinearWhere"] == 1, str(info.value)
    assert "com.microsoft.QLinearSigmoid" not in counts, str(info.value)


def test_per_tensor_qdq_contractions_stay_integer(models: dict[str, Path]) -> None:
    """torch-mlir's fuse-quantized-ops keeps per-tensor int8 QDQ convs and the Gemm integer
    (i8 x i8 -> i32); per-channel weights too, through onnx_quant's per-channel rewrite
    (integer contraction, then the per-channel scale; its 1x1 conv as an integer matmul over
    channels; docs/precision.md)."""
    for key, convs, matmuls in (("qdq", 3, 1), ("qdq_per_channel", 2, 2)):
        text = str(import_onnx(models[key])[0])
        assert text.count("linalg.conv_2d_nchw_fchw_q") == convs, key
        assert text.count("linalg.quantized_") == matmuls, key
        assert "linalg.conv_2d_nchw_fchw " not in text, key


def test_dynamic_matmul_integer_becomes_an_integer_matmul(models: dict[str, Path]) -> None:
    """quantize_dynamic's MatMulInteger -> Cast pairs import as i8 x i8 -> i32 quantized
    matmuls (torch-mlir lowers a bare MatMulInteger as an i32 x i32 -> i64 matmul)."""
    model = onnx.load(str(models["dynamic"]))
    assert rewrite_quantized_contrib_ops(model) == {"MatMulInteger": 2}
    assert not any(n.op_type in ("MatMulInteger", "Cast") for n in model.graph.node)
    text = str(import_onnx(models["dynamic"])[0])
    assert text.count("linalg.quantized_batch_matmul") == 2, text
    assert "xi64>" not in text


def test_matmul_integer_with_another_reader_is_left_alone() -> None:
    """MatMulInteger whose int32 result is a graph output (no Cast to float) keeps its form."""
    rng = np.random.default_rng(5)
    b = numpy_helper.from_array(rng.integers(-128, 128, (4, 3), dtype=np.int8), "B")
    node = helper.make_node("MatMulInteger", ["A", "B"], ["Y"], "mmi")
    graph = helper.make_graph(
        [node],
        "mmi",
        [helper.make_tensor_value_info("A", onnx.TensorProto.INT8, [2, 4])],
        [helper.make_tensor_value_info("Y", onnx.TensorProto.INT32, [2, 3])],
        [b],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    assert rewrite_quantized_contrib_ops(model) == {}
    a = rng.integers(-128, 128, (2, 4), dtype=np.int8)
    got, want = _run_both(model, a)
    assert (got == want).all()


def test_dynamic_conv_integer_before_a_winograd_conv_compiles_and_matches(tmp_path) -> None:
    """Two dynamically quantized 3x3 convs (ConvInteger, 64 channels: the second one is in
    the Winograd prior's bounds). IREE fuses the int8 input's dequantize and layout change
    into Winograd's input transform and then fails on the tile it would keep on the stack;
    compile() then retries with direct convs (FallbackWarning, report.winograd_fallback).
    Either way the module must compile and match."""
    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Conv2d(16, 64, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.Conv2d(64, 64, 3, padding=1),
        torch.nn.ReLU(),
    ).eval()
    x = torch.randn(1, 16, 8, 32)
    f32, q = tmp_path / "convs.onnx", tmp_path / "convs-int8.onnx"
    torch.onnx.export(net, (x,), str(f32), dynamo=False, opset_version=17, input_names=["x"])
    quantize_dynamic(str(f32), str(q), weight_type=QuantType.QInt8, op_types_to_quantize=["Conv"])
    assert _ops(q)["onnx.ConvInteger"] == 2
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = xgen_mlir.compile(str(q), (x.numpy(),), tuning_db=False)
    retried = [w for w in caught if "Winograd" in str(w.message)]
    assert bool(retried) == bool(compiled.report.winograd_fallback)
    want = int8_reference(onnx.load(str(q)), {"x": x.numpy()})
    got = np.asarray(compiled(x.numpy()))
    check_close(got, want, atol=1e-5 * float(np.abs(want).max()), rtol=0, what="ConvInteger x2")


def test_dynamic_quantize_kernels_give_irees_bytes(tmp_path: Path) -> None:
    """A dynamically quantized MLP at sizes the kernels of xgen-dynamic-quantize-kernels see
    whole: the first input (1x100x97, 9700 elements: a partial vector at the end) and the
    hidden one (1x100x400, 40000: two min/max chunks and five quantize chunks, finished by
    a reduce). The kernels' outputs are IREE's own (dynamic_quantize_kernels=false), bit for
    bit, on inputs whose min is above zero, whose max is below it and at several scales; and
    within float reassociation of ONNX Runtime's. Both forms of the quantize kernel: the
    uint8 bytes as they are (which the library's matmuls read, where they run it) and with
    the frontend's "- 128" to int8 folded in (IREE's integer matmuls, offload=none)."""
    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Linear(97, 400), torch.nn.ReLU(), torch.nn.Linear(400, 97)
    ).eval()
    x = torch.randn(1, 100, 97)
    f32, q = tmp_path / "mlp.onnx", tmp_path / "mlp-int8.onnx"
    torch.onnx.export(net, (x,), str(f32), dynamo=False, opset_version=17, input_names=["x"])
    quantize_dynamic(str(f32), str(q), weight_type=QuantType.QInt8)
    assert _ops(q)["onnx.DynamicQuantizeLinear"] == 2
    proto = onnx.load(str(q))
    minmax = {"max and min of a tensor as one kernel": 2}
    for options in ({}, {"offload": "none"}):
        kernels = xgen_mlir.compile(str(q), (x.numpy(),), tuning_db=False, target_options=options)
        got = kernels.report.rewrites.get("xgen-dynamic-quantize-kernels", {})
        flip = "" if "int8" in str(kernels.report.offload) else " (with -128)"
        assert got == {**minmax, f"quantizes by a run-time scale as kernels{flip}": 2}, got
        iree = xgen_mlir.compile(
            str(q),
            (x.numpy(),),
            tuning_db=False,
            target_options={**options, "dynamic_quantize_kernels": "false"},
        )
        assert "xgen-dynamic-quantize-kernels" not in iree.report.rewrites
        for view in (x, -x, x.abs() + 0.5, -x.abs() - 0.5, 1e3 * x, 1e-3 * x):
            a = view.numpy()
            np.testing.assert_array_equal(np.asarray(kernels(a)), np.asarray(iree(a)))
            ref = int8_reference(proto, {"x": a})
            scale = float(np.abs(ref).max())
            check_close(np.asarray(kernels(a)), ref, atol=1e-5 * scale, rtol=0, what="dynamic MLP")
