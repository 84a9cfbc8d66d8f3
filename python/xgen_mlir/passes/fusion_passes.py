"""xgen-mapping-types: the fusion analysis as a graph pass, for people and lit tests.

Tags every tensor op with ``xgen.mapping = "<type>"`` and, with ``print=true``, prints one
line per op (type and reason) to stderr. The planner itself is a dispatch pass
(``dispatch_passes.py``: ``xgen-plan-fusion``).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

from .._mlir import ir
from ..analysis import classify
from ..irutil import ops_named
from .registry import register_pass


@dataclass
class MappingOptions:
    print: bool = False


@register_pass(
    "xgen-mapping-types",
    "Tag tensor ops with their DNNFusion mapping type (analysis; IR otherwise unchanged).",
    MappingOptions,
)
def mapping_types(module_op: ir.Operation, opts: MappingOptions) -> None:
    for fn in ops_named(module_op, "func.func"):
        for block in fn.regions[0].blocks:
            for op in block.operations:
                mapping = classify(op)
                if mapping is None:
                    continue
                op.attributes["xgen.mapping"] = ir.StringAttr.get(mapping.type.value)
                if opts.print:
                    print(f"{op.name}: {mapping.type.value} ({mapping.reason})", file=sys.stderr)
