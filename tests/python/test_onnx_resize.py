"""Nearest ``Resize`` by integer factors rewritten to reshape + broadcast before import
(``frontend/onnx_resize.py``): which forms it takes, that ONNX Runtime computes the same on
the rewritten graph (the rewrite is data movement, so exactly the same), and an FPN-style
upsample-and-add compiled by xgen_mlir against ONNX Runtime."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper, shape_inference

import xgen_mlir
from xgen_mlir.frontend.onnx_resize import rewrite_nearest_resizes


def _model(
    scales: list[float] | None,
    coord: str = "asymmetric",
    nearest: str = "floor",
    mode: str = "nearest",
    sizes: list[int] | None = None,
    batch: int | str = 1,
    add: bool = False,
) -> onnx.ModelProto:
    """x [batch, 3, 5, 6] -> Resize (-> + y, y the Resize's output shape, with ``add``)."""
    h, w = 5, 6
    inits = [numpy_helper.from_array(np.zeros(0, np.float32), "roi")]
    inputs = ["x", "roi"]
    if scales is not None:
        inits.append(numpy_helper.from_array(np.array(scales, np.float32), "scales"))
        inputs.append("scales")
        out_hw = [int(h * scales[2]), int(w * scales[3])]
    else:
        assert sizes is not None
        inits.append(numpy_helper.from_array(np.array(sizes, np.int64), "sizes"))
        inputs += ["", "sizes"]
        out_hw = sizes[2:]
    nodes = [
        helper.make_node(
            "Resize",
            inputs,
            ["r"],
            mode=mode,
            coordinate_transformation_mode=coord,
            nearest_mode=nearest,
            name="up",
        )
    ]
    graph_inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, 3, h, w])]
    out = "r"
    if add:
        graph_inputs.append(
            helper.make_tensor_value_info("y", TensorProto.FLOAT, [batch, 3, *out_hw])
        )
        nodes.append(helper.make_node("Add", ["r", "y"], ["s"], name="add"))
        out = "s"
    graph = helper.make_graph(
        nodes,
        "g",
        graph_inputs,
        [helper.make_tensor_value_info(out, TensorProto.FLOAT, None)],
        inits,
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    proto.ir_version = 8
    return shape_inference.infer_shapes(proto, data_prop=True)


def _run(proto: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> np.ndarray:
    sess = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)[0]


TAKEN = [
    ([1, 1, 2, 2], "asymmetric", "floor"),  # PyTorch's interpolate(mode="nearest")
    ([1, 1, 8, 8], "asymmetric", "floor"),
    ([1, 1, 3, 2], "asymmetric", "floor"),
    ([1, 1, 2, 2], "asymmetric", "round_prefer_floor"),
    ([1, 1, 4, 4], "half_pixel", "round_prefer_floor"),  # ONNX's defaults
    ([1, 1, 3, 3], "pytorch_half_pixel", "round_prefer_ceil"),
    ([1, 1, 4, 2], "tf_half_pixel_for_nn", "floor"),
]


@pytest.mark.parametrize(("scales", "coord", "nearest"), TAKEN)
def test_integer_nearest_forms_are_rewritten_and_compute_the_same(scales, coord, nearest):
    proto = _model(scales, coord, nearest)
    x = np.random.default_rng(0).standard_normal((1, 3, 5, 6)).astype(np.float32)
    want = _run(proto, {"x": x})
    work = onnx.ModelProto()
    work.CopyFrom(proto)
    assert rewrite_nearest_resizes(work) == 1
    assert [n.op_type for n in work.graph.node] == ["Reshape", "Expand", "Reshape"]
    np.testing.assert_array_equal(_run(work, {"x": x}), want)


NOT_TAKEN = [
    ([1, 1, 3, 3], "asymmetric", "round_prefer_floor", "nearest"),  # rounds j / 3 = 0.67 up
    ([1, 1, 2, 2], "half_pixel", "floor", "nearest"),  # floor(k - 0.25) = k - 1
    ([1, 1, 2, 2], "align_corners", "floor", "nearest"),
    ([1, 1, 1.5, 2], "asymmetric", "floor", "nearest"),  # not an integer factor
    ([1, 2, 2, 2], "asymmetric", "floor", "nearest"),  # the channels scaled
    ([1, 1, 2, 2], "asymmetric", "floor", "linear"),
]


@pytest.mark.parametrize(("scales", "coord", "nearest", "mode"), NOT_TAKEN)
def test_other_forms_are_left_to_the_gather(scales, coord, nearest, mode):
    proto = _model(scales, coord, nearest, mode)
    assert rewrite_nearest_resizes(proto) == 0
    assert [n.op_type for n in proto.graph.node] == ["Resize"]


def test_the_excluded_rounding_really_differs_from_floor():
    """Why asymmetric + round_prefer_floor is taken only for factor 2: at 3 it is not floor."""
    x = np.arange(1 * 3 * 5 * 6, dtype=np.float32).reshape(1, 3, 5, 6)
    rounded = _run(_model([1, 1, 3, 3], "asymmetric", "round_prefer_floor"), {"x": x})
    floored = _run(_model([1, 1, 3, 3], "asymmetric", "floor"), {"x": x})
    assert not np.array_equal(rounded, floored)


def test_sizes_and_a_dynamic_batch():
    proto = _model(None, sizes=[2, 3, 10, 18], batch="N")
    x = np.random.default_rng(1).standard_normal((2, 3, 5, 6)).astype(np.float32)
    want = _run(proto, {"x": x})
    assert rewrite_nearest_resizes(proto) == 1
    np.testing.assert_array_equal(_run(proto, {"x": x}), want)


def test_upsample_and_add_compiled_matches_onnxruntime(tmp_path):
    """An FPN's step: a 4x nearest upsample added to a finer map, through xgen_mlir."""
    proto = _model([1, 1, 4, 4], "asymmetric", "floor", add=True)
    path = tmp_path / "up.onnx"
    onnx.save(proto, str(path))
    rng = np.random.default_rng(2)
    x = rng.standard_normal((1, 3, 5, 6)).astype(np.float32)
    y = rng.standard_normal((1, 3, 20, 24)).astype(np.float32)
    want = _run(proto, {"x": x, "y": y})
    got = xgen_mlir.compile(str(path), (x, y), tuning_db=False)(x, y)
    np.testing.assert_allclose(np.asarray(got), want, rtol=0, atol=1e-6)


def test_a_failed_rewrite_warns_and_imports_the_gather(monkeypatch):
    """If the rewrite fails, the model imports as it was (torch-mlir's gather), with a
    warning naming it, never a half-rewritten graph."""
    from xgen_mlir.frontend import onnx_import

    def broken(proto: onnx.ModelProto) -> int:
        proto.graph.initializer.add().name = "half_written"
        raise ValueError("simulated")

    monkeypatch.setattr(onnx_import, "rewrite_nearest_resizes", broken)
    with pytest.warns(UserWarning, match="rewriting its nearest Resizes failed.*simulated"):
        module, _ = onnx_import.import_onnx(_model([1, 1, 2, 2]), input_shapes=[(1, 3, 5, 6)])
    assert "half_written" not in str(module)
