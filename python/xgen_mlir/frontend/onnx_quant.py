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

import numpy as np
import onnx
from onnx import helper, numpy_helper

MS = "com.microsoft"


class GraphEdit:
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

    def array(self, name: str) -> np.ndarray | None:
        """A constant's value (None: not an initializer)."""
        t = self.inits.get(name)
        return None if t is None else numpy_helper.to_array(t)

    def constant(self, base: str, value: np.ndarray) -> str:
        """A new initializer holding ``value``; its name."""
        name = self.name(base)
        t = numpy_helper.from_array(value, name)
        self.graph.initializer.append(t)
        self.inits[name] = t
        return name

    def one_float(self) -> str:
        """A float 1.0 scalar initializer, made once."""
        if not self.one:
            self.one = self.constant("one", np.array(1.0, np.float32))
        return self.one

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
    g: GraphEdit,
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
    g: GraphEdit,
    out: list[onnx.NodeProto],
    node: onnx.NodeProto,
    x: str,
    scale: str,
    zp: str,
    y: str,
) -> None:
    out.append(helper.make_node("QuantizeLinear", [x, scale, zp], [y], g.name(node.name)))


def _plain(
    g: GraphEdit,
    out: list[onnx.NodeProto],
    node: onnx.NodeProto,
    op: str,
    ins: list[str],
    **attrs: Any,
) -> str:
    y = g.name(node.name)
    out.append(helper.make_node(op, ins, [y], g.name(node.name), **attrs))
    return y


def _qgemm(g: GraphEdit, node: onnx.NodeProto) -> list[onnx.NodeProto]:
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
    g: GraphEdit,
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


def _dynamic_quantize_matmul(g: GraphEdit, node: onnx.NodeProto) -> list[onnx.NodeProto]:
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


def _matmul_integer_to_float(g: GraphEdit, node: onnx.NodeProto) -> list[onnx.NodeProto]:
    """MatMulIntegerToFloat(A, B, a_s, b_s, a_zp?, b_zp?, bias?) = (A-a_zp)(B-b_zp)a_s b_s + b."""
    out: list[onnx.NodeProto] = []
    a, b, a_s, b_s = node.input[:4]
    a_f = _dq(g, out, node, a, a_s, _opt(node, 4))
    return _matmul_float(g, node, out, a_f, b, b_s, _opt(node, 5), _opt(node, 6))


def _binary(op: str) -> Callable[[GraphEdit, onnx.NodeProto], list[onnx.NodeProto]]:
    def rewrite(g: GraphEdit, node: onnx.NodeProto) -> list[onnx.NodeProto]:
        """QLinear<op>(A, a_s, a_zp, B, b_s, b_zp, c_s, c_zp?) = Q(DQ(A) op DQ(B))."""
        out: list[onnx.NodeProto] = []
        a_f = _dq(g, out, node, *node.input[0:3])
        b_f = _dq(g, out, node, *node.input[3:6])
        y = _plain(g, out, node, op, [a_f, b_f])
        _q(g, out, node, y, node.input[6], _opt(node, 7), node.output[0])
        return out

    rewrite.__name__ = f"_qlinear_{op.lower()}"
    return rewrite


def _unary(op: str, **attrs: float) -> Callable[[GraphEdit, onnx.NodeProto], list[onnx.NodeProto]]:
    def rewrite(g: GraphEdit, node: onnx.NodeProto) -> list[onnx.NodeProto]:
        """QLinear<op>(X, x_s, x_zp, y_s, y_zp?) = Q(op(DQ(X)))."""
        out: list[onnx.NodeProto] = []
        x_f = _dq(g, out, node, *node.input[0:3])
        kw = {k: float(_attr(node, k, v)) for k, v in attrs.items()}
        y = _plain(g, out, node, op, [x_f], **kw)
        _q(g, out, node, y, node.input[3], _opt(node, 4), node.output[0])
        return out

    rewrite.__name__ = f"_qlinear_{op.lower()}"
    return rewrite


def _qlinear_global_average_pool(g: GraphEdit, node: onnx.NodeProto) -> list[onnx.NodeProto]:
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


def _qlinear_concat(g: GraphEdit, node: onnx.NodeProto) -> list[onnx.NodeProto]:
    """QLinearConcat(y_s, y_zp, (X, x_s, x_zp)...) = Q(Concat(DQ(X)...))."""
    out: list[onnx.NodeProto] = []
    parts = [_dq(g, out, node, *node.input[i : i + 3]) for i in range(2, len(node.input), 3)]
    y = _plain(g, out, node, "Concat", parts, axis=int(_attr(node, "axis", 0)))
    _q(g, out, node, y, node.input[0], node.input[1], node.output[0])
    return out


REWRITES: dict[str, Callable[[GraphEdit, onnx.NodeProto], list[onnx.NodeProto]]] = {
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


def _integer_matmul_then_cast(g: GraphEdit, node: onnx.NodeProto) -> onnx.NodeProto | None:
    """The Cast to float that is the only reader of a per-tensor MatMulInteger, or None."""
    if node.domain not in ("", "ai.onnx") or node.op_type != "MatMulInteger":
        return None
    for z in node.input[2:4]:  # per-row/column zero points: only all-zero ones (symmetric)
        value = g.array(z) if z else None
        if z and (g.numel(z) or 1) != 1 and (value is None or np.any(value != 0)):
            return None
    out = node.output[0]
    readers = [n for n in g.graph.node if out in n.input]
    if len(readers) != 1 or out in {o.name for o in g.graph.output}:
        return None
    cast = readers[0]
    if cast.op_type != "Cast" or _attr(cast, "to", 0) != onnx.TensorProto.FLOAT:
        return None
    return cast


def _scalar_zp(g: GraphEdit, node: onnx.NodeProto, i: int) -> str:
    """Input i of a MatMulInteger as a per-tensor zero point: a per-row/column one is all
    zeros here (``_integer_matmul_then_cast``), so one zero of its type."""
    z = _opt(node, i)
    value = g.array(z) if z else None
    if value is None or value.size == 1:
        return z
    return g.constant(node.name + "_zp", np.zeros((), value.dtype))


def _matmul_integer(
    g: GraphEdit, node: onnx.NodeProto, cast: onnx.NodeProto
) -> list[onnx.NodeProto]:
    """Cast<float>(MatMulInteger(A, B, a_zp?, b_zp?)) = MatMul(DQ(A, 1, a_zp), DQ(B, 1, b_zp)).

    quantize_dynamic's standard form. torch-mlir lowers MatMulInteger itself as an i32 x i32
    -> i64 matmul (IREE: 14 GOP/s at 1024^3 against 155 for f32 on this host); the dequantize
    form is what torch-fuse-quantized-ops makes an i8 x i8 -> i32 quantized matmul."""
    one = g.one_float()
    out: list[onnx.NodeProto] = []
    a_f = _dq(g, out, node, node.input[0], one, _scalar_zp(g, node, 2))
    b_f = _dq(g, out, node, node.input[1], one, _scalar_zp(g, node, 3))
    out.append(helper.make_node("MatMul", [a_f, b_f], [cast.output[0]], g.name(node.name)))
    return out


# --- per-channel QDQ contractions as integer contractions -------------------------------------


def _dq_parts(
    g: GraphEdit, name: str, producers: dict[str, onnx.NodeProto]
) -> tuple[onnx.NodeProto, np.ndarray | None, np.ndarray, np.ndarray | None] | None:
    """The DequantizeLinear producing ``name``: (node, constant input or None, scale, zero
    point or None); None if ``name`` is not a DequantizeLinear's output or its scale or zero
    point is not a constant."""
    node = producers.get(_through_identity(name, producers))
    if node is None or node.op_type != "DequantizeLinear" or node.domain not in ("", "ai.onnx"):
        return None
    scale = g.array(node.input[1])
    zp_name = _opt(node, 2)
    zp = g.array(zp_name) if zp_name else None
    if scale is None or (zp_name and zp is None):
        return None
    return node, g.array(node.input[0]), scale, zp


def _through_identity(name: str, producers: dict[str, onnx.NodeProto]) -> str:
    """``name`` or, while it is an Identity's output, that Identity's input: the TorchScript
    exporter shares equal weights and biases through Identity nodes (ResNet-18's biases)."""
    seen = 0
    node = producers.get(name)
    while node is not None and node.op_type == "Identity" and node.input and seen < 100:
        name, node, seen = node.input[0], producers.get(node.input[0]), seen + 1
    return name


def _bias_array(
    g: GraphEdit, name: str, producers: dict[str, onnx.NodeProto], n: int
) -> np.ndarray | bool | None:
    """A contraction's bias as a float constant of n values; False: there is one but it is not
    a constant (then the rewrite does not fire); None: no bias."""
    if not name:
        return None
    value = g.array(_through_identity(name, producers))
    if value is None:
        parts = _dq_parts(g, name, producers)
        if parts is None or parts[1] is None:
            return False
        _, q, scale, zp = parts
        assert q is not None
        offset = np.zeros(()) if zp is None else zp.astype(np.float64)
        value = (q.astype(np.float64) - offset) * scale.astype(np.float64)
    value = np.asarray(value, np.float32).reshape(-1)
    return value if value.size == n else False


def _per_channel_contraction(
    g: GraphEdit, node: onnx.NodeProto, producers: dict[str, onnx.NodeProto]
) -> list[onnx.NodeProto] | None:
    """Conv / Gemm / MatMul of a per-tensor DequantizeLinear activation and a per-channel,
    symmetric (zero point 0) int8 constant weight, as the same contraction on both operands
    dequantized with scale 1 (what torch-fuse-quantized-ops makes an i8 x i8 -> i32
    contraction), times the constant per-channel scale a_scale * w_scale[c], plus the bias.
    None: not that pattern (per-tensor weights fuse already; anything else stays float)."""
    if node.domain not in ("", "ai.onnx") or node.op_type not in ("Conv", "Gemm", "MatMul"):
        return None
    if len(node.input) < 2:
        return None
    a = _dq_parts(g, node.input[0], producers)
    w = _dq_parts(g, node.input[1], producers)
    if a is None or w is None or w[1] is None:
        return None
    a_node, _, a_scale, a_zp = a
    w_node, wq, w_scale, w_zp = w
    assert wq is not None
    if a_scale.size != 1 or (a_zp is not None and a_zp.size != 1):
        return None  # per-channel activations: not a per-tensor operand
    if wq.dtype != np.int8 or w_scale.ndim != 1 or w_scale.size <= 1:
        return None  # per-tensor weights are fused by torch-mlir; uint8 weights are asymmetric
    if w_zp is not None and np.any(w_zp != 0):
        return None  # zero points per channel would need a per-channel correction term
    axis = int(_attr(w_node, "axis", 1))
    axis = axis + wq.ndim if axis < 0 else axis
    op = node.op_type
    if op == "Conv":
        if axis != 0 or wq.ndim < 3:
            return None
        bias_name, bshape = _opt(node, 2), [1, wq.shape[0]] + [1] * (wq.ndim - 2)
    elif op == "Gemm":
        trans_b = int(_attr(node, "transB", 0))
        if int(_attr(node, "transA", 0)) or float(_attr(node, "alpha", 1.0)) != 1.0:
            return None
        if _opt(node, 2) and float(_attr(node, "beta", 1.0)) != 1.0:
            return None
        if wq.ndim != 2 or axis != (0 if trans_b else 1):
            return None
        if trans_b:
            wq = np.ascontiguousarray(wq.T)
        bias_name, bshape = _opt(node, 2), [wq.shape[1]]
    else:  # MatMul: weights [K, N], scales per column
        if wq.ndim != 2 or axis != 1:
            return None
        bias_name, bshape = "", [wq.shape[1]]
    n = int(w_scale.size)
    bias = _bias_array(g, bias_name, producers, n)
    if bias is False:
        return None
    out: list[onnx.NodeProto] = []
    one = g.one_float()
    a_q = a_node.input[0]
    pointwise = op == "Conv" and _is_pointwise_2d(node, wq)
    if pointwise:  # NCHW -> NHWC: the 1x1 conv is a MatMul over the last dim
        a_q = _plain(g, out, node, "Transpose", [a_q], perm=[0, 2, 3, 1])
        wq = np.ascontiguousarray(wq[:, :, 0, 0].T)  # [C, F]
        bshape = [wq.shape[1]]
    depthwise = op == "Conv" and int(_attr(node, "group", 1)) == wq.shape[0] > 1
    if depthwise:
        # the integers as exact f32 values, in ops torch-fuse-quantized-ops does not match: an
        # integer depthwise conv (depthwise_conv_2d_nhwc_hwc_q between two transposes) ran
        # slower in IREE than the f32 one, which takes the channels-last f32 path
        a_f = _plain(g, out, node, "Cast", [a_q], to=onnx.TensorProto.FLOAT)
        if a_zp is not None:
            zp_f = g.constant(node.name + "_azp", a_zp.astype(np.float32).reshape(()))
            a_f = _plain(g, out, node, "Sub", [a_f, zp_f])
        a_int = a_f
        w_int = g.constant(node.name + "_wf", wq.astype(np.float32))
    else:
        a_args = [a_q, one] + ([a_node.input[2]] if len(a_node.input) > 2 else [])
        a_int = _plain(g, out, node, "DequantizeLinear", a_args)
        own_w = op == "Gemm" or pointwise
        w_name = g.constant(node.name + "_wq", wq) if own_w else w_node.input[0]
        zero = g.constant(node.name + "_wzp", np.zeros((), np.int8))
        w_int = _plain(g, out, node, "DequantizeLinear", [w_name, one, zero])
    if op == "Conv" and not pointwise:
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        acc = _plain(g, out, node, "Conv", [a_int, w_int], **attrs)
    else:
        acc = _plain(g, out, node, "MatMul", [a_int, w_int])
    scale = (np.float64(a_scale.reshape(())) * w_scale.astype(np.float64)).astype(np.float32)
    scale_name = g.constant(node.name + "_scale", scale.reshape(bshape))
    y = node.output[0] if not pointwise else g.name(node.name)
    if isinstance(bias, np.ndarray):
        scaled = _plain(g, out, node, "Mul", [acc, scale_name])
        b_name = g.constant(node.name + "_bias", bias.reshape(bshape))
        out.append(helper.make_node("Add", [scaled, b_name], [y], g.name(node.name)))
    else:
        out.append(helper.make_node("Mul", [acc, scale_name], [y], g.name(node.name)))
    if pointwise:
        out.append(
            helper.make_node(
                "Transpose", [y], [node.output[0]], g.name(node.name), perm=[0, 3, 1, 2]
            )
        )
    return out


def _is_pointwise_2d(node: onnx.NodeProto, wq: np.ndarray) -> bool:
    """A 1x1, stride 1, unpadded, ungrouped 2-D conv: a MatMul over channels in NHWC. As a
    MatMul it gets IREE's data-tiled i8 matmul kernels; an integer conv does not (MobileNetV2
    int8: most of its time was in its pointwise convs as ``conv_2d_nchw_fchw_q``)."""
    if wq.ndim != 4 or wq.shape[2:] != (1, 1) or int(_attr(node, "group", 1)) != 1:
        return False
    for name, neutral in (("strides", 1), ("pads", 0), ("dilations", 1)):
        for a in node.attribute:
            if a.name == name and any(v != neutral for v in a.ints):
                return False
    pads = [a.s for a in node.attribute if a.name == "auto_pad"]
    return not pads or pads[0] in (b"NOTSET", b"VALID")


def rewrite_per_channel_contractions(proto: onnx.ModelProto) -> dict[str, int]:
    """Rewrite, in place, the main graph's per-channel QDQ contractions (ONNX Runtime's
    ``quantize_static(per_channel=True)``: int8 weights with a scale per output channel and
    zero point 0) into integer contractions with a per-channel rescale after them
    (``_per_channel_contraction``); returns {op type: count}. torch-mlir fuses per-tensor
    quantization only: without this the weights are dequantized and the contraction is f32."""
    g = GraphEdit(proto.graph)
    for n in proto.graph.node:  # the TorchScript exporter shares weights through Identity
        if n.op_type == "Identity" and n.input and n.input[0] in g.inits:
            g.inits[n.output[0]] = g.inits[n.input[0]]
    producers = {o: n for n in proto.graph.node for o in n.output}
    done: dict[str, int] = {}
    new_nodes: list[onnx.NodeProto] = []
    for node in proto.graph.node:
        if not node.name:
            node.name = g.name(node.op_type)
        rewritten = _per_channel_contraction(g, node, producers)
        if rewritten is None:
            new_nodes.append(node)
            continue
        new_nodes.extend(rewritten)
        done[node.op_type] = done.get(node.op_type, 0) + 1
    if done:
        replace_nodes(proto, _drop_dead_dequantize(proto, new_nodes))
    return done


def _drop_dead_dequantize(
    proto: onnx.ModelProto, nodes: list[onnx.NodeProto]
) -> list[onnx.NodeProto]:
    """``nodes`` without the DequantizeLinear nodes nothing reads any more (the float weights
    the rewrite replaced): they would be imported as dead f32 constants."""
    read = {i for n in nodes for i in n.input} | {o.name for o in proto.graph.output}
    return [n for n in nodes if not (n.op_type == "DequantizeLinear" and n.output[0] not in read)]


def replace_nodes(proto: onnx.ModelProto, new_nodes: list[onnx.NodeProto]) -> None:
    kept_nodes = [onnx.NodeProto() for _ in new_nodes]
    for dst, src in zip(kept_nodes, new_nodes, strict=True):
        dst.CopyFrom(src)
    del proto.graph.node[:]
    proto.graph.node.extend(kept_nodes)


def rewrite_quantized_contrib_ops(proto: onnx.ModelProto) -> dict[str, int]:
    """Replace, in place, the ``com.microsoft`` quantized ops of REWRITES in the main graph by
    standard ops, and per-tensor MatMulInteger -> Cast<float> pairs by their dequantize form;
    returns {op type: count rewritten}. Others are left for the importer to report. The
    default-domain opset must be >= 13 (per-axis DequantizeLinear)."""
    done = {f"per-channel {k}": v for k, v in rewrite_per_channel_contractions(proto).items()}
    g = GraphEdit(proto.graph)
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
    if any(not k.startswith("per-channel ") for k in done):
        replace_nodes(proto, new_nodes)
        if not any(n.domain == MS for n in proto.graph.node):
            kept = [o for o in proto.opset_import if o.domain != MS]
            del proto.opset_import[:]
            proto.opset_import.extend(kept)
    return done


__all__ = [
    "REWRITES",
    "GraphEdit",
    "replace_nodes",
    "rewrite_per_channel_contractions",
    "rewrite_quantized_contrib_ops",
]
