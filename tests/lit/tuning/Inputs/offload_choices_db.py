"""Write a tuning database of algorithm records (Winograd and the oneDNN offload) for
offload-tuned.mlir and offload-tuned-matmul.mlir: per function of the file (by name), what this
host measured for its conv or linear layer.

    python offload_choices_db.py INPUT.mlir OUT.db
"""

import sys

from xgen_mlir._mlir import ir, new_context
from xgen_mlir.passes.winograd_convs import candidates, offload_config, winograd_config
from xgen_mlir.tunedb import REJECTED_IN_MODEL, HostIdentity, Record, TuningDB

# function -> [(config, variant ms, direct ms[, detail])]
F32, BF16 = offload_config("onednn", "f32"), offload_config("onednn", "bf16")
S8 = offload_config("onednn", "s8")
PLAN = {
    "onednn_wins": [(F32, 0.5, 1.0)],
    "winograd_beats_onednn": [(winograd_config(4), 0.4, 1.0), (F32, 0.6, 1.0)],
    "onednn_beats_winograd": [(winograd_config(4), 0.8, 1.0), (F32, 0.5, 1.0)],
    "bf16_only": [(BF16, 0.5, 1.0)],
    "onednn_slower": [(F32, 1.2, 1.0)],
    "strided_onednn_wins": [(F32, 0.5, 1.0)],
    # faster alone, then slower in the model than the compile before (which had the prior)
    "rejected_in_model": [(BF16, 0.5, 1.0, f"{REJECTED_IN_MODEL} (6.649 -> 6.850 ms)")],
    # linear layers (offload-tuned-matmul.mlir)
    "linear_onednn_wins": [(F32, 0.5, 1.0)],
    "linear_onednn_slower": [(F32, 1.3, 1.0)],
    "linear_bf16_only": [(BF16, 0.5, 1.0)],
    # integer contractions (offload-tuned-int8.mlir)
    "int8_conv_onednn_wins": [(S8, 0.5, 1.0)],
    "int8_conv_onednn_slower": [(S8, 1.5, 1.0)],
    "int8_matmul_onednn_slower": [(S8, 1.5, 1.0)],
}

src, out = sys.argv[1], sys.argv[2]
with new_context():
    module = ir.Module.parse(open(src).read())
    here = HostIdentity.current()
    with TuningDB(out) as db:
        for cand in candidates(module.operation, offload=True):
            name = ir.StringAttr(cand.op.parent.attributes["sym_name"]).value
            for config, ms, base, *detail in PLAN.get(name, []):
                record = Record(
                    cand.signature,
                    config,
                    "ok",
                    ms / 1e3,
                    base / 1e3,
                    description=cand.description,
                    detail=detail[0] if detail else "",
                )
                db.add(record, here)
