"""xgen-inline-bf16-constants: small bf16 ``dense_resource`` constants as inline ``dense<>``.

Why: IREE (3.13) inlines constants of up to ``--iree-flow-inline-constants-max-byte-length``
bytes (256 by default) into the dispatches that read them, and its llvm-cpu codegen then
rewrites bf16 arithmetic to f32 (``iree-convert-bf16-arith-to-f32``). That rewrite changes
the constant's result type but cannot convert a ``dense_resource`` value, so the compile
stops with "'arith.constant' op failed to verify that all of {value, result} have same
type". It converts inline ``dense<>`` values. Every bf16 model has such constants: a conv's
or linear's bias, a batch norm's parameters, as torch-mlir's FX importer writes them
(resources), and those ``xgen-fold-batchnorm`` makes. This pass rewrites bf16 resource
constants of at most ``max-bytes`` as inline ``dense<>`` with the same bits; larger ones
(weights, which IREE does not inline) stay resources. Other element types are untouched.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from .._mlir import ir
from ..irutil import ConstantReader, ops_named
from .registry import register_pass


@dataclass
class InlineBf16Options:
    max_bytes: int = 4096  # above IREE's inline limit (256 bytes), far below a weight's size


def inline_bf16_constants(
    module_op: ir.Operation, opts: InlineBf16Options | None = None
) -> Counter[str]:
    opts = opts or InlineBf16Options()
    counts: Counter[str] = Counter()
    reader = ConstantReader(module_op)
    for op in ops_named(module_op, "arith.constant"):
        ty = op.results[0].type
        if not isinstance(ty, ir.RankedTensorType) or str(ty.element_type) != "bf16":
            continue
        if not str(op.attributes["value"]).startswith("dense_resource<"):  # prints the handle
            continue
        if int(np.prod(ty.shape)) * 2 > opts.max_bytes:
            counts["bf16 constants left as resources (larger than max-bytes)"] += 1
            continue
        value = reader.value_of(op.results[0])
        if value is None:
            counts["bf16 constants whose blob could not be read"] += 1
            continue
        bits = np.ascontiguousarray(value).view(np.uint16)
        op.attributes["value"] = ir.DenseElementsAttr.get(
            bits, type=ty.element_type, shape=list(ty.shape)
        )
        counts["bf16 constants inlined"] += 1
    return counts


@register_pass(
    "xgen-inline-bf16-constants",
    "Small bf16 dense_resource constants as inline dense<> (IREE's llvm-cpu codegen cannot "
    "convert a bf16 resource it inlined into a dispatch).",
    InlineBf16Options,
)
def _pass(module_op: ir.Operation, opts: InlineBf16Options | None) -> Counter[str]:
    return inline_bf16_constants(module_op, opts)
