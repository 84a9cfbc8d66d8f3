"""Small helpers over MLIR's Python bindings shared by passes: constants in and out.

Weights arrive as ``arith.constant dense_resource<...>`` (the FX importer's form) or inline
``dense<...>``. The bindings cannot read a resource blob back, so ``ConstantReader`` prints the
one constant it is asked about (hex) and serves a numpy view of it.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from typing import Any

import numpy as np

from ._mlir import binding_of, ir
from .diagnostics import format_location
from .dtypes import element_type, numpy_dtype
from .errors import UnsupportedOp

_RESOURCE_NAME = re.compile(r"dense_resource<([^>]+)>")


def ops_where(module_op: ir.Operation, pred: Any, first_only: bool = False) -> list[ir.Operation]:
    """Ops under ``module_op`` for which ``pred(op)`` holds, in IR order (collected first, so
    callers may rewrite them afterwards); ``first_only`` stops at the first match."""
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if pred(op):
            found.append(op)
            if first_only:
                return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    module_op.walk(visit)
    return found


def ops_named(module_op: ir.Operation, *names: str) -> list[ir.Operation]:
    return ops_where(module_op, lambda op: op.name in names)


def np_dtype(elem: ir.Type) -> np.dtype:
    """The numpy dtype of an element type (dtypes.py's table; bf16 as ml_dtypes.bfloat16);
    TypeError for a type numpy cannot hold."""
    dt = numpy_dtype(elem)
    if dt is None:
        raise TypeError(f"no numpy dtype for MLIR element type {elem}")
    return dt


class ConstantReader:
    """Reads the value of ``arith.constant`` ops of one module (dense or dense_resource)."""

    def __init__(self, module_op: ir.Operation) -> None:
        self._module_op = module_op

    @staticmethod
    def _blob_of(op: ir.Operation, name: str, nbytes: int) -> bytes | None:
        """The ``nbytes`` of this constant's blob ``name``, read from the bytecode of a clone of
        it alone in an empty module (so reading one conv's weights never writes a model's
        other hundreds of MB); from its printed hex where that bytecode does not parse as
        expected. Bytecode: 0.07 s for a 38 MB weight, against 0.9 s printed (BERT-base's
        xgen passes read its 440 MB of weights twice)."""
        scratch = ir.Module.create(ir.Location.unknown(op.context))
        with ir.InsertionPoint(scratch.body):
            op.clone()
        out = io.BytesIO()
        scratch.operation.write_bytecode(out)
        blob = _bytecode_blob(out.getvalue(), nbytes)
        if blob is not None:
            return blob
        buf = io.StringIO()
        scratch.operation.print(file=buf)
        return _hex_blob(buf.getvalue(), name)

    def value_of(self, value: ir.Value) -> np.ndarray | None:
        """The constant array behind ``value``, or None if it is not an ``arith.constant``."""
        owner = value.owner
        if isinstance(owner, ir.Block):
            return None
        op = owner.operation
        if op.name != "arith.constant":
            return None
        return self.attr_value(op.attributes["value"], op)

    def attr_value(self, attr: ir.Attribute, op: ir.Operation | None = None) -> np.ndarray | None:
        if isinstance(attr, ir.FloatAttr):
            return np.array(attr.value, np_dtype(attr.type))
        if isinstance(attr, ir.IntegerAttr):
            return np.array(attr.value, np_dtype(attr.type))
        ty = attr.type
        if not isinstance(ty, ir.RankedTensorType):
            return None
        if isinstance(attr, ir.DenseElementsAttr):
            dense = attr
            if dense.is_splat:
                return np.full(
                    ty.shape, np.array(dense.get_splat_value().value), np_dtype(ty.element_type)
                )
            dtype = np_dtype(ty.element_type)
            if dtype.kind == "V":  # bf16: no buffer protocol; read back what MLIR prints
                return _dense_from_text(str(dense), dtype, ty.shape)
            return np.array(dense).reshape(ty.shape)
        m = _RESOURCE_NAME.search(str(attr))
        if m is None or op is None:
            return None
        dtype = np_dtype(ty.element_type)
        blob = self._blob_of(op, m.group(1), int(np.prod(ty.shape)) * dtype.itemsize)
        if blob is None:
            return None
        return np.frombuffer(blob, dtype).reshape(ty.shape)


def _varint(b: bytes, p: int) -> tuple[int, int]:
    """MLIR bytecode's prefix varint at ``b[p]``: (value, next position). The first byte's
    trailing zeros count the bytes that follow (none: 9 bytes in all)."""
    first = b[p]
    if first & 1:
        return first >> 1, p + 1
    if first == 0:
        return int.from_bytes(b[p + 1 : p + 9], "little"), p + 9
    n = (first & -first).bit_length()
    return int.from_bytes(b[p : p + n], "little") >> n, p + n


# the bytecode section that holds resource blobs (MLIR's bytecode::Section::kResource)
_RESOURCE_SECTION = 5
_PAD = 0xCB  # MLIR's alignment padding byte


def _bytecode_blob(b: bytes, nbytes: int) -> bytes | None:
    """The data of the one resource blob of ``nbytes`` in module bytecode ``b``, or None
    unless the layout is exactly the one expected: sections that end at the end of the
    file, one resource section holding [alignment][size == nbytes][padding][data], the data
    aligned. Anything else (another MLIR version's layout) falls back to the printed form."""
    try:
        if b[:4] != b"ML\xefR":
            return None
        _, p = _varint(b, 4)  # version
        p = b.index(b"\0", p) + 1  # producer
        found = []
        while p < len(b):
            code = b[p]
            length, p = _varint(b, p + 1)
            if code & 0x80:
                align, p = _varint(b, p)
                pad = (-p) % align
                if any(x != _PAD for x in b[p : p + pad]):
                    return None
                p += pad
            if code & 0x7F == _RESOURCE_SECTION:
                found.append((p, length))
            p += length
        if p != len(b) or len(found) != 1:
            return None
        at, length = found[0]
        align, q = _varint(b, at)
        size, q = _varint(b, q)
        start = at + length - nbytes
        if size != nbytes or start < q or any(x != _PAD for x in b[q:start]):
            return None
        if align > 1 and start % align:
            return None
        return b[start : at + length]
    except (IndexError, ValueError):
        return None


def _hex_blob(text: str, name: str) -> bytes | None:
    """The bytes of resource blob ``name`` in printed IR (``name: "0x<hex>"`` in its
    ``dialect_resources``, the name quoted or bare, at the start of its line), without the
    4-byte alignment header."""
    start = text.find("dialect_resources")
    if start < 0:
        return None
    name = name.strip('"')  # as the attribute prints it, quoted where it has dots or dashes
    for key in (f'"{name}": "0x', f'{name}: "0x'):
        at = text.find(key, start)
        while at >= 0:
            line = text.rfind("\n", start, at)
            if not text[line + 1 : at].strip():  # only indentation before the name
                begin = at + len(key)
                return bytes.fromhex(text[begin : text.find('"', begin)])[4:]
            at = text.find(key, at + 1)
    return None


def _dense_from_text(text: str, dtype: np.dtype, shape: list[int]) -> np.ndarray:
    """The values of a printed ``dense<...>`` attribute of a type the bindings cannot hand
    to numpy (bf16): a hex blob (``dense<"0x...">``, raw little-endian elements) or a list
    of literals, each a number or the element's bits in hex (NaN, Inf: ``0x7FC0``)."""
    body = text[text.index("<") + 1 : text.rindex(":")].strip().removesuffix(">").strip()
    if body.startswith('"0x'):
        return np.frombuffer(bytes.fromhex(body[3:-1]), dtype).reshape(shape).copy()
    bits = np.dtype(f"<u{dtype.itemsize}")
    values = [
        np.array(int(tok, 16), bits).view(dtype) if tok.startswith("0x") else float(tok)
        for tok in re.findall(r"0x[0-9A-Fa-f]+|[-+]?[\d.]+(?:[eE][-+]?\d+)?", body)
    ]
    return np.array(values, dtype).reshape(shape)


_counter = [0]


def constant_op(array: np.ndarray, name_hint: str = "xgen") -> Any:
    """Build ``arith.constant`` for ``array`` at the current insertion point/location.

    Large arrays become resource blobs (compact in bytecode); small ones stay inline.
    """
    from ._mlir import arith

    array = np.ascontiguousarray(array)
    name = element_type(array.dtype)
    if name is None:
        raise TypeError(f"no MLIR element type for numpy dtype {array.dtype}")
    elem = ir.Type.parse(name)
    ty = ir.RankedTensorType.get(list(array.shape), elem)
    # bf16 has no buffer format the bindings read: hand them its bits, typed by ``elem``
    raw = array if array.dtype.kind != "V" else array.view(f"<u{array.dtype.itemsize}")
    if array.size <= 64:
        attr = ir.DenseElementsAttr.get(raw, type=elem, shape=list(array.shape))
    else:
        _counter[0] += 1
        attr = ir.DenseResourceElementsAttr.get_from_buffer(
            raw.data, f"{name_hint}_{_counter[0]}", ty
        )
    return arith.ConstantOp(ty, attr)


def clone_body(
    src: Any,
    dst: Any,
    arg_types: list[Any] | None = None,
    forward: Callable[[Any], bool] | None = None,
) -> None:
    """Clone ``src``'s single-block body into ``dst``'s empty first region (values captured
    from above stay captured). Works on ops of either MLIR binding (torch-mlir's or IREE's).
    ``arg_types``: the new block's argument types (default: ``src``'s); ``forward(op)``: ops
    not cloned, their result standing for their first operand (a conversion a retyped
    argument no longer needs)."""
    block = src.regions[0].blocks[0]
    types = arg_types if arg_types is not None else [a.type for a in block.arguments]
    new_block = dst.regions[0].blocks.append(*types)
    mapping = dict(zip(block.arguments, new_block.arguments, strict=True))
    with binding_of(dst).ir.InsertionPoint(new_block):
        for op in block.operations:
            if forward is not None and forward(op.operation):
                first = op.operands[0]
                mapping[op.results[0]] = mapping.get(first, first)
                continue
            clone = op.operation.clone()
            for i, v in enumerate(clone.operands):
                if v in mapping:
                    clone.operands[i] = mapping[v]
            mapping.update(zip(op.results, clone.results, strict=True))


def defining_op(value: Any) -> Any:
    """The op that defines ``value`` (None for a block argument); either MLIR binding."""
    owner = value.owner
    return owner.operation if hasattr(owner, "operation") else None


def splice_functions(module_op: ir.Operation, text: str) -> None:
    """Parse ``text`` (functions) in the module's context and move them to the module's top."""
    snippet = ir.Module.parse(text, module_op.context)
    body = module_op.regions[0].blocks[0]
    for op in list(snippet.body.operations):
        op.operation.move_before(body.operations[0])


def find_func(module_op: ir.Operation, name: str) -> Any:
    """The top-level ``func.func @name`` of the module (KeyError if none)."""
    for op in module_op.regions[0].blocks[0].operations:
        if (
            op.operation.name == "func.func"
            and ir.StringAttr(op.attributes["sym_name"]).value == name
        ):
            return op.operation
    raise KeyError(name)


# Torch-dialect ops that only carry constants/lists and vanish once their users are lowered.
TORCH_BOOKKEEPING_PREFIXES = (
    "torch.constant.",
    "torch.prim.ListConstruct",
    "torch.prim.TupleConstruct",
)


def leftover_torch_ops(module: ir.Module) -> list[UnsupportedOp]:
    """Every compute op still in the torch dialect (in IR order)."""
    found: list[UnsupportedOp] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        name = op.name
        if name.startswith("torch.") and not name.startswith(TORCH_BOOKKEEPING_PREFIXES):
            if name == "torch.operator":  # generic op carrying the source op's name
                name = ir.StringAttr(op.attributes["name"]).value
            found.append(UnsupportedOp(name, format_location(op.location)))
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return found


def function_of(op: ir.Operation) -> str:
    """The name of the ``func.func`` that holds ``op`` ("" outside any)."""
    parent = op.parent
    while parent is not None and parent.name != "func.func":
        parent = parent.parent
    return "" if parent is None else ir.StringAttr(parent.attributes["sym_name"]).value
