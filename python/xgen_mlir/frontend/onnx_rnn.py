"""ONNX ``LSTM`` nodes as plain ops, unrolled over a static sequence, before import.

torch-mlir lowers an ONNX LSTM to a loop whose every step multiplies the step's input *and*
the previous hidden state by each gate's weights: eight small matrix-vector products per
step, one dispatch each, and one host-side submission per step. On ddddocr's CRNN reader
(a bidirectional LSTM, 32 steps, 512 hidden) that was 512 dispatches of 1x512x512 per call,
~24 ms against ONNX Runtime's 5.8 ms for the whole LSTM.

The rewrite here is the standard recurrent-layer schedule (cuDNN's and ONNX Runtime's): the
input projection of every step is one matrix product over the whole sequence, hoisted out of
the recurrence (compute-bound, not bandwidth-bound); each step then multiplies the hidden
state by all four gates' recurrent weights at once (one product of width 4H) and applies
the gates elementwise. With the sequence length static, the steps are unrolled into one
graph, so both directions of a bidirectional LSTM are independent chains IREE can run side
by side, in one submission.

Only the common form is rewritten: default activations (sigmoid, tanh, tanh), no clip, no
``input_forget``, no peepholes, no ``sequence_lens``, ``layout`` 0, constant weights, a static
sequence of at most ``MAX_STEPS`` (steps x directions). Any other LSTM stays as it is and
takes torch-mlir's loop, which computes the same thing, slower. The batch may be dynamic.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
from onnx import helper

from .onnx_quant import GraphEdit, replace_nodes

MAX_STEPS = 256  # sequence length x directions unrolled; a longer one keeps the loop
_DEFAULT_ACTS = ["Sigmoid", "Tanh", "Tanh"]


def rewrite_recurrent_ops(proto: onnx.ModelProto) -> dict[str, int]:
    """Replace, in place, each LSTM of the main graph that ``_unrollable`` accepts by its
    unrolled form; returns {"LSTM": count} (empty when none was rewritten). ``proto`` must
    carry shape information (``onnx.shape_inference``) for the sequence length."""
    shapes = _static_shapes(proto.graph)
    g = GraphEdit(proto.graph)
    new_nodes: list[onnx.NodeProto] = []
    done = 0
    for node in proto.graph.node:
        plan = _unrollable(g, node, shapes) if node.op_type == "LSTM" and not node.domain else None
        if plan is None:
            new_nodes.append(node)
            continue
        new_nodes.extend(_unroll_lstm(g, node, *plan))
        done += 1
    if done:
        replace_nodes(proto, new_nodes)
    return {"LSTM": done} if done else {}


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


def _unrollable(
    g: GraphEdit, node: onnx.NodeProto, shapes: dict[str, list[int | None]]
) -> tuple[int, int, int] | None:
    """(steps, directions, hidden) when this LSTM is in the form the rewrite handles."""
    a = _attrs(node)
    inputs = list(node.input) + [""] * (8 - len(node.input))
    x, w, r, b, seq_lens, _, _, peep = inputs[:8]
    acts = a.get("activations", [])
    direction = a.get("direction", "forward")
    dirs = 2 if direction == "bidirectional" else 1
    if (
        acts not in ([], _DEFAULT_ACTS * dirs)
        or "clip" in a
        or a.get("input_forget", 0)
        or a.get("layout", 0)
        or "activation_alpha" in a
        or "activation_beta" in a
        or seq_lens
        or peep
        or direction not in ("forward", "reverse", "bidirectional")
    ):
        return None
    if g.array(w) is None or g.array(r) is None or (b and g.array(b) is None):
        return None
    x_shape = shapes.get(x)
    if not x_shape or len(x_shape) != 3 or x_shape[0] is None or x_shape[2] is None:
        return None
    steps, hidden = x_shape[0], int(a.get("hidden_size", 0))
    if not hidden or steps * dirs > MAX_STEPS or steps < 1:
        return None
    return steps, dirs, hidden


def _unroll_lstm(
    g: GraphEdit, node: onnx.NodeProto, steps: int, dirs: int, hidden: int
) -> list[onnx.NodeProto]:
    inputs = list(node.input) + [""] * (8 - len(node.input))
    x, w, r, b, _, h0, c0, _ = inputs[:8]
    outputs = list(node.output) + [""] * (3 - len(node.output))
    reverse_only = _attrs(node).get("direction") == "reverse"
    w_all, r_all = g.array(w), g.array(r)
    assert w_all is not None and r_all is not None
    b_all = g.array(b) if b else np.zeros((dirs, 8 * hidden), np.float32)
    assert b_all is not None
    base = node.name or "lstm"
    nodes: list[onnx.NodeProto] = []

    def emit(op: str, ins: list[str], **attrs: Any) -> str:
        out = g.name(f"{base}_{op.lower()}")
        nodes.append(helper.make_node(op, ins, [out], name=out, **attrs))
        return out

    def const(name: str, value: np.ndarray) -> str:
        return g.constant(f"{base}_{name}", value)

    def i64(*v: int) -> str:
        return const("i64", np.array(v, np.int64))

    def rows(value: str, start: int, stop: int, axis: int) -> str:
        return emit("Slice", [value, i64(start), i64(stop), i64(axis)])

    flat = i64(-1, hidden)
    ys, hs, cs = [], [], []
    for d in range(dirs):
        dtype = w_all.dtype
        wt = const(f"w{d}_t", np.ascontiguousarray(w_all[d].T))  # (input, 4H)
        rt = const(f"r{d}_t", np.ascontiguousarray(r_all[d].T))  # (H, 4H)
        bias = const(f"b{d}", (b_all[d, : 4 * hidden] + b_all[d, 4 * hidden :]).astype(dtype))
        projected = emit("Add", [emit("MatMul", [x, wt]), bias])  # (T, batch, 4H), hoisted
        h = emit("Reshape", [rows(h0, d, d + 1, 0), flat]) if h0 else ""
        c = emit("Reshape", [rows(c0, d, d + 1, 0), flat]) if c0 else ""
        backwards = reverse_only or d == 1
        order = range(steps - 1, -1, -1) if backwards else range(steps)
        per_step: dict[int, str] = {}
        for t in order:
            gates = emit("Reshape", [rows(projected, t, t + 1, 0), i64(-1, 4 * hidden)])
            if h:  # a zero state adds nothing: the first step of a zero-initialised LSTM
                gates = emit("Add", [gates, emit("MatMul", [h, rt])])
            i, o, f, cand = (rows(gates, k * hidden, (k + 1) * hidden, 1) for k in range(4))
            i, o, f = emit("Sigmoid", [i]), emit("Sigmoid", [o]), emit("Sigmoid", [f])
            new_c = emit("Mul", [i, emit("Tanh", [cand])])
            if c:
                new_c = emit("Add", [emit("Mul", [f, c]), new_c])
            c = new_c
            h = emit("Mul", [o, emit("Tanh", [c])])
            per_step[t] = h
        if outputs[0]:
            in_time = [per_step[t] for t in range(steps)]
            ys.append(emit("Reshape", [emit("Concat", in_time, axis=0), i64(steps, 1, -1, hidden)]))
        hs.append(h)
        cs.append(c)
    shapes = [(steps, dirs, -1, hidden), (dirs, -1, hidden), (dirs, -1, hidden)]
    for k, (out, parts) in enumerate(zip(outputs, (ys, hs, cs), strict=True)):
        if not out:
            continue
        joined = parts[0] if len(parts) == 1 else emit("Concat", parts, axis=1 if k == 0 else 0)
        nodes.append(
            helper.make_node("Reshape", [joined, i64(*shapes[k])], [out], name=g.name(base))
        )
    return nodes


__all__ = ["MAX_STEPS", "rewrite_recurrent_ops"]
