"""ONNX LSTM and GRU: unrolled with the input projection hoisted (frontend/onnx_rnn.py) where
their form allows, torch-mlir's loop otherwise; both checked against ONNX Runtime."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from conftest import check_close
from onnx import TensorProto, helper, numpy_helper, shape_inference

import xgen_mlir
from xgen_mlir import errors
from xgen_mlir.frontend import onnx_rnn
from xgen_mlir.frontend.onnx_import import import_onnx

T, B, IN, H = 5, 2, 6, 4


def _rnn(
    direction: str = "forward",
    states: bool = True,
    outputs: tuple[str, ...] = ("Y", "Yh", "Yc"),
    peepholes: bool = False,
    seq_lens: bool = False,
    op: str = "LSTM",
    **attrs: int,
) -> tuple[onnx.ModelProto, list[np.ndarray]]:
    """A one-node LSTM (or GRU) model with random weights, and inputs for it."""
    d = 2 if direction == "bidirectional" else 1
    gates = 4 if op == "LSTM" else 3
    rng = np.random.default_rng(0)

    def weight(name: str, *shape: int) -> onnx.TensorProto:
        return numpy_helper.from_array((rng.standard_normal(shape) * 0.5).astype(np.float32), name)

    inits = [weight("W", d, gates * H, IN), weight("R", d, gates * H, H)]
    inits.append(weight("B", d, 2 * gates * H))
    ins = ["X", "W", "R", "B", "lens" if seq_lens else "", "h0" if states else "", ""]
    feeds = [("X", [T, B, IN], np.float32)]
    if seq_lens:
        feeds.append(("lens", [B], np.int32))
    if states:
        feeds.append(("h0", [d, B, H], np.float32))
        if op == "LSTM":
            feeds.append(("c0", [d, B, H], np.float32))
            ins[6] = "c0"
    if op == "GRU":
        ins = ins[:6]
        outputs = tuple(o for o in outputs if o != "Yc")
    if peepholes:
        inits.append(weight("P", d, 3 * H))
        ins.append("P")
    shapes = {"Y": [T, d, B, H], "Yh": [d, B, H], "Yc": [d, B, H]}
    names = [o if o in outputs else "" for o in ("Y", "Yh", "Yc")[: 3 if op == "LSTM" else 2]]
    while not names[-1]:
        names.pop()
    while ins and not ins[-1]:
        ins.pop()
    node = helper.make_node(op, ins, names, hidden_size=H, direction=direction, **attrs)
    graph = helper.make_graph(
        [node],
        "lstm",
        [
            helper.make_tensor_value_info(n, TensorProto.INT32 if dt == np.int32 else 1, s)
            for n, s, dt in feeds
        ],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT, shapes[o]) for o in names if o],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    data = np.random.default_rng(1)
    xs = [
        np.full(s, T, np.int32) if dt == np.int32 else data.standard_normal(s).astype(dt)
        for _, s, dt in feeds
    ]
    return model, xs


def _ort(model: onnx.ModelProto, xs: list[np.ndarray]) -> list[np.ndarray]:
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, {i.name: x for i, x in zip(sess.get_inputs(), xs, strict=True)})


def _rewritten(model: onnx.ModelProto) -> dict[str, int]:
    copy = shape_inference.infer_shapes(model)
    return onnx_rnn.rewrite_recurrent_ops(copy)


def _check(model: onnx.ModelProto, xs: list[np.ndarray], what: str) -> None:
    got = xgen_mlir.compile(model, example_inputs=tuple(xs))(*xs)
    got = list(got) if isinstance(got, tuple | list) else [got]
    want = _ort(model, xs)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        check_close(g, w, atol=1e-5, rtol=1e-5, what=what)


@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("states", [True, False], ids=["given-states", "zero-states"])
def test_unrolled_lstm_matches_onnxruntime(direction, states):
    model, xs = _rnn(direction, states)
    assert _rewritten(model) == {"LSTM": 1}
    module, _ = import_onnx(model, input_shapes=[x.shape for x in xs])
    text = str(module)
    assert "scf.for" not in text and "scf.while" not in text  # no loop left: unrolled
    _check(model, xs, f"{direction} LSTM, {'given' if states else 'zero'} states")


def test_hoisted_projection_is_one_linear_layer_per_direction():
    """The input projection takes the sequence as T * batch rows: one 2-D matmul per
    direction (a Linear layer the GEMM routes take), not a batched product of T matrices."""
    model, xs = _rnn("bidirectional")
    module, _ = import_onnx(model, input_shapes=[x.shape for x in xs])
    text = str(module)
    projection = f"tensor<{T * B}x{IN}xf32>, tensor<{IN}x{4 * H}xf32>"
    assert text.count(projection) == 2, text
    assert "batch_matmul" not in text


def test_unrolled_lstm_with_only_some_outputs():
    """A model that reads only the last hidden state (Y_h), as classifiers do."""
    model, xs = _rnn("bidirectional", outputs=("Yh",))
    assert _rewritten(model) == {"LSTM": 1}
    _check(model, xs, "bidirectional LSTM, Y_h only")


def test_lstm_from_torch_export_matches_torch(tmp_path):
    """nn.LSTM as torch.onnx.export writes it (2 layers, bidirectional, batch_first input
    transposed by the exporter), against PyTorch itself."""
    torch.manual_seed(0)

    class Reader(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lstm = torch.nn.LSTM(8, 16, num_layers=2, bidirectional=True, batch_first=True)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.lstm(x)[0]

    net, x = Reader().eval(), torch.randn(3, 7, 8)
    path = tmp_path / "reader.onnx"
    torch.onnx.export(net, (x,), str(path), dynamo=False, opset_version=17)
    proto = shape_inference.infer_shapes(onnx.load(str(path)))
    assert onnx_rnn.rewrite_recurrent_ops(proto) == {"LSTM": 2}
    with torch.no_grad():
        want = net(x).numpy()
    got = xgen_mlir.compile(str(path), example_inputs=(x.numpy(),))(x.numpy())
    check_close(got, want, atol=1e-5, rtol=1e-5, what="2-layer bidirectional LSTM vs torch")


def test_lstm_too_long_to_unroll_keeps_the_loop(monkeypatch):
    """Over MAX_STEPS (steps x directions) the rewrite must not fire: torch-mlir's loop runs
    it, with the same numbers."""
    monkeypatch.setattr(onnx_rnn, "MAX_STEPS", 2 * T - 1)
    model, xs = _rnn("bidirectional")
    assert _rewritten(model) == {}
    module, _ = import_onnx(model, input_shapes=[x.shape for x in xs])
    assert "scf.for" in str(module)
    _check(model, xs, "bidirectional LSTM through torch-mlir's loop")


def test_lstm_forms_the_rewrite_leaves_alone():
    """Peepholes, per-batch sequence lengths, a dynamic sequence: not rewritten."""
    assert _rewritten(_rnn(peepholes=True)[0]) == {}
    assert _rewritten(_rnn(seq_lens=True)[0]) == {}
    model, _ = _rnn()
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "steps"
    assert _rewritten(model) == {}
    with_clip, _ = _rnn()
    with_clip.graph.node[0].attribute.append(helper.make_attribute("clip", 3.0))
    assert _rewritten(with_clip) == {}


@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("before_reset", [0, 1], ids=["reset-first", "linear-before-reset"])
@pytest.mark.parametrize("states", [True, False], ids=["given-state", "zero-state"])
def test_unrolled_gru_matches_onnxruntime(direction, before_reset, states):
    model, xs = _rnn(direction, states, op="GRU", linear_before_reset=before_reset)
    assert _rewritten(model) == {"GRU": 1}
    _check(model, xs, f"{direction} GRU, linear_before_reset={before_reset}")


def test_gru_from_torch_export_matches_torch(tmp_path):
    """nn.GRU (linear_before_reset=1 in ONNX), bidirectional, against PyTorch itself."""
    torch.manual_seed(0)
    gru = torch.nn.GRU(8, 16, bidirectional=True).eval()
    x = torch.randn(6, 2, 8)
    path = tmp_path / "gru.onnx"
    torch.onnx.export(gru, (x,), str(path), dynamo=False, opset_version=17)
    proto = shape_inference.infer_shapes(onnx.load(str(path)))
    assert onnx_rnn.rewrite_recurrent_ops(proto) == {"GRU": 1}
    with torch.no_grad():
        want = [t.numpy() for t in gru(x)]
    got = xgen_mlir.compile(str(path), example_inputs=(x.numpy(),))(x.numpy())
    for g, w in zip(got, want, strict=True):
        check_close(g, w, atol=1e-5, rtol=1e-5, what="bidirectional GRU vs torch")


def test_constant_full_length_sequence_lens_is_rewritten():
    """``sequence_lens`` as a constant of full lengths (as some exporters write it) says
    nothing: rewritten, same numbers; a shorter length keeps the loop."""
    model, xs = _rnn("bidirectional")
    node = model.graph.node[0]
    model.graph.initializer.append(numpy_helper.from_array(np.full(B, T, np.int32), "lens"))
    node.input[4] = "lens"
    assert _rewritten(model) == {"LSTM": 1}
    _check(model, xs, "bidirectional LSTM with full-length sequence_lens")
    shorter = onnx.ModelProto()
    shorter.CopyFrom(model)
    shorter.graph.initializer[-1].CopyFrom(
        numpy_helper.from_array(np.array([T, T - 1] + [T] * (B - 2), np.int32), "lens")
    )
    assert _rewritten(shorter) == {}


def test_a_failed_rewrite_warns_and_imports_the_loop(monkeypatch):
    """If unrolling fails, the model imports as it was (torch-mlir's loop), with a warning
    naming the model, never a half-rewritten graph."""
    from xgen_mlir.frontend import onnx_import

    def broken(proto: onnx.ModelProto) -> dict[str, int]:
        proto.graph.initializer.add().name = "half_written"
        raise ValueError("simulated")

    monkeypatch.setattr(onnx_import, "rewrite_recurrent_ops", broken)
    model, xs = _rnn("bidirectional")
    with pytest.warns(UserWarning, match="unrolling its recurrent layers failed.*simulated"):
        module, _ = import_onnx(model, input_shapes=[x.shape for x in xs])
    text = str(module)
    assert "scf.for" in text and "half_written" not in text


def _quantized_lstm(
    tmp_path, bidirectional: bool, per_channel: bool, reduce_range: bool, states: bool = False
) -> tuple[onnx.ModelProto, list[np.ndarray]]:
    """nn.LSTM exported and quantized by ONNX Runtime's ``quantize_dynamic``: its LSTM
    becomes ``com.microsoft`` DynamicQuantizeLSTM (int8 weights, transposed)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    torch.manual_seed(3)

    class Tagger(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lstm = torch.nn.LSTM(IN, 8, bidirectional=bidirectional)

        def forward(self, x: torch.Tensor, *hc: torch.Tensor) -> torch.Tensor:
            return self.lstm(x, tuple(hc) if hc else None)[0]

    d = 2 if bidirectional else 1
    xs = [torch.randn(T, 1, IN)] + ([torch.randn(d, 1, 8), torch.randn(d, 1, 8)] if states else [])
    path, qpath = tmp_path / "tagger.onnx", tmp_path / "tagger-int8.onnx"
    torch.onnx.export(Tagger().eval(), tuple(xs), str(path), dynamo=False, opset_version=17)
    quantize_dynamic(
        str(path), str(qpath), weight_type=QuantType.QInt8, op_types_to_quantize=["LSTM"],
        per_channel=per_channel, reduce_range=reduce_range,
    )  # fmt: skip
    model = onnx.load(str(qpath))
    assert [n.op_type for n in model.graph.node].count("DynamicQuantizeLSTM") == 1
    return model, [x.numpy() for x in xs]


@pytest.mark.parametrize(
    "bidirectional, per_channel, states",
    [(False, False, False), (True, True, False), (True, False, True)],
    ids=["forward-per-tensor", "bidirectional-per-column", "bidirectional-given-states"],
)
def test_dynamic_quantize_lstm_matches_onnxruntime(tmp_path, bidirectional, per_channel, states):
    """ONNX Runtime's quantized LSTM, unrolled: the sequence and each step's hidden state
    quantized to uint8 at run time, times the dequantized int8 weights. With 7-bit weights
    (``reduce_range``) ONNX Runtime's own u8 x s8 kernels are exact on every x86 host, so its
    output is the reference."""
    model, xs = _quantized_lstm(tmp_path, bidirectional, per_channel, True, states)
    assert _rewritten(model) == {"DynamicQuantizeLSTM": 1}
    got = xgen_mlir.compile(model, example_inputs=tuple(xs))(*xs)
    check_close(got, _ort(model, xs)[0], atol=1e-5, rtol=1e-5, what="DynamicQuantizeLSTM")


def test_dynamic_quantize_lstm_is_its_definition_without_saturation(tmp_path):
    """Full-range int8 weights: the result is the op's definition computed exactly (integer
    products of the quantized activation and weights, scaled), checked against numpy. ONNX
    Runtime differs from it on x86 CPUs without VNNI: its u8 x s8 kernel there (AVX2's
    vpmaddubsw) saturates pairs of products at 16 bits."""
    model, xs = _quantized_lstm(tmp_path, False, False, False)
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    node = next(n for n in model.graph.node if n.op_type == "DynamicQuantizeLSTM")
    w, r, b = (inits[node.input[i]][0] for i in (1, 2, 3))
    w_s, w_zp, r_s, r_zp = (inits[node.input[i]][0] for i in (8, 9, 10, 11))

    def product(a: np.ndarray, q: np.ndarray, scale: np.ndarray, zp: np.ndarray) -> np.ndarray:
        lo, hi = min(float(a.min()), 0.0), max(float(a.max()), 0.0)
        s = np.float32((hi - lo) / 255) if hi > lo else np.float32(1)
        z = np.clip(np.round(-lo / s), 0, 255)
        a_q = np.clip(np.round(a / s) + z, 0, 255).astype(np.int64) - int(z)
        acc = a_q @ (q.astype(np.int64) - zp.astype(np.int64))  # exact integers
        return (acc.astype(np.float32) * (s * scale)).astype(np.float32)

    def sigmoid(v: np.ndarray) -> np.ndarray:
        return 1 / (1 + np.exp(-v))

    hid = r.shape[0]
    gates_x = product(xs[0].reshape(T, -1), w, w_s, w_zp) + b[: 4 * hid] + b[4 * hid :]
    h, c, want = np.zeros((1, hid), np.float32), np.zeros((1, hid), np.float32), []
    for t in range(T):
        i, o, f, cand = np.split(gates_x[t : t + 1] + product(h, r, r_s, r_zp), 4, axis=1)
        c = sigmoid(f) * c + sigmoid(i) * np.tanh(cand)
        h = sigmoid(o) * np.tanh(c)
        want.append(h)
    got = xgen_mlir.compile(model, example_inputs=tuple(xs))(*xs)
    check_close(got, np.stack(want), atol=1e-5, rtol=1e-5, what="the op's definition")


def test_dynamic_quantize_lstm_the_rewrite_cannot_take_is_reported(tmp_path):
    """A DynamicQuantizeLSTM outside the unrolled form (here: with ``clip``) has no other
    lowering: the import names it as an unsupported op, never a wrong answer."""
    model, xs = _quantized_lstm(tmp_path, False, False, True)
    node = next(n for n in model.graph.node if n.op_type == "DynamicQuantizeLSTM")
    node.attribute.append(helper.make_attribute("clip", 3.0))
    assert _rewritten(model) == {}
    with pytest.raises(errors.UnsupportedOpsError, match="DynamicQuantizeLSTM"):
        import_onnx(model, input_shapes=[x.shape for x in xs])


def test_unrolled_fp16_lstm_keeps_its_float_type():
    """An fp16 LSTM unrolls into fp16 ops (its default zero bias too): the rewritten graph is
    valid ONNX and ONNX Runtime gives what it gave for the LSTM node."""
    model, xs = _rnn("forward", states=False, outputs=("Y",))
    for t in model.graph.initializer:
        t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float16), t.name))
    del model.graph.initializer[2:]  # no B: the rewrite makes the zero bias itself
    del model.graph.node[0].input[3:]
    for v in [*model.graph.input, *model.graph.output]:
        v.type.tensor_type.elem_type = TensorProto.FLOAT16
    x = xs[0].astype(np.float16)
    want = _ort(model, [x])[0]
    rewritten = shape_inference.infer_shapes(model)
    assert onnx_rnn.rewrite_recurrent_ops(rewritten) == {"LSTM": 1}
    onnx.checker.check_model(rewritten, full_check=True)
    got = _ort(rewritten, [x])[0]
    assert got.dtype == np.float16
    check_close(got.astype(np.float32), want.astype(np.float32), atol=2e-3, rtol=2e-3, what="fp16")
