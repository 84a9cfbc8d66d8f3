"""Evaluate small constant subgraphs at compile time (a helper of the rewrite passes).

torch-mlir does not fold the arithmetic it emits on parameters: an eval-mode batch norm's
``1/sqrt(var + eps)`` arrives as three ``linalg.generic`` ops on constants, and a linear
layer's weight as ``linalg.transpose`` of a constant. Passes that fold such values into other
constants (batch-norm folding, sibling-matmul merging) ask ``ConstEval.value(v)`` for the
array behind ``v``; it evaluates ``arith.constant``, reshapes, transposes, broadcasts and
elementwise generics whose inputs are all constant, with numpy in the op's own element type,
including gathers whose body computes indices (``linalg.index`` and integer arithmetic) and
reads a constant with ``tensor.extract`` (torch-mlir's flip of a transposed conv's filter).
Anything else (or an elementwise body with an op it does not know) is "not constant": the
caller must then leave the IR alone. ``cf.assert`` in a body is checked, never ignored.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .._mlir import ir
from ..irutil import ConstantReader, np_dtype
from .generic_util import body_ops, indexing_maps, is_elementwise, map_dims, num_inputs, producer


class NotConstant(Exception):
    pass


_BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "arith.addf": np.add,
    "arith.subf": np.subtract,
    "arith.mulf": np.multiply,
    "arith.divf": np.divide,
    "arith.maximumf": np.maximum,
    "arith.minimumf": np.minimum,
}


def erf(x: Any) -> np.ndarray:
    """The error function elementwise, in float64 (numpy has none; ``math.erf`` per element)."""
    return np.vectorize(math.erf, otypes=[np.float64])(x)


_UNARY: dict[str, Callable[[Any], Any]] = {
    "arith.negf": np.negative,
    "math.sqrt": np.sqrt,
    "math.rsqrt": lambda x: (1 / np.sqrt(x)).astype(x.dtype),
    "math.exp": np.exp,
    "math.absf": np.abs,
    "math.tanh": np.tanh,
    "math.erf": lambda x: erf(x).astype(np.asarray(x).dtype),
    "math.roundeven": np.rint,  # (numpy rounds halves to even)
    "math.floor": np.floor,
    "math.ceil": np.ceil,
}
_BINARY["math.copysign"] = np.copysign
_BINARY["math.powf"] = np.power
_BINARY["math.fpowi"] = lambda x, n: np.power(x, np.asarray(n).astype(np.int64))
_INDEX: dict[str, Callable[[Any, Any], Any]] = {  # index arithmetic of a gather's body
    "arith.addi": np.add,
    "arith.subi": np.subtract,
    "arith.muli": np.multiply,
}
_ORDERED: dict[int, Callable[[Any, Any], Any]] = {
    1: np.equal,
    2: np.greater,
    3: np.greater_equal,
    4: np.less,
    5: np.less_equal,
    6: lambda a, b: np.not_equal(a, b) & ~np.isnan(a) & ~np.isnan(b),
}


def _cmpf(pred: int, a: Any, b: Any) -> Any:
    """arith.cmpf by predicate number: 1-6 ordered (false on NaN), 8-13 unordered."""
    if pred in _ORDERED:
        return _ORDERED[pred](a, b)
    if 8 <= pred <= 12:
        return _ORDERED[pred - 7](a, b) | np.isnan(a) | np.isnan(b)
    if pred == 13:
        return np.not_equal(a, b)
    raise NotConstant


# layer weights computed from a constant (a quantized Linear's weight broadcast over the batch
# of a batch matmul: 1x1536x384 in MiniLM) are evaluated up to this size (vectorized numpy)
WEIGHT_ELEMENTS = 1 << 24


class ConstEval:
    """Evaluates values of one module; ``max_elements`` bounds what elementwise generics may
    produce (reshapes and transposes of a constant are free, generics are computed)."""

    def __init__(self, module_op: ir.Operation, max_elements: int = 1 << 16) -> None:
        """``max_elements``: the largest op evaluated (its loop count); passes that read a
        layer's weights through a broadcast or transpose pass ``WEIGHT_ELEMENTS``."""
        self.reader = ConstantReader(module_op)
        self.max_elements = max_elements

    def value(self, value: ir.Value) -> np.ndarray | None:
        try:
            return self._eval(value)
        except NotConstant:
            return None

    def per_channel_init(self, init: ir.Value, ch_dim: int) -> np.ndarray | None:
        """The per-channel constant a contraction accumulates onto (its ``outs``): a constant
        ``linalg.fill``, a splat ``arith.constant`` (ONNX imports' zero init), or a
        ``linalg.broadcast`` of a constant vector along ``ch_dim``; float64, one entry per
        channel. None for anything else."""
        op = producer(init)
        shape = ir.RankedTensorType(init.type).shape
        if op is None or ir.ShapedType.is_dynamic_size(shape[ch_dim]):
            return None
        if op.name == "arith.constant":
            attr = op.attributes["value"]
            if isinstance(attr, ir.DenseElementsAttr) and attr.is_splat:
                splat = attr.get_splat_value()
                if isinstance(splat, ir.FloatAttr):
                    return np.full(shape[ch_dim], float(splat.value))
            return None
        if op.name == "linalg.fill":
            scalar = self.value(op.operands[0])
            return None if scalar is None else np.full(shape[ch_dim], float(scalar))
        if op.name == "linalg.broadcast":
            dims = list(ir.DenseI64ArrayAttr(op.attributes["dimensions"]))
            if sorted(dims) != [d for d in range(len(shape)) if d != ch_dim]:
                return None
            vec = self.value(op.operands[0])
            return None if vec is None else vec.astype(np.float64).reshape(shape[ch_dim])
        return None

    def _eval(self, value: ir.Value) -> np.ndarray:
        op = producer(value)
        if op is None or _dynamic(value.type):  # a dynamic-size tensor is never a constant
            raise NotConstant
        name = op.name
        if name == "arith.constant":
            arr = self.reader.value_of(value)
            if arr is None:
                raise NotConstant
            return arr
        if name in ("tensor.expand_shape", "tensor.collapse_shape"):
            return self._eval(op.operands[0]).reshape(ir.RankedTensorType(value.type).shape)
        if name == "linalg.transpose":
            perm = list(ir.DenseI64ArrayAttr(op.attributes["permutation"]))
            return np.ascontiguousarray(self._eval(op.operands[0]).transpose(perm))
        if name == "linalg.broadcast":
            dims = list(ir.DenseI64ArrayAttr(op.attributes["dimensions"]))
            src = self._eval(op.operands[0])
            shape = ir.RankedTensorType(value.type).shape
            return np.broadcast_to(np.expand_dims(src, dims), shape).copy()
        if name == "linalg.fill":
            scalar = self._eval_scalar(op.operands[0])
            return np.full(ir.RankedTensorType(value.type).shape, scalar)
        if name == "linalg.generic" and is_elementwise(op):
            return self._eval_generic(op)
        raise NotConstant

    def _eval_scalar(self, value: ir.Value) -> np.ndarray:
        op = producer(value)
        if op is None or op.name != "arith.constant":
            raise NotConstant
        arr = self.reader.value_of(value)
        if arr is None:
            raise NotConstant
        return arr

    def eval_body(self, op: ir.Operation, args: list[np.ndarray]) -> np.ndarray | None:
        """The elementwise generic ``op``'s body applied to ``args`` (one array per input,
        broadcast together), with the scalar constants it captures; None where the body
        holds anything this evaluator does not compute."""
        blk_args = list(op.regions[0].blocks[0].arguments)
        env: dict[ir.Value, np.ndarray] = dict(zip(blk_args[: len(args)], args, strict=True))
        try:
            for inner in body_ops(op):
                if inner.name == "linalg.yield":
                    return np.asarray(env_get(env, inner.operands[0], self))
                if inner.name in ("linalg.index", "tensor.extract"):
                    return None
                self._step(inner, env)
        except NotConstant:
            return None
        return None

    def _eval_generic(self, op: ir.Operation) -> np.ndarray:
        out_ty = ir.RankedTensorType(op.results[0].type)
        loops = list(out_ty.shape)
        copy = _copied_input(op)
        if copy is not None:  # a copy adding unit dims or permuting: free, like a reshape
            src = self._eval(op.operands[copy])
            if src.size == int(np.prod(loops)):
                view = loop_view(src, map_dims(indexing_maps(op)[copy]), loops)
                return np.ascontiguousarray(view)
        if int(np.prod(loops)) > self.max_elements:
            raise NotConstant
        n_in = num_inputs(op)
        maps = indexing_maps(op)
        args = [
            loop_view(self._eval(op.operands[i]), map_dims(maps[i]), loops) for i in range(n_in)
        ]
        blk_args = list(op.regions[0].blocks[0].arguments)
        env: dict[ir.Value, np.ndarray] = dict(zip(blk_args[:n_in], args, strict=True))
        for inner in body_ops(op):
            if inner.name == "linalg.yield":
                out = np.asarray(env_get(env, inner.operands[0], self))
                return np.broadcast_to(out, loops).astype(np_dtype(out_ty.element_type))
            if inner.name == "linalg.index":  # the loop's index, laid out along its loop
                d = ir.IntegerAttr(inner.attributes["dim"]).value
                shape = [n if i == d else 1 for i, n in enumerate(loops)]
                env[inner.results[0]] = np.arange(loops[d], dtype=np.int64).reshape(shape)
                continue
            if inner.name == "tensor.extract":
                env[inner.results[0]] = self._gather(inner, env)
                continue
            self._step(inner, env)
        raise NotConstant

    def _gather(self, inner: ir.Operation, env: dict[ir.Value, np.ndarray]) -> np.ndarray:
        """``tensor.extract`` of a constant at computed indices; an index out of bounds (the
        program's behaviour would be undefined) is not folded."""
        if inner.operands[0] in env:
            raise NotConstant
        src = self._eval(inner.operands[0])
        idx = [np.asarray(env_get(env, v, self)).astype(np.int64) for v in inner.operands[1:]]
        for i, n in zip(idx, src.shape, strict=True):
            if i.size and (i.min() < 0 or i.max() >= n):
                raise NotConstant
        return src[tuple(np.broadcast_arrays(*idx))] if idx else src[()]

    def _step(self, inner: ir.Operation, env: dict[ir.Value, np.ndarray]) -> None:
        name = inner.name
        if name == "arith.constant" and isinstance(inner.results[0].type, ir.IndexType):
            env[inner.results[0]] = _index_constant(inner)
            return
        vals = [env_get(env, v, self) for v in inner.operands]
        if name in _INDEX and isinstance(inner.results[0].type, ir.IndexType):
            env[inner.results[0]] = _INDEX[name](vals[0], vals[1])
            return
        if name in _BINARY:
            res = _BINARY[name](vals[0], vals[1])
        elif name in _INDEX and isinstance(inner.results[0].type, ir.IntegerType):
            res = _wrapped(_INDEX[name], vals, ir.IntegerType(inner.results[0].type).width)
        elif name in _UNARY:
            res = _UNARY[name](vals[0])
        elif name in ("arith.truncf", "arith.extf", "arith.sitofp"):
            res = np.asarray(vals[0]).astype(np_dtype(inner.results[0].type))
        elif name == "arith.fptosi":
            res = _to_integer(vals[0], np_dtype(inner.results[0].type))
        elif name == "arith.constant":
            res = self.reader.value_of(inner.results[0])
        elif name == "arith.cmpf":
            res = _cmpf(ir.IntegerAttr(inner.attributes["predicate"]).value, vals[0], vals[1])
        elif name == "arith.select":
            res = np.where(vals[0], vals[1], vals[2])
        elif name == "cf.assert":
            if not np.all(vals[0]):
                raise NotConstant  # the program would abort here: never fold it away
            return
        else:
            raise NotConstant
        if res is None:
            raise NotConstant
        dtype = np_dtype(inner.results[0].type)
        env[inner.results[0]] = np.asarray(res).astype(dtype, copy=False)


def _wrapped(fn: Callable[[Any, Any], Any], vals: list[np.ndarray], width: int) -> np.ndarray:
    """Integer ``arith`` arithmetic on signless integers of ``width`` bits: computed wide,
    then wrapped around as the machine does (an int8 ``x + -128`` of 100 is -28)."""
    if width not in (8, 16, 32):
        raise NotConstant
    wide = fn(np.asarray(vals[0], np.int64), np.asarray(vals[1], np.int64))
    half = 1 << (width - 1)
    return (np.asarray(wide) + half) % (1 << width) - half


def _to_integer(x: np.ndarray, dtype: Any) -> np.ndarray:
    """``arith.fptosi``: toward zero; a value the integer type cannot hold (undefined in
    the program) is not folded."""
    whole = np.trunc(np.asarray(x, np.float64))
    info = np.iinfo(dtype)
    if not np.all(np.isfinite(whole)) or whole.min() < info.min or whole.max() > info.max:
        raise NotConstant
    return whole.astype(dtype)


def env_get(env: dict[ir.Value, np.ndarray], value: ir.Value, ev: ConstEval) -> np.ndarray:
    """A body value: computed in the body, or a scalar constant captured from outside."""
    if value in env:
        return env[value]
    if isinstance(value.type, ir.IndexType):
        op = producer(value)
        if op is None or op.name != "arith.constant":
            raise NotConstant
        return _index_constant(op)
    return ev._eval_scalar(value)


def _index_constant(op: ir.Operation) -> np.ndarray:
    """An ``arith.constant`` of index type as int64 (numpy has no index dtype)."""
    return np.array(ir.IntegerAttr(op.attributes["value"]).value, np.int64)


def _dynamic(ty: ir.Type) -> bool:
    return isinstance(ty, ir.RankedTensorType) and any(
        ir.ShapedType.is_dynamic_size(d) for d in ty.shape
    )


def _copied_input(op: ir.Operation) -> int | None:
    """The input an elementwise generic yields unchanged (torch-mlir's broadcast of a tied
    weight to [1, K, N]), else None."""
    ops = body_ops(op)
    if len(ops) != 1 or ops[0].name != "linalg.yield":
        return None
    args = list(op.regions[0].blocks[0].arguments)[: num_inputs(op)]
    for i, arg in enumerate(args):
        if ops[0].operands[0] == arg:
            return i
    return None


def loop_view(arr: np.ndarray, dims: list[int | None] | None, loops: list[int]) -> np.ndarray:
    """``arr`` indexed by a map with results ``dims`` (loop dims / size-1 zeros), laid out
    over the loop space (broadcast where the map skips a loop). A dynamic loop the map skips
    gets size 1 (the view is the same along it); one the map reads is not constant."""
    if dims is None:
        raise NotConstant
    dynamic = [i for i, n in enumerate(loops) if ir.ShapedType.is_dynamic_size(n)]
    if any(d in dynamic for d in dims):
        raise NotConstant
    loops = [1 if i in dynamic else n for i, n in enumerate(loops)]
    index = tuple(0 if d is None else slice(None) for d in dims)
    arr = arr[index] if dims else np.asarray(arr)
    kept = [d for d in dims if d is not None]
    order = sorted(range(len(kept)), key=lambda i: kept[i])
    arr = arr.transpose(order) if kept else arr
    shape = [loops[d] if d in kept else 1 for d in range(len(loops))]
    return np.broadcast_to(arr.reshape(shape), loops)
