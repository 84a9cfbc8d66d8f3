"""Mapping types of tensor ops (DNNFusion): how output elements depend on input elements.

DNNFusion sorts operators into five mapping types and decides fusion from the pair of types
(``fusion/planner.py`` holds its combination table). The type here is *derived from the op's
structure*, never looked up by op name, so ops from any frontend (torch, ONNX, IREE's own
global optimizations) are covered:

- structured linalg ops (named or ``linalg.generic``): from their indexing maps. A loop that
  no output map uses is a reduction -> Many-to-Many (a contraction/convolution root if MLIR's
  own ``isa_contraction_op``/``isa_convolution_op`` say so). Otherwise the input maps are
  compared with the output map: a full-rank input read through the same map -> One-to-One
  (side operands may broadcast, like a bias); only projected inputs (fill, broadcast,
  iota) -> One-to-Many; the same loops in another order -> Shuffle; index arithmetic
  (strides, offsets) -> Reorganize. A body that reads through ``tensor.extract`` is a gather
  -> One-to-Many.
- view/copy ops of the ``tensor`` dialect (reshapes, slices, pads, concats): Reorganize.
- anything else with tensor results and no indexing maps (e.g. ``linalg.softmax``):
  Many-to-Many, conservatively ("opaque").

Works on Operations from either MLIR Python binding (torch-mlir's or IREE's): the planner
runs on IREE's IR, the lit-tested pass on torch-mlir's.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from .._mlir import binding_of


class MappingType(enum.StrEnum):
    ONE_TO_ONE = "One-to-One"
    ONE_TO_MANY = "One-to-Many"
    MANY_TO_MANY = "Many-to-Many"
    REORGANIZE = "Reorganize"
    SHUFFLE = "Shuffle"


@dataclass(frozen=True)
class Mapping:
    """The mapping type of one op, why, and what kind of root it would make in a dispatch."""

    type: MappingType
    reason: str
    root: str | None = None  # "contraction" (matmul/conv-like), "reduction", or None

    @property
    def is_contraction(self) -> bool:
        return self.root == "contraction"


# Ops with tensor results that move data without arithmetic.
_REORGANIZE_OPS = {
    "tensor.expand_shape": "reshape (adds dims, keeps element order)",
    "tensor.collapse_shape": "reshape (merges dims, keeps element order)",
    "tensor.reshape": "reshape",
    "tensor.extract_slice": "slice (a window of the input)",
    "tensor.insert_slice": "insert a window into a tensor",
    "tensor.pad": "pad (input window placed inside a bigger tensor)",
    "tensor.concat": "concat (inputs placed side by side)",
}
# Ops that are not computation: constants, buffers, ABI, barriers, region plumbing.
_NOT_COMPUTE_PREFIXES: tuple[str, ...] = (
    "arith.constant",
    "tensor.empty",
    "util.",
    "hal.",
    "func.",
    "flow.",
)
_NOT_COMPUTE_PREFIXES += ("iree_tensor_ext.", "builtin.", "linalg.yield", "tensor.dim")


def linalg_of(op: Any) -> Any:
    """The ``linalg`` dialect module of the MLIR binding this op comes from."""
    return binding_of(op).linalg


def tensor_of(op: Any) -> Any:
    """The ``tensor`` dialect module of the MLIR binding this op comes from."""
    return binding_of(op).tensor


def ir_of(op: Any) -> Any:
    """The ``ir`` module of the MLIR binding (torch-mlir's or IREE's) this op comes from."""
    return binding_of(op).ir


def indexing_maps(op: Any) -> list[Any] | None:
    """The op's indexing maps (inputs then outputs) or None if it is not a structured op."""
    op = op.operation
    if not op.name.startswith("linalg."):
        return None
    try:
        maps = linalg_of(op).get_indexing_maps(op.opview)
    except Exception:  # not a LinalgOp (e.g. linalg.softmax)
        return None
    if maps is None:
        return None
    return [m.value if hasattr(m, "value") else m for m in maps]


def dim_positions(ir: Any, amap: Any) -> list[int] | None:
    """The loop dim each result of ``amap`` reads, or None if a result is anything but a
    plain loop dim (a constant, index arithmetic)."""
    dims: list[int] = []
    for expr in amap.results:
        if not isinstance(expr, ir.AffineDimExpr):
            return None
        dims.append(expr.position)
    return dims


def loop_sizes(op: Any) -> dict[int, int]:
    """Static trip count of each loop of a structured op, read off its operand shapes
    (loops only reached through index arithmetic, or of dynamic size, are absent)."""
    maps = indexing_maps(op)
    if maps is None:
        return {}
    ir = ir_of(op)
    sizes: dict[int, int] = {}
    for value, amap in zip(op.operation.operands, maps, strict=False):
        if not isinstance(value.type, ir.RankedTensorType):
            continue
        for expr, size in zip(amap.results, value.type.shape, strict=False):
            if isinstance(expr, ir.AffineDimExpr) and size >= 0:
                sizes[expr.position] = size
    return sizes


def _dims(ir: Any, amap: Any) -> list[int] | None:
    """Loop dims read by a map, or None when a result is index arithmetic (d0 * 2, d0 + d1).

    Constant results (``(d0, d1) -> (d0, 0)``: a kept unit dim, as keepdim reductions write)
    name no loop and are skipped: they are not arithmetic on indices.
    """
    out = []
    for expr in amap.results:
        if isinstance(expr, ir.AffineConstantExpr):
            continue
        if not isinstance(expr, ir.AffineDimExpr):
            return None
        out.append(expr.position)
    return out


def _reads_through_extract(op: Any) -> bool:
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                if inner.operation.name == "tensor.extract":
                    return True
    return False


def _structured(op: Any, maps: list[Any]) -> Mapping:
    ir = ir_of(op)
    linalg = linalg_of(op)
    n_out = len(op.results)
    in_maps, out_maps = maps[: len(maps) - n_out], maps[len(maps) - n_out :]
    n_loops = maps[0].n_dims if maps else 0
    used: set[int] = set()
    for m in out_maps:
        dims = _dims(ir, m)
        used.update(dims if dims is not None else range(n_loops))
    reductions = [d for d in range(n_loops) if d not in used]
    if reductions:
        view = op.opview
        if linalg.isa_contraction_op(view) or linalg.isa_convolution_op(view):
            return Mapping(
                MappingType.MANY_TO_MANY,
                f"{len(reductions)} reduction loop(s) in a multiply-accumulate (contraction)",
                "contraction",
            )
        return Mapping(
            MappingType.MANY_TO_MANY,
            f"{len(reductions)} reduction loop(s) (loops {reductions} absent from the output)",
            "reduction",
        )
    if _reads_through_extract(op):
        return Mapping(MappingType.ONE_TO_MANY, "reads inputs through tensor.extract (gather)")
    out_dims = _dims(ir, out_maps[0]) if out_maps else []
    if out_dims is None:
        return Mapping(MappingType.REORGANIZE, "output written through index arithmetic")
    full, permuted, projected, arith = 0, 0, 0, 0
    for m in in_maps:
        dims = _dims(ir, m)
        if dims is None:
            arith += 1
        elif dims == out_dims:
            full += 1
        elif sorted(dims) == sorted(out_dims):
            permuted += 1
        else:
            projected += 1
    if arith:
        return Mapping(MappingType.REORGANIZE, "an input is read through index arithmetic")
    if permuted:
        return Mapping(MappingType.SHUFFLE, "an input is read with its loops permuted")
    if full:
        extra = f" ({projected} broadcast side operand(s))" if projected else ""
        return Mapping(MappingType.ONE_TO_ONE, "inputs read through the output's map" + extra)
    if projected:
        return Mapping(MappingType.ONE_TO_MANY, "every input is broadcast (projected map)")
    return Mapping(MappingType.ONE_TO_MANY, "no tensor input: generates its output")


def classify(op: Any) -> Mapping | None:
    """The mapping type of ``op``, or None for ops that are not tensor computations."""
    op = op.operation
    name = op.name
    if name.startswith(_NOT_COMPUTE_PREFIXES) or not len(op.results):
        return None
    if name in _REORGANIZE_OPS:
        return Mapping(MappingType.REORGANIZE, _REORGANIZE_OPS[name])
    maps = indexing_maps(op)
    if maps is not None:
        return _structured(op, maps)
    ir = ir_of(op)
    if not any(isinstance(r.type, ir.RankedTensorType) for r in op.results):
        return None
    if name.startswith("tensor."):
        return None  # tensor.extract (scalar), tensor.splat, ... are not dispatch work
    return Mapping(
        MappingType.MANY_TO_MANY, "opaque op without indexing maps (conservative)", "reduction"
    )
