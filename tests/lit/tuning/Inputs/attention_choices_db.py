"""Write a tuning database with one attention record for attention-tuned.mlir: what this host
(or another one) measured for the file's attention core, as PLAN names.

    python attention_choices_db.py INPUT.mlir OUT.db PLAN
"""

import sys
from dataclasses import replace

from xgen_mlir._mlir import ir, new_context
from xgen_mlir.passes.attention_kernels import attention_config, candidates
from xgen_mlir.tunedb import REJECTED_IN_MODEL, HostIdentity, Record, TuningDB

# plan -> (host, status, kernel ms, IREE ms, detail)
HERE, OTHER = "here", "other"
PLANS = {
    "kernel_wins": (HERE, "ok", 0.5, 1.0, ""),
    "iree_wins": (HERE, "ok", 1.2, 1.0, ""),
    "level": (HERE, "ok", 0.99, 1.0, ""),  # within MIN_GAIN: the prior (the kernel) stays
    "wrong_numbers": (HERE, "wrong_numbers", None, None, "max error 0.4 of the scale"),
    "rejected": (HERE, "ok", 1.2, 1.0, f"{REJECTED_IN_MODEL}: 10.0 -> 10.5 ms"),
    "other_host": (OTHER, "ok", 1.2, 1.0, ""),
}

src, out, plan = sys.argv[1], sys.argv[2], sys.argv[3]
host, status, ms, base, detail = PLANS[plan]
with new_context():
    module = ir.Module.parse(open(src).read())
    here = HostIdentity.current()
    other = replace(here, cpu="Some Other CPU", l2_bytes=here.l2_bytes + 1)
    (core,) = candidates(module.operation, 256)
    signature, description = core.signature()
    record = Record(
        signature,
        attention_config(),
        status,
        None if ms is None else ms / 1e3,
        None if base is None else base / 1e3,
        description=description,
        detail=detail,
    )
    with TuningDB(out) as db:
        db.add(record, here if host == HERE else other)
