"""Python view of xgen_sparse ops: reading their parts, and the semantic verifier.

IRDL (``dialects/xgen_sparse.irdl.mlir``) checks operand/attribute kinds when IR is parsed;
``verify_sparse_ops`` checks what IRDL cannot say: shapes agree, strides/padding are sane,
pattern ids are in range, index lists are in bounds, and weights are zero outside their
declared patterns. Every problem is reported with the op's location and what is wrong.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._mlir import ir
from ..diagnostics import format_location
from ..errors import XGenError
from ..irutil import ConstantReader, ops_where

PATTERN_CONV = "xgen_sparse.pattern_conv2d"
FKW_CONV = "xgen_sparse.fkw_conv2d"


class SparseVerifyError(XGenError):
    """xgen_sparse IR that breaks the dialect's rules (message lists every violation)."""


def int_list(attr: ir.Attribute) -> list[int]:
    return [ir.IntegerAttr(a).value for a in ir.ArrayAttr(attr)]


def patterns_of(op: ir.Operation) -> list[list[int]]:
    return [int_list(p) for p in ir.ArrayAttr(op.attributes["patterns"])]


def shape_of(value: ir.Value) -> list[int]:
    return list(ir.RankedTensorType(value.type).shape)


@dataclass
class ConvGeometry:
    n: int
    c: int
    h: int
    w: int
    f: int
    kh: int
    kw: int
    strides: list[int]
    padding: list[int]  # top, left, bottom, right

    @property
    def out_hw(self) -> tuple[int, int]:
        oh = (self.h + self.padding[0] + self.padding[2] - self.kh) // self.strides[0] + 1
        ow = (self.w + self.padding[1] + self.padding[3] - self.kw) // self.strides[1] + 1
        return oh, ow


def geometry(op: ir.Operation) -> ConvGeometry:
    n, c, h, w = shape_of(op.operands[0])
    f = shape_of(op.operands[2])[0]
    if op.name == PATTERN_CONV:
        _, _, kh, kw = shape_of(op.operands[1])
    else:
        kh, kw = int_list(op.attributes["kernel_size"])
    return ConvGeometry(
        n,
        c,
        h,
        w,
        f,
        kh,
        kw,
        int_list(op.attributes["strides"]),
        int_list(op.attributes["padding"]),
    )


def _check_common(op: ir.Operation, errs: list[str]) -> ConvGeometry | None:
    try:
        g = geometry(op)
    except (ValueError, IndexError) as e:
        errs.append(f"operands must be ranked tensors of the documented ranks ({e})")
        return None
    if len(g.strides) != 2 or min(g.strides) < 1:
        errs.append(f"strides must be two positive integers, got {g.strides}")
    if len(g.padding) != 4 or min(g.padding, default=0) < 0:
        errs.append(
            f"padding must be four non-negative integers [top, left, bottom, right], "
            f"got {g.padding}"
        )
    if errs:
        return None
    pats = patterns_of(op)
    if not pats:
        errs.append("the pattern library is empty")
    sizes = {len(p) for p in pats}
    if len(sizes) > 1:
        errs.append(f"all patterns must have the same number of entries, got sizes {sorted(sizes)}")
    for i, p in enumerate(pats):
        if len(set(p)) != len(p) or any(not 0 <= k < g.kh * g.kw for k in p):
            errs.append(f"pattern {i} = {p} must list distinct positions in [0, {g.kh * g.kw})")
    out = shape_of(op.results[0])
    want = [g.n, g.f, *g.out_hw]
    if out != want:
        errs.append(f"result shape {out} does not match the convolution's {want}")
    return g


def _verify_pattern_conv(op: ir.Operation, reader: ConstantReader, errs: list[str]) -> None:
    g = _check_common(op, errs)
    if g is None:
        return
    wshape = shape_of(op.operands[1])
    if wshape[:2] != [g.f, g.c]:
        errs.append(f"weight shape {wshape} does not match {g.f} filters x {g.c} input channels")
    if shape_of(op.operands[3]) != [g.f, g.c]:
        errs.append(
            f"kernel_pattern must be {g.f}x{g.c} (one id per kernel), "
            f"got {shape_of(op.operands[3])}"
        )
    if errs:
        return
    ids = reader.value_of(op.operands[3])
    if ids is None:
        errs.append("kernel_pattern must be a constant")
        return
    npat = len(patterns_of(op))
    bad = np.argwhere((ids < -1) | (ids >= npat))
    if bad.size:
        f, c = bad[0]
        errs.append(
            f"pattern id {ids[f, c]} of kernel (filter {f}, channel {c}) is out of range "
            f"[-1, {npat}) ({len(bad)} such kernels)"
        )
        return
    weight = reader.value_of(op.operands[1])
    if weight is None:
        return  # non-constant weights are legal; nothing more to check
    masks = np.zeros((npat + 1, g.kh * g.kw), bool)
    for i, p in enumerate(patterns_of(op)):
        masks[i, p] = True
    allowed = masks[ids].reshape(weight.shape)  # ids == -1 picks the all-false last row
    off = np.argwhere((weight != 0) & ~allowed)
    if off.size:
        f, c, y, x = off[0]
        errs.append(
            f"weight[{f}, {c}, {y}, {x}] = {weight[f, c, y, x]:g} is nonzero outside kernel "
            f"(filter {f}, channel {c})'s pattern {ids[f, c]} ({len(off)} such entries)"
        )


def _verify_fkw_conv(op: ir.Operation, reader: ConstantReader, errs: list[str]) -> None:
    g = _check_common(op, errs)
    if g is None:
        return
    tables = {
        name: reader.value_of(op.operands[i])
        for i, name in enumerate(
            [
                "input",
                "fkw_weight",
                "bias",
                "filter_order",
                "group_filter_offsets",
                "group_kernel_offsets",
                "kernel_channel",
                "kernel_pattern",
            ]
        )
    }
    missing = [k for k in list(tables)[3:] if tables[k] is None]
    if missing:
        errs.append(f"index operands must be constants: {', '.join(missing)}")
        return
    order, gfo, gko = (
        tables["filter_order"],
        tables["group_filter_offsets"],
        tables["group_kernel_offsets"],
    )
    chan, pat = tables["kernel_channel"], tables["kernel_pattern"]
    # none is missing (checked above)
    assert order is not None and gfo is not None and gko is not None
    assert chan is not None and pat is not None
    if sorted(order.tolist()) != list(range(g.f)):
        errs.append(f"filter_order must be a permutation of 0..{g.f - 1}")
    for name, offs, end in (
        ("group_filter_offsets", gfo, g.f),
        ("group_kernel_offsets", gko, len(chan)),
    ):
        if offs.size < 2 or offs[0] != 0 or offs[-1] != end or np.any(np.diff(offs) < 0):
            errs.append(f"{name} must rise from 0 to {end}, got {offs.tolist()}")
    if gfo.size != gko.size:
        errs.append(
            f"group_filter_offsets and group_kernel_offsets disagree on the group count "
            f"({gfo.size - 1} vs {gko.size - 1})"
        )
    if len(pat) != len(chan):
        errs.append(f"kernel_pattern has {len(pat)} entries for {len(chan)} kernels")
    oob = np.flatnonzero((chan < 0) | (chan >= g.c))
    if oob.size:
        errs.append(
            f"kernel_channel[{oob[0]}] = {chan[oob[0]]} is out of bounds for {g.c} input "
            f"channels ({oob.size} such entries)"
        )
    npat = len(patterns_of(op))
    badp = np.flatnonzero((pat < 0) | (pat >= npat))
    if badp.size:
        errs.append(f"kernel_pattern[{badp[0]}] = {pat[badp[0]]} is out of range [0, {npat})")
    if errs:
        return
    n = len(patterns_of(op)[0])
    want = int(sum((gko[i + 1] - gko[i]) * n * (gfo[i + 1] - gfo[i]) for i in range(gfo.size - 1)))
    got = shape_of(op.operands[1])
    if got != [want]:
        errs.append(
            f"fkw_weight must hold {want} values (kept kernels x {n} entries x group size), "
            f"got {got}"
        )


def verify_sparse_ops(module_op: ir.Operation) -> None:
    """Raise SparseVerifyError listing every violation in every xgen_sparse op."""
    reader = ConstantReader(module_op)
    problems: list[str] = []

    from .block_sparse import BLOCK_OPS, verify_block_op

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name in BLOCK_OPS:
            found: list[str] = []
            verify_block_op(op, reader, found)
            where = format_location(op.location)
            problems.extend(f"{where}: error: '{op.name}' op {e}" for e in found)
        elif op.name in (PATTERN_CONV, FKW_CONV):
            errs: list[str] = []
            (_verify_pattern_conv if op.name == PATTERN_CONV else _verify_fkw_conv)(
                op, reader, errs
            )
            where = format_location(op.location)
            problems.extend(f"{where}: error: '{op.name}' op {e}" for e in errs)
        return ir.WalkResult.ADVANCE

    module_op.walk(visit)
    if problems:
        raise SparseVerifyError("\n".join(problems))


def has_sparse_ops(module_op: ir.Operation) -> bool:
    return bool(
        ops_where(module_op, lambda op: op.name.startswith("xgen_sparse."), first_only=True)
    )
