"""Putting a generated C kernel in place of the ops it computes.

The C-kernel passes (``xgen-fuse-inverted-residuals``, ``xgen-pointwise-kernels``) end the
same way: a wrapper function that flattens the operands, calls the kernel's declaration
(which carries its ``stream.executable``: ``codegen/dispatch.py``) and reshapes the result; a
call of that wrapper where the last replaced op was; the replaced ops erased.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .._mlir import func, ir
from ..analysis.flops import FLOPS_ATTR, op_flops
from ..codegen import dispatch
from ..codegen.dispatch import EXECUTABLE_ATTR
from ..codegen.toolchain import Toolchain, compile_object
from ..dtypes import element_type
from ..irutil import constant_op, find_func, splice_functions
from .generic_util import erase_dead_tree, transpose


def free_symbol(module_op: ir.Operation, prefix: str, n: int) -> str:
    """``<prefix>_<n>``, or the first free one after it."""
    while True:
        name = f"{prefix}_{n}"
        try:
            find_func(module_op, name)
        except KeyError:
            return name
        n += 1


def element_of(x: ir.Value | ir.Type | np.ndarray) -> str:
    """The MLIR element type of a kernel operand (a value or an array that becomes a
    constant) or of its result type."""
    if isinstance(x, np.ndarray):
        name = element_type(x.dtype)
        if name is None:
            raise TypeError(f"no MLIR element type for numpy dtype {x.dtype}")
        return name
    ty = x.type if isinstance(x, ir.Value) else x
    return str(ir.RankedTensorType(ty).element_type)


def _shape(ty: ir.Type) -> list[int]:
    return list(ir.RankedTensorType(ty).shape)


def _t(shape: Sequence[int], elem: str = "f32") -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + f"{elem}>"


def wrapper_text(
    symbol: str,
    inputs: Sequence[list[int]],
    result: list[int],
    elements: Sequence[str] | None = None,
    scratch: int = 0,
) -> str:
    """``@<symbol>_call(inputs...)``: flattens each input, calls ``@<symbol>`` on the flat
    buffers, reshapes its flat result to ``result``; and the kernel's declaration.
    ``elements``: the element types of the inputs and then the result (f32 by default).
    ``scratch``: elements the kernel may use past its result's (its flat result is longer
    by that much; the call's result is the first part)."""
    elements = elements or ["f32"] * (len(inputs) + 1)
    *elems, out = elements
    flat = [_t([int(np.prod(s))], e) for s, e in zip(inputs, elems, strict=True)]
    params, lines, names = [], [], []
    for i, (shape, ft, e) in enumerate(zip(inputs, flat, elems, strict=True)):
        params.append(f"%a{i}: {_t(shape, e)}")
        if not shape:  # a 0-d tensor (a scalar computed at run time)
            lines.append(
                f"  %f{i} = tensor.expand_shape %a{i} [] output_shape [1] : {_t([], e)} into {ft}"
            )
            names.append(f"%f{i}")
            continue
        if len(shape) == 1:
            names.append(f"%a{i}")
            continue
        dims = ", ".join(str(d) for d in range(len(shape)))
        lines.append(f"  %f{i} = tensor.collapse_shape %a{i} [[{dims}]] : {_t(shape, e)} into {ft}")
        names.append(f"%f{i}")
    n = int(np.prod(result))
    kout = _t([n], out)
    kfull = _t([n + scratch], out)
    full = _t(result, out)
    dims = ", ".join(str(d) for d in range(len(result)))
    sizes = ", ".join(map(str, result))
    body = "\n".join(lines)
    head = (
        f"  %s = func.call @{symbol}({', '.join(names)}) : ({', '.join(flat)}) -> {kfull}\n"
        f"  %o = tensor.extract_slice %s[0] [{n}] [1] : {kfull} to {kout}"
        if scratch
        else f"  %o = func.call @{symbol}({', '.join(names)}) : ({', '.join(flat)}) -> {kout}"
    )
    return f"""
func.func private @{symbol}_call({", ".join(params)}) -> {full} {{
{body}
{head}
  %r = tensor.expand_shape %o [[{dims}]] output_shape [{sizes}] : {kout} into {full}
  return %r : {full}
}}
func.func private @{symbol}({", ".join(flat)}) -> {kfull}
"""


def shared_object(
    module_op: ir.Operation,
    made: dict[Any, tuple[str, str]],
    key: Any,
    prefix: str,
    source: Callable[[str], str],
    toolchain: Toolchain,
) -> tuple[str, str, bool]:
    """``(symbol, object, new)`` of the kernel ``made`` holds for ``key`` (the operand types
    and the source's parameters: one kernel serves every call with that key), else of a new
    one, ``source(symbol)`` compiled, recorded in ``made``."""
    if key in made:
        return (*made[key], False)
    symbol = free_symbol(module_op, prefix, 0)
    made[key] = (symbol, str(compile_object(source(symbol), toolchain, symbol)))
    return (*made[key], True)


def _installed(module_op: ir.Operation, symbol: str) -> bool:
    try:
        find_func(module_op, f"{symbol}_call")
    except KeyError:
        return False
    return True


def install_kernel(
    module_op: ir.Operation,
    symbol: str,
    obj: str,
    object_format: str,
    inputs: Sequence[ir.Value | np.ndarray],
    result_type: ir.Type,
    grid: tuple[int, int, int],
    replaced: Sequence[ir.Operation],
    end: ir.Operation,
    perm: list[int] | None = None,
    weights_name: str = "xgen_kernel_weights",
    ids: int = 1,
    executable: str | None = None,
    scratch: int = 0,
    shared: bool = False,
) -> ir.Operation:
    """Replace ``end``'s result by a call of the kernel in object ``obj`` (taking ``ids``
    workgroup ids: x, then y, z) on ``inputs`` (numpy arrays become constants), transposed
    by ``perm`` where ``end`` wrote another layout than the kernel; erase what is then dead.
    The declaration carries the FLOPs of the ``replaced`` ops, for the report's count.
    ``scratch``: elements past the result the kernel may write (``wrapper_text``).
    ``executable``: the kernel's executable text when it is not a C object (an offload's
    import call, ``dispatch.import_executable_text``). ``shared``: ``symbol`` may already be
    installed (by a call of the same kernel on operands of the same types), and is then
    called again. Returns the call."""
    shapes = [[a.size] if isinstance(a, np.ndarray) else _shape(a.type) for a in inputs]
    result = _shape(result_type)
    elements = [element_of(a) for a in [*inputs, result_type]]
    if not (shared and _installed(module_op, symbol)):
        splice_functions(module_op, wrapper_text(symbol, shapes, result, elements, scratch))
        text = executable or dispatch.executable_text(
            symbol,
            obj,
            object_format,
            [int(np.prod(s)) for s in shapes],
            int(np.prod(result)) + scratch,
            grid,
            ids=ids,
            elements=elements,
        )
        decl = find_func(module_op, symbol)
        decl.attributes[EXECUTABLE_ATTR] = ir.StringAttr.get(text)
        flops = sum(op_flops(op) for op in replaced)
        decl.attributes[FLOPS_ATTR] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), flops)
    with ir.InsertionPoint(end), end.location:
        args = [
            constant_op(a, weights_name).result if isinstance(a, np.ndarray) else a for a in inputs
        ]
        call = func.CallOp([result_type], ir.FlatSymbolRefAttr.get(f"{symbol}_call"), args)
        value = call.results[0]
        if perm is not None and perm != sorted(perm):
            value = transpose(value, perm)
    end.results[0].replace_all_uses_with(value)
    old = list(end.operands)
    end.erase()
    erase_dead_tree(old)
    return call.operation
