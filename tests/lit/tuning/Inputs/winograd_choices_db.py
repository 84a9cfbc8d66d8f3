"""Write a tuning database of Winograd algorithm records for winograd-tuned.mlir and
winograd-prior.mlir: per function of that file (by name), what this host (or another one)
measured for its conv.

    python winograd_choices_db.py INPUT.mlir OUT.db
"""

import sys
from dataclasses import replace

from xgen_mlir._mlir import ir, new_context
from xgen_mlir.passes.winograd_convs import candidates, winograd_config
from xgen_mlir.tunedb import HostIdentity, Record, TuningDB

# function -> (host, tile m, status, Winograd ms, direct ms)
HERE, OTHER = "here", "other"
PLAN = {
    "winograd_wins": [(HERE, 4, "ok", 0.5, 1.0), (HERE, 2, "ok", 0.8, 1.0)],
    "f2_wins": [(HERE, 4, "ok", 1.1, 1.0), (HERE, 2, "ok", 0.6, 1.0)],
    "direct_wins": [(HERE, 4, "ok", 1.01, 1.0), (HERE, 2, "ok", 1.5, 1.0)],
    "wrong_numbers": [(HERE, 4, "wrong_numbers", None, None)],
    "other_host": [(OTHER, 4, "ok", 0.5, 1.0)],
    "measured_direct": [(HERE, 4, "ok", 1.1, 1.0), (HERE, 2, "ok", 1.5, 1.0)],
    # "no_record": nothing
}

src, out = sys.argv[1], sys.argv[2]
with new_context():
    module = ir.Module.parse(open(src).read())
    here = HostIdentity.current()
    other = replace(here, cpu="Some Other CPU", l2_bytes=here.l2_bytes + 1)
    with TuningDB(out) as db:
        for cand in candidates(module.operation):
            name = ir.StringAttr(cand.op.parent.attributes["sym_name"]).value
            for host, m, status, ms, base in PLAN.get(name, []):
                seconds = None if ms is None else ms / 1e3
                baseline = None if base is None else base / 1e3
                record = Record(
                    cand.signature,
                    winograd_config(m),
                    status,
                    seconds,
                    baseline,
                    description=cand.description,
                )
                db.add(record, here if host == HERE else other)
