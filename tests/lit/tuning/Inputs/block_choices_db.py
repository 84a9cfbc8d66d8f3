"""Write a tuning database of block-sparse kernel records for block-tuned.mlir: per function of
the file (by name), what this host measured for its block-pruned linear layer.

    python block_choices_db.py INPUT.mlir OUT.db
"""

import sys

from xgen_mlir._mlir import ir, new_context
from xgen_mlir.irutil import ops_named
from xgen_mlir.passes.block_sparse import block_config
from xgen_mlir.passes.winograd_convs import gemm_config, matmul_signature
from xgen_mlir.tunedb import REJECTED_IN_MODEL, HostIdentity, Record, TuningDB

SPARSE, DENSER = block_config((4, 32), 0.125), block_config((4, 32), 0.75)
# function -> [(config, status, variant ms, direct ms, detail)]
PLAN = {
    "block_wins": [(SPARSE, "ok", 0.5, 1.0, ""), (gemm_config(1), "ok", 0.8, 1.0, "")],
    "gemm_wins": [(SPARSE, "ok", 0.6, 1.0, ""), (gemm_config(1), "ok", 0.5, 1.0, "")],
    "wrong_numbers": [(SPARSE, "wrong_numbers", None, 1.0, "max error 0.3 of the scale")],
    "rejected": [(SPARSE, "ok", 0.9, 1.0, f"{REJECTED_IN_MODEL} (5.0 -> 5.2 ms)")],
    "denser_measured_faster": [(DENSER, "ok", 0.8, 1.0, "")],
    "other_density": [(block_config((4, 32), 0.25), "ok", 0.5, 1.0, "")],
}

src, out = sys.argv[1], sys.argv[2]
with new_context():
    module = ir.Module.parse(open(src).read())
    here = HostIdentity.current()
    with TuningDB(out) as db:
        for op in ops_named(module.operation, "linalg.matmul"):
            name = ir.StringAttr(op.parent.attributes["sym_name"]).value
            signature, description = matmul_signature(op)
            for config, status, ms, base, detail in PLAN[name]:
                record = Record(
                    signature,
                    config,
                    status,
                    None if ms is None else ms / 1e3,
                    base / 1e3,
                    description=description,
                    detail=detail,
                )
                db.add(record, here)
