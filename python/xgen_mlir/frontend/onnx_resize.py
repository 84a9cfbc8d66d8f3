"""ONNX ``Resize`` by an integer factor in nearest mode as a reshape, a broadcast and a
reshape, before import.

torch-mlir lowers a nearest ``Resize`` to a gather: per output element, its coordinates to
float, divided by the scale, rounded, clamped, back to an index, and a scalar load. IREE
cannot vectorize that. On the AVX2 Zen 3 host, the PP-OCRv4 detector's three 8x/4x/2x
upsamplings of 24-channel maps to 160x160 took 1.15 ms each (614400 outputs, about 4 GB/s);
YOLOv8n's and YOLOX's 2x upsamplings are the same op.

When every output pixel reads input pixel ``floor(i / s)`` (an integer factor ``s`` per
spatial axis, 1 on the batch and channels), the op is ``x[N, C, H, 1, W, 1]`` broadcast to
``[N, C, H, s, W, s]`` and seen as ``[N, C, H*s, W*s]``: plain data movement that IREE
vectorizes and fuses with the op that reads it (an FPN's add). Which coordinate modes give
``floor(i / s)`` (output ``i = s k + j``, ``0 <= j < s``):

- ``asymmetric`` with ``nearest_mode=floor`` (PyTorch's ``interpolate(mode="nearest")``):
  ``floor(i / s)``, any ``s``; with ``round_prefer_floor`` (the default) only ``s = 2``
  (``j / 2`` is 0 or 0.5);
- ``half_pixel`` / ``pytorch_half_pixel`` with ``round_prefer_floor`` or
  ``round_prefer_ceil``: ``(i + 0.5) / s - 0.5 = k + (2j + 1 - s) / 2s``, strictly within
  0.5 of ``k``, any ``s``;
- ``tf_half_pixel_for_nn`` with ``floor``: ``k + (j + 0.5) / s``, any ``s``.

Anything else (other modes, ``align_corners``, a factor that is not an integer, scales on the
batch or channels, scales or sizes computed in the graph, ``antialias``, ``axes``, a spatial
size shape inference did not find) stays as it is and takes torch-mlir's gather, which
computes the same thing, slower.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import onnx
from onnx import helper, numpy_helper

from .onnx_quant import GraphEdit, replace_nodes

# (coordinate_transformation_mode, nearest_mode) -> the largest factor it is floor(i / s) for
# (0: any)
FLOOR_FORMS = {
    ("asymmetric", "floor"): 0,
    ("asymmetric", "round_prefer_floor"): 2,
    ("half_pixel", "round_prefer_floor"): 0,
    ("half_pixel", "round_prefer_ceil"): 0,
    ("pytorch_half_pixel", "round_prefer_floor"): 0,
    ("pytorch_half_pixel", "round_prefer_ceil"): 0,
    ("tf_half_pixel_for_nn", "floor"): 0,
}


def rewrite_nearest_resizes(proto: onnx.ModelProto) -> int:
    """Replace, in place, each 4-D nearest ``Resize`` of the main graph by an integer factor
    (``FLOOR_FORMS``) with Reshape -> Expand -> Reshape; returns how many. ``proto`` must
    carry shape information (``onnx.shape_inference``) for the input's spatial size."""
    shapes = _shapes(proto.graph)
    g = GraphEdit(proto.graph)
    consts = {
        n.output[0]: numpy_helper.to_array(n.attribute[0].t)
        for n in proto.graph.node
        if n.op_type == "Constant" and len(n.attribute) == 1 and n.attribute[0].name == "value"
    }

    def value(name: str) -> np.ndarray | None:
        found = g.array(name)
        return consts.get(name) if found is None else found

    new_nodes: list[onnx.NodeProto] = []
    done = 0
    for node in proto.graph.node:
        resize = node.op_type == "Resize" and not node.domain
        factors = _factors(value, node, shapes) if resize else None
        if factors is None:
            new_nodes.append(node)
            continue
        new_nodes.extend(_rewrite(g, node, shapes[node.input[0]], factors))
        done += 1
    if done:
        replace_nodes(proto, new_nodes)
    return done


def _shapes(graph: onnx.GraphProto) -> dict[str, list[int | None]]:
    """Each value's shape as shape inference found it (None for an unknown dim)."""
    out: dict[str, list[int | None]] = {}
    for v in [*graph.input, *graph.value_info, *graph.output]:
        t = v.type.tensor_type
        if t.HasField("shape"):
            out[v.name] = [d.dim_value if d.HasField("dim_value") else None for d in t.shape.dim]
    return out


def _factors(
    value: Callable[[str], np.ndarray | None],
    node: onnx.NodeProto,
    shapes: dict[str, list[int | None]],
) -> tuple[int, int] | None:
    """The integer (height, width) factors of a Resize this rewrite takes (its scales or
    sizes constants: ``value``), else None. Its ``roi`` only counts for
    ``tf_crop_and_resize``, which this does not take."""
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    as_text = {k: v.decode() if isinstance(v, bytes) else v for k, v in attrs.items()}
    if as_text.get("mode", "nearest") != "nearest":
        return None
    if as_text.get("antialias", 0) or "axes" in as_text:
        return None
    if as_text.get("keep_aspect_ratio_policy", "stretch") != "stretch":
        return None
    form = (
        as_text.get("coordinate_transformation_mode", "half_pixel"),
        as_text.get("nearest_mode", "round_prefer_floor"),
    )
    if form not in FLOOR_FORMS:
        return None
    shape = shapes.get(node.input[0])
    if shape is None or len(shape) != 4 or shape[2] is None or shape[3] is None:
        return None
    h, w = shape[2], shape[3]
    inputs = list(node.input) + [""] * (4 - len(node.input))
    scales = value(inputs[2]) if inputs[2] else None
    sizes = value(inputs[3]) if inputs[3] else None
    if scales is not None and scales.size == 4:
        got = [float(s) for s in scales]
    elif sizes is not None and sizes.size == 4 and shape[1] is not None:
        base = [shape[0] or sizes[0], shape[1], h, w]
        got = [float(s) / float(b) if b else 0.0 for s, b in zip(sizes, base, strict=True)]
    else:
        return None  # computed scales or sizes: not known here
    if got[0] != 1.0 or got[1] != 1.0:
        return None
    fh, fw = got[2], got[3]
    if fh < 1 or fw < 1 or fh != int(fh) or fw != int(fw) or (fh, fw) == (1, 1):
        return None
    limit = FLOOR_FORMS[form]
    if limit and max(fh, fw) > limit:
        return None
    return int(fh), int(fw)


def _rewrite(
    g: GraphEdit, node: onnx.NodeProto, shape: list[int | None], factors: tuple[int, int]
) -> list[onnx.NodeProto]:
    """Reshape to [N, C, H, 1, W, 1], Expand by [1, 1, 1, fh, 1, fw], Reshape to
    [N, C, H*fh, W*fw] (a 0 keeps the input's dim: the batch may be dynamic)."""
    _, _, h, w = shape
    assert h is not None and w is not None
    fh, fw = factors
    base = node.name or node.output[0]
    split = g.constant(f"{base}_split", np.array([0, 0, h, 1, w, 1], np.int64))
    grow = g.constant(f"{base}_grow", np.array([1, 1, 1, fh, 1, fw], np.int64))
    merge = g.constant(f"{base}_merge", np.array([0, 0, h * fh, w * fw], np.int64))
    a, b = g.name(f"{base}_split"), g.name(f"{base}_grown")
    return [
        helper.make_node("Reshape", [node.input[0], split], [a], name=g.name(f"{base}/split")),
        helper.make_node("Expand", [a, grow], [b], name=g.name(f"{base}/repeat")),
        helper.make_node("Reshape", [b, merge], [node.output[0]], name=g.name(f"{base}/merge")),
    ]
