"""ONNX ``LSTM`` and ``GRU`` nodes as plain ops, unrolled over a static sequence, before import.

torch-mlir lowers an ONNX LSTM to a loop whose every step multiplies the step's input *and*
the previous hidden state by each gate's weights: eight small matrix-vector products per
step, one dispatch each, and one host-side submission per step. On ddddocr's CRNN reader
(a bidirectional LSTM, 32 steps, 512 hidden) that was 512 dispatches of 1x512x512 per call,
~24 ms against ONNX Runtime's 5.8 ms for the whole LSTM.

The rewrite here is the standard recurrent-layer schedule (cuDNN's and ONNX Runtime's): the
input projection of every step is one matrix product over the whole sequence, hoisted out of
the recurrence (compute-bound, not bandwidth-bound); each step then multiplies the hidden
state by all the gates' recurrent weights at once (one product of width 4H for an LSTM, 3H
for a GRU with ``linear_before_reset``, PyTorch's form; 2H and H without it) and applies the
gates elementwise. With the sequence length static, the steps are unrolled into one graph, so
both directions of a bidirectional layer are independent chains IREE can run side by side,
in one submission.

ONNX Runtime's ``com.microsoft`` DynamicQuantizeLSTM (what its ``quantize_dynamic`` makes of
an LSTM: int8 or uint8 weights ``[directions, in, 4H]`` with per-tensor or per-gate-column
scales) is unrolled the same way, each product as ONNX Runtime computes it: the activation
(the whole sequence for the hoisted input projection, the hidden state at each step)
quantized to uint8 at run time with its own range (``DynamicQuantizeLinear``), dequantized,
times the dequantized weights. The quantization is ONNX Runtime's; only float reassociation
differs (and, for a batch over 1, ONNX Runtime may split the batch's rows over threads, each
part with its own range; here the range is the whole batch's). A DynamicQuantizeLSTM the
rewrite cannot take stays and is reported as an unsupported op.

Only the common form is rewritten: default activations, no clip, no ``input_forget``, no
peepholes, no ``sequence_lens`` (or a constant one of full lengths), ``layout`` 0, constant
weights, a static sequence of at most ``MAX_STEPS`` (steps x directions). Any other stays as it
is and takes torch-mlir's loop, which computes the same thing, slower. The batch may be
dynamic.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import onnx
from onnx import helper

from .onnx_quant import MS, GraphEdit, replace_nodes

MAX_STEPS = 256  # sequence length x directions unrolled; a longer one keeps the loop
# per op: default activations (per direction), gates, outputs (Y, Y_h[, Y_c])
_FORMS = {"LSTM": (["Sigmoid", "Tanh", "Tanh"], 4, 3), "GRU": (["Sigmoid", "Tanh"], 3, 2)}
QUANTIZED_LSTM = "DynamicQuantizeLSTM"  # com.microsoft; inputs 8-11: W/R scales and zero points


def _form(node: onnx.NodeProto) -> str | None:
    """The recurrent form of ``node`` ("LSTM", "GRU"), or None for any other op."""
    if not node.domain and node.op_type in _FORMS:
        return node.op_type
    if node.domain == MS and node.op_type == QUANTIZED_LSTM:
        return "LSTM"
    return None


def rewrite_recurrent_ops(proto: onnx.ModelProto) -> dict[str, int]:
    """Replace, in place, each LSTM / GRU of the main graph that ``_unrollable`` accepts by
    its unrolled form; returns {op type: count rewritten}. ``proto`` must carry shape
    information (``onnx.shape_inference``) for the sequence length."""
    shapes = _static_shapes(proto.graph)
    g = GraphEdit(proto.graph)
    new_nodes: list[onnx.NodeProto] = []
    done: dict[str, int] = {}
    for node in proto.graph.node:
        plan = _unrollable(g, node, shapes) if _form(node) else None
        if plan is None:
            new_nodes.append(node)
            continue
        new_nodes.extend(_unroll(g, node, *plan))
        done[node.op_type] = done.get(node.op_type, 0) + 1
    if done:
        replace_nodes(proto, new_nodes)
        if not any(n.domain == MS for n in proto.graph.node):
            kept = [o for o in proto.opset_import if o.domain != MS]
            del proto.opset_import[:]
            proto.opset_import.extend(kept)
    return done


def _static_shapes(graph: onnx.GraphProto) -> dict[str, list[int | None]]:
    out: dict[str, list[int | None]] = {}
    for v in [*graph.input, *graph.value_info, *graph.output]:
        t = v.type.tensor_type
        if t.HasField("shape"):
            out[v.name] = [d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim]
    for t in graph.initializer:
        out[t.name] = list(t.dims)
    return out


def _attrs(node: onnx.NodeProto) -> dict[str, Any]:
    def text(v: Any) -> Any:
        return v.decode() if isinstance(v, bytes) else v

    out = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    return {k: [text(x) for x in v] if isinstance(v, list) else text(v) for k, v in out.items()}


def _inputs(node: onnx.NodeProto, count: int = 8) -> list[str]:
    return list(node.input) + [""] * (count - len(node.input))


def _unrollable(
    g: GraphEdit, node: onnx.NodeProto, shapes: dict[str, list[int | None]]
) -> tuple[int, int, int] | None:
    """(steps, directions, hidden) when this LSTM / GRU is in the form the rewrite handles."""
    a = _attrs(node)
    form = _form(node)
    assert form is not None  # the caller checked
    acts_default, _, _ = _FORMS[form]
    x, w, r, b, seq_lens, _, _, peep, *scales = _inputs(node, 12)
    direction = a.get("direction", "forward")
    dirs = 2 if direction == "bidirectional" else 1
    if (
        a.get("activations", []) not in ([], acts_default * dirs)
        or "clip" in a
        or a.get("input_forget", 0)
        or a.get("layout", 0)
        or "activation_alpha" in a
        or "activation_beta" in a
        or (seq_lens and not _all_full_length(g, seq_lens, shapes.get(x)))
        or (form == "LSTM" and peep)
        or direction not in ("forward", "reverse", "bidirectional")
    ):
        return None
    if g.array(w) is None or g.array(r) is None or (b and g.array(b) is None):
        return None
    if node.op_type == QUANTIZED_LSTM and any(not v or g.array(v) is None for v in scales):
        return None  # scales and zero points must be constants
    x_shape = shapes.get(x)
    if not x_shape or len(x_shape) != 3 or x_shape[0] is None or x_shape[2] is None:
        return None
    steps, hidden = x_shape[0], int(a.get("hidden_size", 0))
    if not hidden or steps * dirs > MAX_STEPS or steps < 1:
        return None
    return steps, dirs, hidden


def _constant(g: GraphEdit, name: str) -> np.ndarray:
    value = g.array(name)
    assert value is not None  # _unrollable checked
    return value


def _all_full_length(g: GraphEdit, seq_lens: str, x_shape: list[int | None] | None) -> bool:
    """``sequence_lens`` is a constant saying every sequence is the whole length (what some
    exporters write): the same as giving none."""
    lens = g.array(seq_lens)
    return lens is not None and x_shape is not None and bool((lens == x_shape[0]).all())


class _Emitter:
    """New nodes and constants for one rewritten node."""

    def __init__(self, g: GraphEdit, base: str) -> None:
        self.g, self.base = g, base
        self.nodes: list[onnx.NodeProto] = []
        self._ints: dict[tuple[int, ...], str] = {}

    def __call__(self, op: str, ins: list[str], out: str = "", **attrs: Any) -> str:
        name = self.g.name(f"{self.base}_{op.lower()}")
        self.nodes.append(helper.make_node(op, ins, [out or name], name=name, **attrs))
        return out or name

    def outputs(self, op: str, ins: list[str], count: int) -> list[str]:
        """A node with ``count`` outputs; their names."""
        name = self.g.name(f"{self.base}_{op.lower()}")
        outs = [self.g.name(f"{name}_out") for _ in range(count)]
        self.nodes.append(helper.make_node(op, ins, outs, name=name))
        return outs

    def const(self, name: str, value: np.ndarray) -> str:
        return self.g.constant(f"{self.base}_{name}", value)

    def ints(self, *v: int) -> str:
        if v not in self._ints:
            self._ints[v] = self.const("i64", np.array(v, np.int64))
        return self._ints[v]

    def part(self, value: str, start: int, stop: int, axis: int = -1) -> str:
        return self("Slice", [value, self.ints(start), self.ints(stop), self.ints(axis)])


def _unroll(
    g: GraphEdit, node: onnx.NodeProto, steps: int, dirs: int, hidden: int
) -> list[onnx.NodeProto]:
    x, w, r, b, _, h0, c0, *_ = _inputs(node, 12)  # a GRU has no initial_c (c0 is "")
    form = _form(node)
    assert form is not None  # the caller checked
    _, gates, n_outputs = _FORMS[form]
    outputs = (list(node.output) + [""] * 3)[:n_outputs]
    attrs = _attrs(node)
    w_all, r_all = g.array(w), g.array(r)
    assert w_all is not None and r_all is not None
    float_type = w_all.dtype if w_all.dtype.kind == "f" else np.dtype(np.float32)  # int8 W: f32
    b_all = g.array(b) if b else np.zeros((dirs, 2 * gates * hidden), float_type)
    assert b_all is not None
    e = _Emitter(g, node.name or node.op_type.lower())
    quantized = node.op_type == QUANTIZED_LSTM
    if quantized:
        w_s, w_zp, r_s, r_zp = (_constant(g, v) for v in _inputs(node, 12)[8:])
    flat = e.ints(-1, hidden)
    in_width = w_all.shape[1] if quantized else w_all.shape[-1]  # W: [in, 4H] or [gates H, in]
    seq = _Sequence(e("Reshape", [x, e.ints(-1, in_width)]), steps)
    ys, hs, cs = [], [], []
    for d in range(dirs):
        h = e("Reshape", [e.part(h0, d, d + 1, 0), flat]) if h0 else ""
        c = e("Reshape", [e.part(c0, d, d + 1, 0), flat]) if c0 else ""
        backwards = attrs.get("direction") == "reverse" or d == 1
        if quantized:  # weights [in, 4H] and [H, 4H]: already the products' right operands
            step = _lstm_step(
                e,
                _dynamic_product(e, w_all[d], w_s[d], w_zp[d], "w"),
                _dynamic_product(e, r_all[d], r_s[d], r_zp[d], "r"),
                b_all[d],
                seq,
                hidden,
            )
        elif form == "LSTM":
            step = _lstm_step(
                e,
                _float_product(e, w_all[d].T, "w_t"),
                _float_product(e, r_all[d].T, "r_t"),
                b_all[d],
                seq,
                hidden,
            )
        else:
            step = _gru_step(e, w_all[d], r_all[d], b_all[d], seq, hidden, attrs)
        per_step: dict[int, str] = {}
        for t in range(steps - 1, -1, -1) if backwards else range(steps):
            h, c = step(t, h, c)
            per_step[t] = h
        if outputs[0]:
            in_time = e("Concat", [per_step[t] for t in range(steps)], axis=0)
            ys.append(e("Reshape", [in_time, e.ints(steps, 1, -1, hidden)]))
        hs.append(h)
        cs.append(c)
    shapes = [(steps, dirs, -1, hidden), (dirs, -1, hidden), (dirs, -1, hidden)]
    for k, (out, parts) in enumerate(zip(outputs, (ys, hs, cs), strict=False)):
        if out:
            joined = parts[0] if len(parts) == 1 else e("Concat", parts, axis=1 if k == 0 else 0)
            e("Reshape", [joined, e.ints(*shapes[k])], out=out)
    return e.nodes


Step = Callable[[int, str, str], tuple[str, str]]
Product = Callable[[str], str]  # an activation (.., K) -> its product with a (K, N) weight


def _float_product(e: _Emitter, weight: np.ndarray, name: str) -> Product:
    """Products with the f32 constant ``weight`` (K, N)."""
    const = e.const(name, np.ascontiguousarray(weight))
    return lambda a: e("MatMul", [a, const])


def _dynamic_product(
    e: _Emitter, q: np.ndarray, scale: np.ndarray, zp: np.ndarray, name: str
) -> Product:
    """Products with the quantized constant ``q`` (K, N; scale and zero point per tensor or
    per column) as ONNX Runtime's quantized LSTM computes them: the activation quantized to
    uint8 with its own run-time range, each time."""
    parts = [e.const(name, q), e.const(f"{name}_scale", scale), e.const(f"{name}_zp", zp)]
    weight = e("DequantizeLinear", parts, axis=1) if scale.ndim else e("DequantizeLinear", parts)

    def product(a: str) -> str:
        a_q, a_s, a_zp = e.outputs("DynamicQuantizeLinear", [a], 3)
        return e("MatMul", [e("DequantizeLinear", [a_q, a_s, a_zp]), weight])

    return product


@dataclass(frozen=True)
class _Sequence:
    """The recurrence's input: ``rows`` is X (T, batch, in) as (T * batch, in), so that each
    hoisted input projection is one 2-D product of T * batch rows (a Linear layer the GEMM
    routes take; as a 3-D MatMul it became T one-row batched products), shared by the
    directions (which merge into one product); ``steps`` is T."""

    rows: str
    steps: int


def _projection(
    e: _Emitter, w: Product, bias: np.ndarray, x: _Sequence, width: int
) -> Callable[[int], str]:
    """The input projection of every step at once, hoisted: X (T * batch, in) @ W^T + bias,
    viewed as (T, batch, width); returns step t's (batch, width) slice."""
    projected = e("Add", [w(x.rows), e.const("bias", bias)])  # the model's float type
    in_time = e("Reshape", [projected, e.ints(x.steps, -1, width)])

    def at(t: int) -> str:
        return e("Reshape", [e.part(in_time, t, t + 1, 0), e.ints(-1, width)])

    return at


def _lstm_step(
    e: _Emitter, w: Product, r: Product, b: np.ndarray, x: _Sequence, hidden: int
) -> Step:
    """ONNX's LSTM step (gates i, o, f, c; no peepholes): the hidden state times all four
    gates' recurrent weights at once (``r``: products with the (H, 4H) weight)."""
    n = 4 * hidden
    inputs = _projection(e, w, b[:n] + b[n:], x, n)

    def step(t: int, h: str, c: str) -> tuple[str, str]:
        gates = inputs(t)
        if h:  # a zero state adds nothing: the first step of a zero-initialised LSTM
            gates = e("Add", [gates, r(h)])
        i, o, f, cand = (e.part(gates, k * hidden, (k + 1) * hidden) for k in range(4))
        i, o, f = e("Sigmoid", [i]), e("Sigmoid", [o]), e("Sigmoid", [f])
        new_c = e("Mul", [i, e("Tanh", [cand])])
        if c:
            new_c = e("Add", [e("Mul", [f, c]), new_c])
        return e("Mul", [o, e("Tanh", [new_c])]), new_c

    return step


def _gru_step(
    e: _Emitter,
    w: np.ndarray,
    r: np.ndarray,
    b: np.ndarray,
    x: _Sequence,
    hidden: int,
    attrs: dict[str, Any],
) -> Step:
    """ONNX's GRU step (gates z, r, h). With ``linear_before_reset`` (PyTorch's GRU) the
    hidden state times all three gates' recurrent weights is one product; without, z and r
    share one and the candidate's is taken after the reset."""
    hh = 2 * hidden
    wb, rb = b[: 3 * hidden], b[3 * hidden :]
    before_reset = bool(attrs.get("linear_before_reset", 0))
    # the recurrent biases that add outside the reset go into the hoisted projection
    bias = wb + np.concatenate([rb[:hh], np.zeros(hidden, rb.dtype) if before_reset else rb[hh:]])
    inputs = _projection(e, _float_product(e, w.T, "w_t"), bias, x, 3 * hidden)
    if before_reset:
        rt = e.const("r_t", np.ascontiguousarray(r.T))  # (H, 3H)
        rb_h = e.const("rb_h", rb[hh:].astype(w.dtype))
    else:
        rt = e.const("r_zr_t", np.ascontiguousarray(r[:hh].T))  # (H, 2H)
        rt_h = e.const("r_h_t", np.ascontiguousarray(r[hh:].T))  # (H, H)

    def step(t: int, h: str, _: str) -> tuple[str, str]:
        xs = inputs(t)
        x_zr, x_h = e.part(xs, 0, hh), e.part(xs, hh, 3 * hidden)
        rec = e("MatMul", [h, rt]) if h else ""
        zr = e("Sigmoid", [e("Add", [x_zr, e.part(rec, 0, hh)]) if h else x_zr])
        z, reset = e.part(zr, 0, hidden), e.part(zr, hidden, hh)
        if before_reset:
            rec_h = e("Add", [e.part(rec, hh, 3 * hidden), rb_h]) if h else rb_h
            cand = e("Add", [x_h, e("Mul", [reset, rec_h])])
        else:
            cand = e("Add", [x_h, e("MatMul", [e("Mul", [reset, h]), rt_h])]) if h else x_h
        cand = e("Tanh", [cand])
        # (1 - z) * cand + z * h = cand + z * (h - cand); a zero state: cand - z * cand
        if h:
            return e("Add", [cand, e("Mul", [z, e("Sub", [h, cand])])]), ""
        return e("Sub", [cand, e("Mul", [z, cand])]), ""

    return step


__all__ = ["MAX_STEPS", "rewrite_recurrent_ops"]
