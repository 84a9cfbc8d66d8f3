"""ONNX models through xgen_mlir, checked against ONNX Runtime; ONNX bad input."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from conftest import check_close
from onnx import helper, numpy_helper

import xgen_mlir
from xgen_mlir import errors
from xgen_mlir.models import vision

LIGHT = Path(onnx.__file__).parent / "backend" / "test" / "data" / "light"


def _ort(model: onnx.ModelProto | str, feed: dict[str, np.ndarray]) -> np.ndarray:
    data = model.SerializeToString() if isinstance(model, onnx.ModelProto) else model
    sess = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    return sess.run(None, feed)[0]


def _data_input(model: onnx.ModelProto) -> str:
    """Old models list weights among graph inputs; the data input is the one without one."""
    inits = {i.name for i in model.graph.initializer}
    return next(i.name for i in model.graph.input if i.name not in inits)


def _randomize_weights(model: onnx.ModelProto, seed: int = 0) -> onnx.ModelProto:
    """The light models ship constant weights (every output equal): make them informative."""
    rng = np.random.default_rng(seed)
    for init in model.graph.initializer:
        w = numpy_helper.to_array(init)
        if w.dtype == np.float32 and w.size > 1:
            new = (w * rng.uniform(0.5, 1.5, w.shape)).astype(np.float32)
            init.CopyFrom(numpy_helper.from_array(new, init.name))
    return model


def test_light_squeezenet_with_random_weights_matches_onnxruntime(tmp_path):
    model = _randomize_weights(onnx.load(str(LIGHT / "light_squeezenet.onnx")))
    path = tmp_path / "squeezenet.onnx"
    onnx.save(model, str(path))
    x = np.random.default_rng(1).standard_normal((1, 3, 224, 224)).astype(np.float32)
    want = _ort(model, {_data_input(model): x})
    got = xgen_mlir.compile(path)(x)
    check_close(got, want, atol=1e-5, rtol=1e-4, what="squeezenet vs ORT")


@pytest.mark.slow
@pytest.mark.parametrize("winograd", [False, True])
def test_resnet18_exported_to_onnx_matches_onnxruntime(tmp_path, winograd):
    """Also with the opt-in Winograd convs: the ONNX import's convs accumulate onto a splat
    zero constant (not a linalg.fill), which the rewrite must recognize (13 convs)."""
    model, x = vision.resnet18(), vision.random_input("resnet18")
    path = tmp_path / "resnet18.onnx"
    torch.onnx.export(model, (x,), str(path), input_names=["image"], opset_version=17, dynamo=False)
    want = _ort(str(path), {"image": x.numpy()})
    options = {}
    if winograd:
        options = {"target_options": {"winograd": "true"}}
        from xgen_mlir.frontend import import_model
        from xgen_mlir.passes.winograd_convs import winograd_convs

        counts = winograd_convs(import_model(str(path)).operation)
        assert sum(counts.values()) == 13
    module = xgen_mlir.compile(onnx.load(str(path)), **options)  # a ModelProto works too
    check_close(module(x.numpy()), want, atol=1e-4, rtol=1e-4, what="resnet18 vs ORT")


@pytest.mark.slow
def test_old_opset_model_is_upgraded():
    """light_* models are opset 9: BatchNorm/Unsqueeze conversions need >= 15/13. Inception
    v2 up to its first inception block's Concat (102 nodes of its 916, every kind of node it
    has but Gemm and Softmax: the upgrade is per node, the rest is compile time)."""
    whole = onnx.shape_inference.infer_shapes(onnx.load(str(LIGHT / "light_inception_v2.onnx")))
    model = onnx.utils.Extractor(whole).extract_model(["data_0"], ["r73"])
    model.graph.input.extend(  # its IR version wants weights listed as inputs, as they were
        helper.make_tensor_value_info(w.name, w.data_type, w.dims) for w in model.graph.initializer
    )
    assert model.opset_import[0].version < 13
    kinds = {n.op_type for n in model.graph.node}
    assert {"BatchNormalization", "Unsqueeze", "Concat"} <= kinds
    x = np.random.default_rng(2).standard_normal((1, 3, 224, 224)).astype(np.float32)
    got = xgen_mlir.compile(model)(x)
    check_close(
        got, _ort(model, {_data_input(model): x}), atol=1e-6, rtol=1e-4, what="inception_v2"
    )


def _graph_with_unsupported_ops() -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 2, 8, 8])
    y = helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 2, 8, 8])
    nodes = [
        helper.make_node("Relu", ["x"], ["r"], name="relu"),
        helper.make_node("Foo", ["r"], ["f1"], name="foo1", domain="com.example"),
        helper.make_node("Foo", ["f1"], ["f2"], name="foo2", domain="com.example"),
        helper.make_node("LpPool", ["r"], ["p"], name="lppool", kernel_shape=[2, 2]),
        helper.make_node("Add", ["f2", "f2"], ["y"], name="add"),
    ]
    graph = helper.make_graph(nodes, "my graph.v1", [x], [y])
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)]
    return helper.make_model(graph, opset_imports=opsets)


def test_unsupported_onnx_ops_listed_all_at_once():
    with pytest.raises(errors.UnsupportedOpsError) as info:
        xgen_mlir.compile(_graph_with_unsupported_ops())
    counts = info.value.counts()
    assert counts["com.example.Foo"] == 2
    assert counts["onnx.LpPool"] == 1
    text = str(info.value)
    assert "node 'foo1'" in text and "node 'lppool'" in text


def test_not_an_onnx_file(tmp_path):
    path = tmp_path / "junk.onnx"
    path.write_bytes(b"\x00\x01garbage" * 10)
    with pytest.raises(errors.FrontendError, match="junk.onnx"):
        xgen_mlir.compile(path)


def test_missing_onnx_file(tmp_path):
    with pytest.raises(errors.FrontendError, match="nothere.onnx"):
        xgen_mlir.compile(tmp_path / "nothere.onnx")


def test_graph_name_with_spaces_becomes_main(tmp_path):
    x = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [3])
    y = helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [3])
    graph = helper.make_graph(
        [helper.make_node("Neg", ["x"], ["y"])], "torch-jit.export v2", [x], [y]
    )
    path = tmp_path / "neg.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    module = xgen_mlir.compile(path)
    out = module.save(tmp_path / "neg.vmfb")
    assert xgen_mlir.load(out)(np.array([1, 2, 3], np.float32)).tolist() == [-1, -2, -3]


class _SqueezeExcite(torch.nn.Module):
    """EfficientNet's MBConv tail: depthwise 3x3 + SiLU, squeeze-excite, 1x1 project."""

    def __init__(self) -> None:
        super().__init__()
        nn = torch.nn
        self.dw = nn.Conv2d(32, 32, 3, padding=1, groups=32)
        self.fc1, self.fc2 = nn.Conv2d(32, 8, 1), nn.Conv2d(8, 32, 1)
        self.project = nn.Conv2d(32, 16, 1, bias=False)

    def forward(self, x):
        f = torch.nn.functional
        x = f.silu(self.dw(x))
        s = torch.sigmoid(self.fc2(f.silu(self.fc1(f.adaptive_avg_pool2d(x, 1)))))
        return self.project(x * s)


def test_squeeze_excite_from_onnx_runs_channels_last(tmp_path):
    """ONNX imports pool the SiLU output with a named pool behind its own transpose back to
    NHWC (two closing transposes): xgen-cancel-reshapes removes both, and the global pool
    (64x64 pixels per channel) is split like a plain sum. Matches ONNX Runtime."""
    torch.manual_seed(0)
    model, x = _SqueezeExcite().eval(), torch.randn(1, 32, 64, 64)
    path = tmp_path / "se.onnx"
    torch.onnx.export(model, (x,), str(path), opset_version=17, dynamo=False)
    module = xgen_mlir.compile(path, dump_ir=tmp_path / "ir")
    steps = sorted((tmp_path / "ir").iterdir())
    second = [p for p in steps if "xgen-cancel-reshapes" in p.name][1]
    assert second.read_text().count("linalg.transpose ") == 2  # model entry and exit
    assert module.report.rewrites["xgen-split-reductions"] == {"sum split in 16": 1}
    want = _ort(str(path), {_data_input(onnx.load(str(path))): x.numpy()})
    check_close(module(x.numpy()), want, atol=1e-5, rtol=1e-4, what="SE block from ONNX")
