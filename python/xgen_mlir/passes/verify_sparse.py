"""xgen-verify-sparse: the xgen_sparse dialect's semantic verifier as a pass.

IRDL checks op structure when IR is parsed; this checks the rules IRDL cannot express (see
``dialects/sparse.py``). xgen-opt also runs it right after parsing any input that holds
xgen_sparse ops, so invalid IR is rejected before a pipeline touches it.
"""

from __future__ import annotations

from typing import Any

from .._mlir import ir
from ..dialects.sparse import SparseVerifyError, verify_sparse_ops
from .registry import PassFailure, register_pass


@register_pass("xgen-verify-sparse", "Check xgen_sparse ops against the dialect's semantic rules.")
def verify_sparse(module_op: ir.Operation, _opts: Any) -> None:
    try:
        verify_sparse_ops(module_op)
    except SparseVerifyError as e:
        raise PassFailure(str(e)) from None
