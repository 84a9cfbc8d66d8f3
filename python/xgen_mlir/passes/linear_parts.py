"""A Linear layer (a ``linalg.matmul`` with a constant right-hand side and a per-column
init, its bias add after it) or a 1x1 (1x1x1) convolution with constant weights, seen as one
GEMM: its input, its weights [N, K], its bias and the op its result leaves from. The view the
generated kernels take (``xgen-raise-block-linear``, ``xgen-gemm-kernels``): one module so
that the passes that decide between them can read each other's matches.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._mlir import ir
from .consteval import ConstEval
from .generic_util import has_default_maps
from .kernel_match import NoMatch, bias_add

CONV_1X1 = ("linalg.conv_2d_nchw_fchw", "linalg.conv_3d_ncdhw_fcdhw")


def matmul_parts(mm: ir.Operation, ev: ConstEval) -> dict[str, Any]:
    if not has_default_maps(mm):
        raise NoMatch("a matmul with transposing or broadcasting maps")
    ty = ir.RankedTensorType(mm.results[0].type)
    if not ty.has_static_shape or not ir.RankedTensorType(mm.operands[0].type).has_static_shape:
        raise NoMatch("dynamic shape (the kernels take static shapes)")
    if str(ty.element_type) != "f32" or str(mm.operands[0].type.element_type) != "f32":
        raise NoMatch("not f32 (the kernels compute f32 only)")
    rhs = ev.value(mm.operands[1])
    if rhs is None or rhs.dtype != np.float32:
        raise NoMatch("the right-hand side is not a constant f32 matrix")
    init = ev.per_channel_init(mm.operands[2], 1)
    if init is None:
        raise NoMatch("the accumulator is not a per-column constant")
    parts = {"x": mm.operands[0], "w": np.ascontiguousarray(rhs.T), "bias": init, "end": mm}
    if not init.any():
        found = bias_add(mm, ev)
        if found is not None:
            parts["end"], parts["bias"] = found
    return parts


def conv_parts(conv: ir.Operation, ev: ConstEval) -> dict[str, Any]:
    """A 1x1 (1x1x1) conv's input, weights [F, C] and per-channel init; channels first, or
    last for ``linalg.conv_2d_nhwc_hwcf`` (filter [1, 1, C, F])."""
    nhwc = conv.name == "linalg.conv_2d_nhwc_hwcf"
    w = ev.value(conv.operands[1])
    if w is None or w.dtype != np.float32:
        raise NoMatch("the conv's weights are not a constant f32 tensor")
    if any(s != 1 for s in (w.shape[:2] if nhwc else w.shape[2:])):
        raise NoMatch("a conv with a kernel larger than 1 (only 1x1 / 1x1x1 are GEMMs)")
    strides = np.array(conv.attributes["strides"]).tolist()
    dil = np.array(conv.attributes["dilations"]).tolist()
    if any(v != 1 for v in strides + dil):
        raise NoMatch("a strided or dilated 1x1 conv")
    ty = ir.RankedTensorType(conv.results[0].type)
    if not ty.has_static_shape or not ir.RankedTensorType(conv.operands[0].type).has_static_shape:
        raise NoMatch("dynamic shape (the kernels take static shapes)")
    if str(ty.element_type) != "f32":
        raise NoMatch("not f32 (the kernels compute f32 only)")
    init = ev.per_channel_init(conv.operands[2], 3 if nhwc else 1)
    if init is None:
        raise NoMatch("the accumulator is not a per-channel constant")
    weights = np.ascontiguousarray(w.reshape(w.shape[2], w.shape[3]).T) if nhwc else w
    return {
        "x": conv.operands[0],
        "w": weights.reshape(weights.shape[0], -1),
        "bias": init,
        "end": conv,
    }
