"""ONNX Runtime's quantized ``com.microsoft`` ops as standard ONNX ops, before import.

torch-mlir's ONNX importer lowers the standard quantized ops (QuantizeLinear,
DequantizeLinear, QLinearConv, QLinearMatMul, MatMulInteger, DynamicQuantizeLinear) but not the
contrib ops ONNX Runtime's quantization tools and graph optimizer emit (QGemm from the QOperator
format, QLinearAdd & co. on residual adds, DynamicQuantizeMatMul / MatMulIntegerToFloat from
its fusion of dynamic quantization). Each of those has an exact definition in standard ops:

* the contractions become ``DequantizeLinear`` of each operand, then the float MatMul/Gemm.
  That form is what torch-mlir's ``torch-fuse-quantized-ops`` turns back into an integer
  contraction (i8 x i8 -> i32, ``linalg.quantized_matmul``) where the quantization is per
  tensor; the zero-point arithmetic is exact either way, only float reassociation differs;
* the elementwise ones (QLinearAdd, QLinearMul, QLinearSigmoid, ...) become dequantize -> float
  op -> QuantizeLinear, which is how ONNX Runtime defines them (its lookup tables and fixed
  point can round the last bit differently: one step of the output scale).

One function per op. Ops not in the table stay as they are and ``onnx_import`` reports them,
all at once, by name and count.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import onnx
from onnx import helper

MS = "com.microsoft"


class _Graph:
    """Fresh names and the constant shapes the rewrites need (per-channel scales)."""

    def __init__(self, graph: onnx.GraphProto) -> None:
        self.graph = graph
        self.inits = {t.name: t for t in graph.initializer}
        self.used = {n for node in graph.node for n in (*node.input, *node.output)}
        self.used |= set(self.inits) | {v.name for v in graph.input}
        self.count = 0
        self.one = ""  # a float 1.0 initializer, once one is needed

    def name(self, base: str) -> str:
        while True:
            self.count += 1
            cand = f"{base}__xq{self.count}"
            if cand not in self.used:
                self.used.add(cand)
                return cand

    def numel(self, name: str) -> int | None:
        """Elements of a constant (None: not an initializer, so a scalar by the ops' rules)."""
        t = self.inits.get(name)
        if t is None:
            return None
        n = 1
        for d in t.dims:
            n *= d
        return n


Emit = Callable[[str, list[str], list[str]], None]


def _opt(node: onnx.NodeProto, i: int) -> str:
    return node.input[i] if len(node.input) > i else ""


def _attr(node: onnx.NodeProto, name: str, default: float | int) -> float | int:
    for a in node.attribute:
        if a.name == name:
            return helper.get_attribute_value(a)  # type: ignore[no-any-return]
    return default


def _dq(
    g: _Graph,
    out: list[onnx.NodeProto],
    node: onnx.NodeProto,
    x: str,
    scale: str,
    zp: str,
    axis: int | None = None,
) -> str:
    """DequantizeLinear(x, scale, zp); ``axis`` only where the scale is per channel."""
    y = g.name(node.name)
    n = g.numel(scale)
    kw: dict[str, Any] = {"axis": axis} if axis is not None and n is not None and n > 1 else {}
    out.append(helper.make_node("DequantizeLinear", [x, scale, zp], [y], g.name(node.name), **kw))
    return y


def _q(
    g: _Graph, out: list[onnx.NodeProto], node: onnx.NodeProto, x: str, scale: str, zp: str, y: str
) -> None:
    out.append(helper.make_node("QuantizeLinear", [x, scale, zp], [y], g.name(node.name)))


def _plain(
    g: _Graph,
    out: list[onnx.NodeProto],
    node: onnx.NodeProto,
    op: str,
    ins: list[str],
    **attrs: Any,
) -> str:
    y = g.name(node.name)
    out.append(helper.make_node(op, ins, [y], g.name(node.name), **attrs))
    return y


def _qgemm(g: _Graph, node: onnx.NodeProto) -> list[onnx.NodeProto]:
    """QGemm(A, a_s, a_zp, B, b_s, b_zp, C?, y_s?, y_zp?): alpha*A'B' + C*(a_s*b_s), C int32."""
    out: list[onnx.NodeProto] = []
    a, a_s, a_zp, b, b_s, b_zp = node.input[:6]
    c, y_s, y_zp = _opt(node, 6), _opt(node, 7), _opt(node, 8)
    trans_a, trans_b = int(_attr(node, "transA", 0)), int(_attr(node, "transB", 0))
    alpha = float(_attr(node, "alpha", 1.0))
    a_f = _dq(g, out, node, a, a_s, a_zp)
    b_f = _dq(g, out, node, b, b_s, b_zp, axis=0 if trans_b else 1)  # per output column
    ins = [a_f, b_f]
    if c:
        c_scale = _plain(g, out, node, "Mul", [a_s, b_s])
        c_f = _plain(g, out, node, "Cast", [c], to=onnx.TensorProto.FLOAT)
        ins.append(_plain(g, out, node, "Mul", [c_f, c_scale]))
    if y_s:
        y = _plain(g, out, node, "Gemm", ins, alpha=alpha, beta=1.0, transA=trans_a, transB=trans_b)
        _q(g, out, node, y, y_s, y_zp, node.output[0])
    else:
        out.append(
            helper.make_node(
                "Gemm",
                ins,
                [node.output[0]],
                g.name(node.name),
                alpha=alpha,
                beta=1.0,
                transA=trans_a,
                transB=trans_b,
            )
        )
    return out


def _matmul_float(
    g: _Graph,
    node: onnx.NodeProto,
    out: list[onnx.NodeProto],
    a_f: str,
    b: str,
    b_s: str,
    b_zp: str,
    bias: str,
) -> list[onnx.NodeProto]:
    """MatMul(a_f, DQ(b)) (+ bias) into the node's output; b is 2-D [K, N], scales per N."""
    b_f = _dq(g, out, node, b, b_s, b_zp, axis=1)
    if bias:
        y = _plain(g, out, node, "MatMul", [a_f, b_f])
        out.append(helper.make_node("Add", [y, bias], [node.output[0]], g.name(node.name)))
    else:
        out.append(helper.make_node("MatMul", [a_f, b_f], [node.output[0]], g.name(node.name)))
    return out


def _dynamic_quantize_matmul(g: _Graph, node: onnx.NodeProto) -> list[onnx.NodeProto]:
    """DynamicQuantizeMatMul(A f32, B, b_s, b_zp?, bias?): A quantized to uint8 at run time."""
    out: list[onnx.NodeProto] = []
    a_q, a_s, a_zp = g.name(node.name), g.name(node.name), g.name(node.name)
    out.append(
        helper.make_node(
            "DynamicQuantizeLinear", [node.input[0]], [a_q, a_s, a_zp], g.name(node.name)
        )
    )
    a_f = _dq(g, out, node, a_q, a_s, a_zp)
    b, b_s = node.input[1], node.input[2]
    return _matmul_float(g, node, out, a_f, b, b_s, _opt(node, 3), _opt(node, 4))


def _matmul_integer_to_float(g: _Graph, node: onnx.NodeProto) -> list[onnx.NodeProto]:
    """MatMulIntegerToFloat(A, B, a_s, b_s, a_zp?, b_zp?, bias?) = (A-a_zp)(B-b_zp)a_s b_s + b."""
    out: list[onnx.NodeProto] = []
    a, b, a_s, b_s = node.input[:4]
    a_f = _dq(g, out, node, a, a_s, _opt(node, 4))
    return _matmul_float(g, node, out, a_f, b, b_s, _opt(node, 5), _opt(node, 6))


def _binary(op: str) -> Callable[[_Graph, onnx.NodeProto], list[onnx.NodeProto]]:
    def rewrite(g: _Graph, node: onnx.NodeProto) -> list[onnx.NodeProto]:
        """QLinear<op>(A, a_s, a_zp, B, b_s, b_zp, c_s, c_zp?) = Q(DQ(A) op DQ(B))."""
        out: list[onnx.NodeProto] = []
        a_f = _dq(g, out, node, *node.input[0:3])
        b_f = _dq(g, out, node, *node.input[3:6])
        y = _plain(g, out, node, op, [a_f, b_f])
        _q(g, out, node, y, node.input[6], _opt(node, 7), node.output[0])
        return out

    rewrite.__name__ = f"_qlinear_{op.lower()}"
    return rewrite


def _unary(op: str, **attrs: float) -> Callable[[_Graph, onnx.NodeProto], list[onnx.NodeProto]]:
    def rewrite(g: _Graph, node: onnx.NodeProto) -> list[onnx.NodeProto]:
        """QLinear<op>(X, x_s, x_zp, y_s, y_zp?) = Q(op(DQ(X)))."""
        out: list[onnx.NodeProto] = []
        x_f = _dq(g, out, node, *node.input[0:3])
        kw = {k: float(_attr(node, k, v)) for k, v in attrs.items()}
        y = _plain(g, out, node, op, [x_f], **kw)
        _q(g, out, node, y, node.input[3], _opt(node, 4), node.output[0])
        return out

    rewrite.__name__ = f"_qlinear_{op.lower()}"
    return rewrite


def _qlinear_global_average_pool(g: _Graph, node: onnx.NodeProto) -> list[onnx.NodeProto]:
    """QLinearGlobalAveragePool(X, x_s, x_zp, y_s, y_zp), NCHW or (channels_last=1) NHWC."""
    out: list[onnx.NodeProto] = []
    x_f = _dq(g, out, node, *node.input[0:3])
    if int(_attr(node, "channels_last", 0)):
        # mean over the spatial dims 1..r-2 of NHWC; rank is not known here: use ReduceMean
        # over axes [1, 2] (the 4-D case ONNX Runtime's NHWC transformer produces)
        y = _plain(g, out, node, "ReduceMean", [x_f], axes=[1, 2], keepdims=1)
    else:
        y = _plain(g, out, node, "GlobalAveragePool", [x_f])
    _q(g, out, node, y, node.input[3], _opt(node, 4), node.output[0])
    return out


def _qlinear_concat(g: _Graph, node: onnx.NodeProto) -> list[onnx.NodeProto]:
    """QLinearConcat(y_s, y_zp, (X, x_s, x_zp)...) = Q(Concat(DQ(X)...))."""
    out: list[onnx.NodeProto] = []
    parts = [_dq(g, out, node, *node.input[i : i + 3]) for i in range(2, len(node.input), 3)]
    y = _plain(g, out, node, "Concat", parts, axis=int(_attr(node, "axis", 0)))
    _q(g, out, node, y, node.input[0], node.input[1], node.output[0])
    return out


REWRITES: dict[str, Callable[[_Graph, onnx.NodeProto], list[onnx.NodeProto]]] = {
    "QGemm": _qgemm,
    "DynamicQuantizeMatMul": _dynamic_quantize_matmul,
    "MatMulIntegerToFloat": _matmul_integer_to_float,
    "QLinearAdd": _binary("Add"),
    "QLinearMul": _binary("Mul"),
    "QLinearSigmoid": _unary("Sigmoid"),
    "QLinearLeakyRelu": _unary("LeakyRelu", alpha=0.01),
    "QLinearGlobalAveragePool": _qlinear_global_average_pool,
    "QLinearConcat": _qlinear_concat,
}


def _integer_matmul_then_cast(g: _Graph, node: onnx.NodeProto) -> onnx.NodeProto | None:
    """The Cast to float that is the only reader of a per-tensor MatMulInteger, or None."""
    if node.domain not in ("", "ai.onnx") or node.op_type != "MatMulInteger":
        return None
    if any((g.numel(z) or 1) != 1 for z in node.input[2:4] if z):  # per-column zero points
        return None
    out = node.output[0]
    readers = [n for n in g.graph.node if out in n.input]
    if len(readers) != 1 or out in {o.name for o in g.graph.output}:
        return None
    cast = readers[0]
    if cast.op_type != "Cast" or _attr(cast, "to", 0) != onnx.TensorProto.FLOAT:
        return None
    return cast


def _matmul_integer(g: _Graph, node: onnx.NodeProto, cast: onnx.NodeProto) -> list[onnx.NodeProto]:
    """Cast<float>(MatMulInteger(A, B, a_zp?, b_zp?)) = MatMul(DQ(A, 1, a_zp), DQ(B, 1, b_zp)).

    quantize_dynamic's standard form. torch-mlir lowers MatMulInteger itself as an i32 x i32
    -> i64 matmul (IREE: 14 GOP/s at 1024^3 against 155 for f32 on this host); the dequantize
    form is what torch-fuse-quantized-ops makes an i8 x i8 -> i32 quantized matmul."""
    if not g.one:
        g.one = g.name("one")
        g.graph.initializer.append(helper.make_tensor(g.one, onnx.TensorProto.FLOAT, [], [1.0]))
    out: list[onnx.NodeProto] = []
    a_f = _dq(g, out, node, node.input[0], g.one, _opt(node, 2))
    b_f = _dq(g, out, node, node.input[1], g.one, _opt(node, 3))
    out.append(helper.make_node("MatMul", [a_f, b_f], [cast.output[0]], g.name(node.name)))
    return out


def rewrite_quantized_contrib_ops(proto: onnx.ModelProto) -> dict[str, int]:
    """Replace, in place, the ``com.microsoft`` quantized ops of REWRITES in the main graph by
    standard ops, and per-tensor MatMulInteger -> Cast<float> pairs by their dequantize form;
    returns {op type: count rewritten}. Others are left for the importer to report. The
    default-domain opset must be >= 13 (per-axis DequantizeLinear)."""
    g = _Graph(proto.graph)
    done: dict[str, int] = {}
    new_nodes: list[onnx.NodeProto] = []
    dropped: set[str] = set()  # outputs of Cast nodes folded into a MatMulInteger's rewrite
    for node in proto.graph.node:
        if node.op_type == "Cast" and node.output[0] in dropped:
            continue
        if not node.name:
            node.name = g.name(node.op_type)
        cast = _integer_matmul_then_cast(g, node)
        if cast is not None:
            dropped.add(cast.output[0])
            new_nodes.extend(_matmul_integer(g, node, cast))
            done["MatMulInteger"] = done.get("MatMulInteger", 0) + 1
            continue
        fn = REWRITES.get(node.op_type) if node.domain == MS else None
        if fn is None or (node.op_type == "QLinearConcat" and len(node.input) % 3 != 2):
            new_nodes.append(node)
            continue
        new_nodes.extend(fn(g, node))
        done[node.op_type] = done.get(node.op_type, 0) + 1
    if done:
        kept_nodes = [onnx.NodeProto() for _ in new_nodes]
        for dst, src in zip(kept_nodes, new_nodes, strict=True):
            dst.CopyFrom(src)
        del proto.graph.node[:]
        proto.graph.node.extend(kept_nodes)
        if not any(n.domain == MS for n in proto.graph.node):
            kept = [o for o in proto.opset_import if o.domain != MS]
            del proto.opset_import[:]
            proto.opset_import.extend(kept)
    return done


__all__ = ["REWRITES", "rewrite_quantized_contrib_ops"]
