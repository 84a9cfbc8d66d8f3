"""Write a tuning database holding one record for the float convs of a file as a group (all
in oneDNN, measured in the model) for offload-conv-group.mlir: won (0.5 against 1.0 ms), or
rejected in the model with ``rejected``.

    python conv_group_db.py INPUT.mlir OUT.db [rejected]
"""

import sys

from xgen_mlir._mlir import ir, new_context
from xgen_mlir.irutil import ops_named
from xgen_mlir.passes.consteval import ConstEval
from xgen_mlir.passes.winograd_convs import (
    _CONVS,
    _library_conv,
    conv_group_config,
    conv_group_signature,
)
from xgen_mlir.tunedb import REJECTED_IN_MODEL, HostIdentity, Record, TuningDB

src, out = sys.argv[1], sys.argv[2]
rejected = sys.argv[3:] == ["rejected"]
with new_context():
    module = ir.Module.parse(open(src).read())
    ev = ConstEval(module.operation)
    convs = [op for op in ops_named(module.operation, *_CONVS) if _library_conv(op, ev)]
    signature = conv_group_signature(convs, "fp32")
    detail = f"{REJECTED_IN_MODEL} (1.000 -> 1.100 ms)" if rejected else ""
    record = Record(
        signature,
        conv_group_config("fp32"),
        "ok",
        0.5e-3,
        1e-3,
        description=signature,
        detail=detail,
    )
    with TuningDB(out) as db:
        db.add(record, HostIdentity.current())
