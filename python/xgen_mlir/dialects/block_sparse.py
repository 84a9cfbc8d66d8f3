"""Python view of the block-sparse xgen_sparse ops and their semantic verifier.

``block_linear``: ``y = x W^T + bias`` with dense (zero-filled) block-pruned weights and a
``block = [rows, cols]`` attribute. ``bcsr_linear``: the same in compact storage (see
``dialects/xgen_sparse.md``): for block-row i, blocks ``block_offsets[i] .. [i+1]``; for block
b, kept rows ``kept_rows[row_offsets[b] .. [b+1]]`` and kept columns ``kept_cols[col_offsets[b]
.. [b+1]]`` (absolute, ascending, inside the block's tile), and ``r_b x c_b`` values stored
column by column. IRDL checks the operand/attribute kinds; this checks shapes and tables.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._mlir import ir
from ..irutil import ConstantReader

BLOCK_LINEAR = "xgen_sparse.block_linear"
BCSR_LINEAR = "xgen_sparse.bcsr_linear"
BLOCK_OPS = (BLOCK_LINEAR, BCSR_LINEAR)
TABLES = ("block_offsets", "row_offsets", "col_offsets", "kept_rows", "kept_cols")


def _ints(attr: ir.Attribute) -> list[int]:
    return [ir.IntegerAttr(a).value for a in ir.ArrayAttr(attr)]


def _shape(value: ir.Value) -> list[int]:
    return list(ir.RankedTensorType(value.type).shape)


@dataclass
class BcsrTables:
    block_offsets: np.ndarray
    row_offsets: np.ndarray
    col_offsets: np.ndarray
    kept_rows: np.ndarray
    kept_cols: np.ndarray

    def arrays(self) -> list[np.ndarray]:
        return [getattr(self, t) for t in TABLES]

    @property
    def value_offsets(self) -> np.ndarray:
        r = np.diff(self.row_offsets)
        c = np.diff(self.col_offsets)
        return np.concatenate([[0], np.cumsum(r * c)]).astype(np.int64)


def block_of(op: ir.Operation) -> list[int]:
    return _ints(op.attributes["block"])


def weight_shape(op: ir.Operation) -> list[int]:
    """[N, K] of the layer's weight."""
    if op.name == BLOCK_LINEAR:
        return _shape(op.operands[1])
    return _ints(op.attributes["weight_shape"])


def tables_of(op: ir.Operation, reader: ConstantReader) -> BcsrTables | None:
    found = [reader.value_of(op.operands[3 + i]) for i in range(len(TABLES))]
    if any(t is None for t in found):
        return None
    return BcsrTables(*[np.asarray(t).astype(np.int64).reshape(-1) for t in found])  # type: ignore[union-attr]


def bcsr_to_dense(op: ir.Operation, reader: ConstantReader) -> np.ndarray | None:
    """The [N, K] weights a constant bcsr_linear stores (None if not constant)."""
    tab = tables_of(op, reader)
    vals = reader.value_of(op.operands[1])
    if tab is None or vals is None:
        return None
    n, k = weight_shape(op)
    dense = np.zeros((n, k), np.float32)
    voff = tab.value_offsets
    nr = np.diff(tab.row_offsets)
    block = np.repeat(np.arange(len(nr)), np.diff(voff))  # each value's block
    at = np.arange(int(voff[-1])) - voff[block]  # its place in the block, column by column
    rows = tab.kept_rows[tab.row_offsets[block] + at % nr[block]]
    cols = tab.kept_cols[tab.col_offsets[block] + at // nr[block]]
    dense[rows, cols] = np.asarray(vals, np.float32).reshape(-1)
    return dense


def _check_linear(op: ir.Operation, errs: list[str]) -> tuple[int, int, int, list[int]] | None:
    try:
        x, y, bias = _shape(op.operands[0]), _shape(op.results[0]), _shape(op.operands[2])
        n, k = weight_shape(op)
        block = block_of(op)
    except (ValueError, IndexError) as e:
        errs.append(f"operands must be ranked tensors of the documented ranks ({e})")
        return None
    if len(block) != 2 or min(block) < 1:
        errs.append(f"block must be two positive sizes [rows, cols], got {block}")
    if len(x) != 2 or x[1] != k:
        errs.append(f"input shape {x} must be [M, {k}] (the weight is {n}x{k})")
    if bias != [n]:
        errs.append(f"bias shape {bias} must be [{n}]")
    if len(x) == 2 and y != [x[0], n]:
        errs.append(f"result shape {y} must be [{x[0] if x else '?'}, {n}]")
    return (x[0] if x else 0, n, k, block) if not errs else None


def verify_block_op(op: ir.Operation, reader: ConstantReader, errs: list[str]) -> None:
    """Append every violation of ``op``'s rules to ``errs``."""
    got = _check_linear(op, errs)
    if got is None or op.name == BLOCK_LINEAR:
        return
    _, n, k, (br, bc) = got
    tab = tables_of(op, reader)
    if tab is None:
        errs.append("the block tables must be constants: " + ", ".join(TABLES))
        return
    nbr = -(-n // br)
    bo, ro, co = tab.block_offsets, tab.row_offsets, tab.col_offsets
    nb = len(ro) - 1
    for name, offs, size, end in (
        ("block_offsets", bo, nbr + 1, None),
        ("row_offsets", ro, None, len(tab.kept_rows)),
        ("col_offsets", co, None, len(tab.kept_cols)),
    ):
        if size is not None and len(offs) != size:
            errs.append(f"{name} must have {size} entries (block-rows + 1), got {len(offs)}")
            return
        last = nb if end is None else end
        if len(offs) < 1 or offs[0] != 0 or offs[-1] != last or np.any(np.diff(offs) < 0):
            errs.append(f"{name} must rise from 0 to {last}, got {offs.tolist()[:8]}...")
            return
    if len(co) != len(ro):
        errs.append(
            f"row_offsets and col_offsets disagree on the block count ({nb} vs {len(co) - 1})"
        )
        return
    if np.any(np.diff(ro) == 0) or np.any(np.diff(co) == 0):
        b = int(np.flatnonzero((np.diff(ro) == 0) | (np.diff(co) == 0))[0])
        errs.append(f"block {b} keeps no row or no column (a removed block is not listed)")
        return
    if _blocks_valid(tab, n, k, br, bc):
        _check_values(op, tab, errs)
        return
    for i in range(nbr):  # the first broken block, named
        last_bc = -1
        for b in range(bo[i], bo[i + 1]):
            rows = tab.kept_rows[ro[b] : ro[b + 1]]
            cols = tab.kept_cols[co[b] : co[b + 1]]
            lo, hi = i * br, min((i + 1) * br, n)
            if rows.min() < lo or rows.max() >= hi or np.any(np.diff(rows) <= 0):
                errs.append(
                    f"block {b} (block-row {i}): kept rows {rows.tolist()} must rise strictly "
                    f"inside [{lo}, {hi})"
                )
                return
            bcol = int(cols[0]) // bc
            if cols.min() < 0 or cols.max() >= k or np.any(np.diff(cols) <= 0):
                errs.append(
                    f"block {b}: kept columns {cols.tolist()} must rise strictly inside [0, {k})"
                )
                return
            if int(cols[-1]) // bc != bcol or bcol <= last_bc:
                errs.append(
                    f"block {b} (block-row {i}): kept columns {cols.tolist()} must lie in one "
                    f"{bc}-column tile, after the previous block's"
                )
                return
            last_bc = bcol
    _check_values(op, tab, errs)


def _blocks_valid(tab: BcsrTables, n: int, k: int, br: int, bc: int) -> bool:
    """Every block's kept rows rise strictly inside its block-row, its kept columns rise
    strictly inside one column tile, after the previous block's tile in its block-row: the
    per-block rules, checked over all blocks at once (offsets already checked)."""
    ro, co = tab.row_offsets, tab.col_offsets
    nb = len(ro) - 1
    if nb == 0:
        return True
    block_row = np.searchsorted(tab.block_offsets, np.arange(nb), side="right") - 1
    rows, cols = tab.kept_rows, tab.kept_cols
    row_block = np.repeat(np.arange(nb), np.diff(ro))
    col_block = np.repeat(np.arange(nb), np.diff(co))
    lo = block_row[row_block] * br
    if np.any(rows < lo) or np.any(rows >= np.minimum(lo + br, n)):
        return False
    if np.any(cols < 0) or np.any(cols >= k):
        return False
    same_r, same_c = row_block[1:] == row_block[:-1], col_block[1:] == col_block[:-1]
    if np.any(np.diff(rows)[same_r] <= 0) or np.any(np.diff(cols)[same_c] <= 0):
        return False
    first, last = cols[co[:-1]] // bc, cols[co[1:] - 1] // bc
    if np.any(first != last):
        return False
    same_row = block_row[1:] == block_row[:-1]
    return not np.any(first[1:][same_row] <= first[:-1][same_row])


def _check_values(op: ir.Operation, tab: BcsrTables, errs: list[str]) -> None:
    want = int(tab.value_offsets[-1])
    got_len = _shape(op.operands[1])
    if got_len != [want]:
        errs.append(
            f"values must hold {want} entries (kept rows x kept columns per block), got {got_len}"
        )
