"""Dynamic dims: one compile serves every batch / sequence length, numerics vs PyTorch / ONNX
Runtime at each size; static dims stay checked, bounded dims are enforced by the module.

``compile(dynamic_shapes=...)`` takes torch.export's own form (``{dim: Dim(...)}`` per input).
Sizes are kept small so the whole file stays fast; the bigger compiles are marked slow.
"""

from __future__ import annotations

import io
import warnings

import numpy as np
import pytest
import torch
from conftest import check_close
from targets_util import need_vulkan
from torch.export import Dim

import xgen_mlir
from xgen_mlir.errors import (
    BackendCompileError,
    FallbackWarning,
    FrontendError,
    InputMismatchError,
    ModuleCallError,
    XGenError,
)
from xgen_mlir.models import transformers_zoo, vision
from xgen_mlir.tools import xgen_compile

BATCHES = (1, 3, 8)


def _vision(name: str) -> tuple[torch.nn.Module, tuple[int, ...]]:
    model = getattr(vision, name)()
    return model, tuple(vision.random_input(name).shape[1:])


def _compile_quiet(*args, **kwargs):
    """Compile with every fallback an error: a dynamic shape must not need one."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", FallbackWarning)
        return xgen_mlir.compile(*args, **kwargs)


def _check_batches(m, model, item_shape, atol=1e-5):
    gen = torch.Generator().manual_seed(0)
    for b in BATCHES:
        x = torch.randn(b, *item_shape, generator=gen)
        with torch.no_grad():
            want = model(x).numpy()
        check_close(m(x.numpy()), want, atol=atol, rtol=1e-4, what=f"batch {b}")


@pytest.mark.parametrize("target", ["cpu", "x86_64"])
@pytest.mark.parametrize("name", ["mlp", "small_cnn"])
def test_dynamic_batch(name, target):
    model, item = _vision(name)
    example = torch.randn(2, *item)
    m = _compile_quiet(
        model, (example,), target=target, dynamic_shapes=({0: Dim("batch", max=64)},)
    )
    assert m.signature.inputs[0].shape == (None, *item)
    _check_batches(m, model, item)
    with pytest.raises(InputMismatchError, match="expected shape"):  # static dims still checked
        m(np.zeros((2, *item[:-1], item[-1] + 1), np.float32))


def test_dynamic_batch_vulkan():
    need_vulkan()
    model, item = _vision("mlp")
    m = _compile_quiet(
        model, (torch.randn(2, *item),), target="vulkan", dynamic_shapes=({0: Dim("batch")},)
    )
    _check_batches(m, model, item, atol=1e-4)


def test_dynamic_padded_conv_is_refused_on_vulkan():
    """A zero pad of a computed tensor at a dynamic size meets IREE's SPIR-V padded-store bug
    (MobileNetV2 at a dynamic batch returned garbage): refused with the reason, not run."""
    model, item = _vision("small_cnn")
    with pytest.raises(BackendCompileError, match="(?s)isolate-pad-sources.*dynamic size"):
        xgen_mlir.compile(
            model, (torch.randn(2, *item),), target="vulkan", dynamic_shapes=({0: Dim("batch")},)
        )


def test_small_cnn_dynamic_batch_reports_what_passes_did():
    """The NHWC convs and pools keep the dynamic batch (the convs Winograd left: the prior of
    nhwc_convs converts a model's convs without a record); winograd on a dynamic batch is
    exact too."""
    model, item = _vision("small_cnn")
    m = _compile_quiet(
        model,
        (torch.randn(2, *item),),
        dynamic_shapes=({0: Dim("batch")},),
        target_options={"winograd": "true"},
    )
    assert m.report.rewrites["xgen-nhwc-convs"] == {
        "linalg.pooling_nchw_max": 2,
        "linalg.conv_2d_nchw_fchw": 2,
    }
    _check_batches(m, model, item, atol=1e-4)


def test_bounds_are_enforced():
    model, item = _vision("mlp")
    m = xgen_mlir.compile(
        model, (torch.randn(4, *item),), dynamic_shapes=({0: Dim("batch", min=3, max=16)},)
    )
    for b in (3, 16):
        x = torch.randn(b, *item)
        check_close(m(x), model(x).detach(), atol=1e-5, rtol=1e-4, what=f"batch {b}")
    for b in (2, 17):
        with pytest.raises(ModuleCallError, match=r"input 0 dim 0: size outside .* 3\.\.16"):
            m(np.zeros((b, *item), np.float32))


def test_example_outside_bounds_is_a_clear_error():
    model, item = _vision("mlp")
    with pytest.raises(XGenError, match="torch.export could not trace"):
        xgen_mlir.compile(
            model, (torch.randn(2, *item),), dynamic_shapes=({0: Dim("batch", min=4, max=8)},)
        )


@pytest.mark.slow
def test_gpt2_tiny_dynamic_sequence():
    model, inputs = transformers_zoo.gpt2_tiny(seq=16)
    m = _compile_quiet(model, inputs, dynamic_shapes=({1: Dim("seq", max=128)},))
    assert m.signature.inputs[0].shape == (1, None)
    gen = torch.Generator().manual_seed(0)
    for seq in (8, 32, 77):
        ids = torch.randint(0, 1000, (1, seq), generator=gen)
        with torch.no_grad():
            want = model(ids).numpy()
        check_close(m(ids.numpy()), want, atol=1e-4, rtol=1e-4, what=f"sequence {seq}")
    with pytest.raises(ModuleCallError, match="at most 128"):
        m(np.zeros((1, 129), np.int64))


@pytest.mark.slow
def test_bert_tiny_dynamic_sequence():
    model, inputs = transformers_zoo.bert_tiny(seq=16)
    m = _compile_quiet(model, inputs, dynamic_shapes=({1: Dim("seq", max=32)},))
    gen = torch.Generator().manual_seed(1)
    for seq in (5, 16, 32):
        ids = torch.randint(0, 64, (1, seq), generator=gen)
        with torch.no_grad():
            want = model(ids).numpy()
        check_close(m(ids.numpy()), want, atol=1e-4, rtol=1e-4, what=f"sequence {seq}")


class _QKV(torch.nn.Module):
    """Attention's three projections of one input, wide enough to be merged."""

    def __init__(self) -> None:
        super().__init__()
        self.q, self.k, self.v = (torch.nn.Linear(32, 256) for _ in range(3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.q(x) * self.k(x) + self.v(x)


def test_sibling_matmuls_merge_at_a_dynamic_sequence():
    """BERT-base's Q/K/V at a dynamic sequence length once crashed the merge (a dynamic
    tensor.empty); now they merge, with the rows' size read at run time."""
    torch.manual_seed(0)
    model = _QKV().eval()
    m = _compile_quiet(model, (torch.randn(1, 8, 32),), dynamic_shapes=({1: Dim("seq", max=64)},))
    assert m.report.rewrites["xgen-merge-sibling-matmuls"]["matmuls"] == 3
    for seq in (1, 8, 50):
        x = torch.randn(1, seq, 32)
        with torch.no_grad():
            want = model(x).numpy()
        check_close(m(x.numpy()), want, atol=1e-4, rtol=1e-4, what=f"sequence {seq}")


def _onnx_mlp(symbolic: bool) -> tuple[bytes, torch.nn.Module]:
    model = vision.mlp()
    f = io.BytesIO()
    axes = {"x": {0: "batch"}, "y": {0: "batch"}} if symbolic else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model,
            (torch.randn(1, 64),),
            f,
            dynamo=False,
            input_names=["x"],
            output_names=["y"],
            dynamic_axes=axes,
        )
    return f.getvalue(), model


def _check_onnx(m, data: bytes) -> None:
    import onnxruntime as ort

    sess = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    for b in BATCHES:
        x = rng.standard_normal((b, 64)).astype(np.float32)
        want = sess.run(None, {"x": x})[0]
        check_close(m(x), want, atol=1e-5, rtol=1e-4, what=f"batch {b}")


def test_onnx_symbolic_batch_is_kept():
    import onnx

    data, _ = _onnx_mlp(symbolic=True)
    m = _compile_quiet(onnx.load_from_string(data))
    assert m.signature.inputs[0].shape == (None, 64)
    _check_onnx(m, data)


@pytest.mark.parametrize("unknown", ["dim_param", "minus_one"])
def test_onnx_symbolic_dims_take_the_example_sizes(unknown):
    """With example inputs an ONNX model compiles static, as a torch export does: its symbolic
    batch takes the example's size (dynamic H/W detectors failed in IREE, or ran 8x slower).
    Paddle's exporter writes an unknown dim as -1."""
    import onnx

    data, _ = _onnx_mlp(symbolic=True)
    proto = onnx.load_from_string(data)
    if unknown == "minus_one":
        dim = proto.graph.input[0].type.tensor_type.shape.dim[0]
        dim.Clear()
        dim.dim_value = -1
    x = np.random.default_rng(0).standard_normal((3, 64)).astype(np.float32)
    m = _compile_quiet(proto, (x,))
    assert m.signature.inputs[0].shape == (3, 64)
    import onnxruntime as ort

    want = ort.InferenceSession(data, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    check_close(m(x), want, atol=1e-5, rtol=1e-4, what="batch 3")
    with pytest.raises(InputMismatchError):
        m(np.zeros((2, 64), np.float32))


@pytest.mark.parametrize(
    "shape, message",
    [
        ((1, 32), r"input 'x' dim 1 is 64 in the model; its example has 32"),
        ((1, 64, 1), r"input 'x' has 2 dims; its example has shape \(1, 64, 1\)"),
    ],
)
def test_onnx_example_that_contradicts_the_model(shape, message):
    import onnx

    data, _ = _onnx_mlp(symbolic=False)
    with pytest.raises(FrontendError, match=message):
        xgen_mlir.compile(onnx.load_from_string(data), (np.zeros(shape, np.float32),))
    with pytest.raises(FrontendError, match=r"2 example input\(s\) for a graph with 1 input"):
        xgen_mlir.compile(onnx.load_from_string(data), (np.zeros((1, 64), np.float32),) * 2)


def test_onnx_static_batch_made_dynamic_with_bounds(tmp_path):
    data, _ = _onnx_mlp(symbolic=False)
    path = tmp_path / "mlp.onnx"
    path.write_bytes(data)
    out = tmp_path / "mlp.vmfb"
    rc = xgen_compile.main([str(path), "-o", str(out), "--dynamic-dim", "0:0:1:8"])
    assert rc == 0
    m = xgen_mlir.load(out)
    assert m.signature.inputs[0].shape == (None, 64)
    _check_onnx(m, _onnx_mlp(symbolic=True)[0])  # ONNX Runtime needs the symbolic dim
    with pytest.raises(ModuleCallError, match="1..8"):
        m(np.zeros((9, 64), np.float32))


def test_cli_input_shape_makes_an_onnx_model_static(tmp_path, capsys):
    path = tmp_path / "mlp.onnx"
    path.write_bytes(_onnx_mlp(symbolic=True)[0])
    out = tmp_path / "mlp.vmfb"
    assert xgen_compile.main([str(path), "-o", str(out), "--input-shape", "3x64"]) == 0
    assert xgen_mlir.load(out).signature.inputs[0].shape == (3, 64)
    for bad, message in [
        (["--input-shape", "3by64"], "expected sizes joined by 'x'"),
        (["--input-shape", "3x64", "--input-shape", "3x64"], "has 1 input"),
    ]:
        assert xgen_compile.main([str(path), "-o", str(out), *bad]) == 1
        assert message in capsys.readouterr().err


@pytest.mark.parametrize("bad", ["0", "0:x", "0:0:5:2", "1:-1", "0:0:1"])
def test_cli_dynamic_dim_syntax(bad, tmp_path, capsys):
    path = tmp_path / "m.onnx"
    path.write_bytes(_onnx_mlp(symbolic=False)[0])
    assert xgen_compile.main([str(path), "-o", str(tmp_path / "o.vmfb"), "--dynamic-dim", bad]) == 1
    assert "--dynamic-dim" in capsys.readouterr().err


def test_dynamic_shapes_refused_for_a_fixed_program():
    model, item = _vision("mlp")
    prog = torch.export.export(model, (torch.randn(2, *item),))
    with pytest.raises(XGenError, match="already has its shapes"):
        xgen_mlir.compile(prog, dynamic_shapes=({0: Dim("batch")},))
