"""xgen-fold-transpose-pairs: compose back-to-back ``linalg.transpose`` ops.

``transpose(transpose(x, p), q)`` is one transpose by ``p∘q``; when that is the identity the
pair disappears. Frontends emit such pairs around layout-sensitive ops (attention heads,
NCHW<->NHWC shuffles). Runs on linalg-on-tensors, before handing off to IREE. Does not look
through reshapes or generic ops that happen to be transposes (the fusion work handles those).
"""

from __future__ import annotations

from typing import Any

from .._mlir import ir, rewrite
from .generic_util import transpose
from .registry import register_patterns


def _fold(op: Any, rewriter: Any) -> bool:
    """Returns True when the pattern does NOT apply (the binding's convention)."""
    producer = op.operands[0].owner  # an Operation, an OpView, or a Block (block argument)
    if isinstance(producer, ir.Block):
        return True
    producer = producer.operation
    if producer.name != "linalg.transpose":
        return True
    inner = list(ir.DenseI64ArrayAttr(producer.attributes["permutation"]))
    outer = list(ir.DenseI64ArrayAttr(op.attributes["permutation"]))
    composed = [inner[i] for i in outer]
    source = producer.operands[0]
    if composed == list(range(len(composed))):
        rewriter.replace_op(op, [source])
        return False
    with rewriter.ip, op.location:
        new = transpose(source, composed)
    rewriter.replace_op(op, [new])
    return False


@register_patterns(
    "xgen-fold-transpose-pairs", "Fold linalg.transpose(linalg.transpose(x)) into one (or none)."
)
def populate(patterns: rewrite.RewritePatternSet, _opts: Any) -> None:
    patterns.add("linalg.transpose", _fold)
