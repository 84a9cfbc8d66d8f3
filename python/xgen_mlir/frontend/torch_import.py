"""PyTorch -> linalg-on-tensors through torch.export and torch-mlir's FX importer.

Accepts an ``nn.Module`` with example inputs, an ``ExportedProgram``, or a saved ``.pt2``.
Hugging Face models keep some buffers non-persistent, which the importer cannot map
("Could not find state mapping for buffer"); they are made persistent before export.

A ``.pt2`` file is untrusted. ``torch.export.load`` runs code from it in three ways: pickled
members (sample inputs, some weights and constants) fall back to ``torch.load(weights_only=
False)`` when the safe loader refuses them, and opaque constants go to ``pickle.loads``; shape
expressions in the program's JSON go to ``sympy.sympify``, which evaluates Python; and
AOTInductor members are shared libraries it loads. So, unless the caller trusts the file
(``trust_pickle=True``), the archive is read into memory once and checked first (every member
torch may unpickle must load with ``torch.load(weights_only=True)``, every shape expression
must be plain sympy, no AOTInductor member), and then loaded from those same bytes.
"""

from __future__ import annotations

import ast
import inspect
import io
import json
import math
import os
import warnings
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from .._mlir import ir
from ..errors import FrontendError
from .lowering import lower_torch_to_linalg


def _make_buffers_persistent(model: torch.nn.Module) -> None:
    for m in model.modules():
        m._non_persistent_buffers_set.clear()


def _first_lines(e: BaseException, n: int = 6) -> str:
    lines = [ln for ln in str(e).splitlines() if ln.strip()]
    return "\n".join(lines[:n]) + ("\n..." if len(lines) > n else "")


def export_program(
    model: torch.nn.Module, example_inputs: Sequence[Any], dynamic_shapes: Any = None
) -> torch.export.ExportedProgram:
    """torch.export the model (eval mode) with its example inputs; ``dynamic_shapes`` is
    ``torch.export.export``'s own argument (``{dim: torch.export.Dim(...)}`` per input)."""
    if not isinstance(example_inputs, (tuple, list)):
        example_inputs = (example_inputs,)
    model = model.eval()
    _make_buffers_persistent(model)
    shapes = _for_signature(model, example_inputs, dynamic_shapes)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            return torch.export.export(
                model, tuple(example_inputs), dynamic_shapes=shapes, strict=False
            )
    except Exception as e:  # torch.export raises many kinds; all mean "cannot trace"
        raise FrontendError(
            f"torch.export could not trace {type(model).__name__}: {type(e).__name__}: "
            f"{_first_lines(e)}"
        ) from None


def _for_signature(model: torch.nn.Module, inputs: Sequence[Any], dynamic_shapes: Any) -> Any:
    """``dynamic_shapes`` as torch.export wants it for ``model.forward``'s parameters. One
    case is adapted: a ``forward(*inputs)`` (the Hugging Face wrappers) takes its specs as
    one nested tuple, so a flat tuple with one spec per input (the form every other model
    takes) is nested for it."""
    if not isinstance(dynamic_shapes, (tuple, list)) or len(dynamic_shapes) != len(inputs):
        return dynamic_shapes
    try:
        params = list(inspect.signature(model.forward).parameters.values())
    except (TypeError, ValueError):
        return dynamic_shapes
    varargs = len(params) == 1 and params[0].kind is inspect.Parameter.VAR_POSITIONAL
    if varargs and not (len(inputs) == 1 and isinstance(dynamic_shapes[0], (tuple, list))):
        return (tuple(dynamic_shapes),)
    return dynamic_shapes


def dynamic_dim_bounds(
    prog: torch.export.ExportedProgram,
) -> dict[tuple[int, int], tuple[int | None, int | None]]:
    """{(input index, dim): (min, max)} for every dynamic dim of the program's user inputs,
    from its range constraints (``Dim(min=, max=)`` and what tracing proved). A bound is None
    where nothing is enforced: no upper bound, or a lower bound of 2 or less (torch.export
    assumes sizes 0 and 1 away and reports 2 as the default minimum, but the compiled module
    is correct for 1 too)."""
    from torch.export.graph_signature import InputKind

    placeholders = {n.name: n for n in prog.graph.nodes if n.op == "placeholder"}
    users = [s for s in prog.graph_signature.input_specs if s.kind == InputKind.USER_INPUT]
    bounds: dict[tuple[int, int], tuple[int | None, int | None]] = {}
    for i, spec in enumerate(users):
        node = placeholders.get(getattr(spec.arg, "name", ""))
        val = node.meta.get("val") if node is not None else None
        for d, size in enumerate(getattr(val, "shape", ())):
            if not isinstance(size, torch.SymInt):
                continue
            vr = prog.range_constraints.get(size.node.expr)
            lo = _finite(vr.lower) if vr is not None else None
            hi = _finite(vr.upper) if vr is not None else None
            bounds[(i, d)] = (lo if lo is not None and lo > 2 else None, hi)
    return bounds


def _finite(bound: Any) -> int | None:
    """A range bound as an int; None for torch's infinities (``int_oo``, sympy's ``oo``)."""
    from torch.utils._sympy.numbers import int_oo

    if bound in (int_oo, -int_oo) or not getattr(bound, "is_finite", False):
        return None
    return int(bound)


def load_pt2(
    path: str | os.PathLike[str], trust_pickle: bool = False
) -> torch.export.ExportedProgram:
    """Load a saved ``torch.export`` program; untrusted unless ``trust_pickle`` (module doc)."""
    path = Path(path)
    if not path.is_file():
        raise FrontendError(f"{path}: no such file (expected a torch.export .pt2 program)")
    source: str | io.BytesIO = str(path)
    if not trust_pickle:
        try:
            data = path.read_bytes()
        except OSError as e:
            raise FrontendError(f"{path}: cannot read the file ({e.strerror or e})") from None
        check_pt2_archive(data, str(path))
        source = io.BytesIO(data)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return torch.export.load(source)
    except Exception as e:
        raise FrontendError(
            f"{path}: not a loadable torch.export program: {type(e).__name__}: {_first_lines(e, 3)}"
        ) from None


_OPT_IN = (
    "load it only if you trust the file, with compile(..., trust_pickle=True) or "
    "xgen-compile --trust-pickle"
)


def check_pt2_archive(data: bytes, label: str) -> None:
    """Raise FrontendError unless ``torch.export.load`` can load the archive ``data`` without
    running code from it: see the module docstring for what is checked and why."""
    from torch.export.pt2_archive import constants as pt2

    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        members = {i.filename: archive.read(i) for i in archive.infolist() if not i.is_dir()}
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError, ValueError) as e:
        raise FrontendError(f"{label}: not a torch.export .pt2 archive ({e})") from None
    raw: set[str] = set()  # tensor payloads torch reads as bytes, never unpickles
    for name, content in members.items():
        if name.endswith(".json"):
            raw |= _check_json_member(content, _inner(name), label)
    tensor_prefixes = (pt2.WEIGHT_FILENAME_PREFIX, pt2.TENSOR_CONSTANT_FILENAME_PREFIX)
    text_members = (pt2.ARCHIVE_FORMAT_PATH, pt2.ARCHIVE_VERSION_PATH, "byteorder", "version")
    for name, content in members.items():
        inner = _inner(name)
        if inner.startswith(pt2.AOTINDUCTOR_DIR):
            raise FrontendError(
                f"{label}: refusing to load: member '{name}' is AOTInductor code (a shared "
                f"library torch.export.load would load and run); {_OPT_IN}"
            )
        if (
            name.endswith(".json")
            or not content
            or inner in text_members
            or inner.startswith((".data/", pt2.EXTRA_DIR))
            or (inner in raw and inner.rsplit("/", 1)[-1].startswith(tensor_prefixes))
        ):
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                torch.load(io.BytesIO(content), weights_only=True, map_location="cpu")
        except Exception as e:
            raise FrontendError(
                f"{label}: refusing to load: member '{name}' is a pickle of more than tensors "
                f"({_unpickling_reason(e)}); loading it would unpickle arbitrary objects, "
                f"which can run any code; {_OPT_IN}"
            ) from None


def _unpickling_reason(e: BaseException) -> str:
    """The line of torch's weights-only error that names the refused object."""
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    why = [ln for ln in lines[1:] if not ln.startswith(("Check the documentation", "Please"))]
    return (why or lines or [type(e).__name__])[0][:200]


def _inner(name: str) -> str:
    """A member's path inside the archive (torch's reader drops the archive's root folder)."""
    return name.split("/", 1)[1] if "/" in name else name


def _check_json_member(content: bytes, inner: str, label: str) -> set[str]:
    """Check every shape expression of a JSON member; returns the raw (not pickled) tensor
    payloads it lists, if it is a payload config."""
    try:
        doc = json.loads(content)
    except (ValueError, RecursionError) as e:
        raise FrontendError(f"{label}: member '{inner}' is not valid JSON ({e})"[:400]) from None
    stack: list[object] = [doc]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            expr = node.get("expr_str")
            if isinstance(expr, str) and not is_plain_sympy(expr):
                raise FrontendError(
                    f"{label}: refusing to load: member '{inner}' holds the shape expression "
                    f"{expr[:120]!r}, which is not plain sympy (torch.export.load evaluates "
                    f"these as Python); {_OPT_IN}"
                )
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    config = doc.get("config") if isinstance(doc, dict) else None
    if not isinstance(config, dict):
        return set()
    folder = inner.rsplit("/", 1)[0] + "/" if "/" in inner else ""
    return {
        folder + entry["path_name"]
        for entry in config.values()
        if isinstance(entry, dict)
        and isinstance(entry.get("path_name"), str)
        and entry.get("use_pickle") is False
    }


# Nodes of a plain arithmetic/comparison expression; calls and names are checked apart.
_PLAIN_NODES = (
    ast.Expression,
    ast.BinOp,
    ast.UnaryOp,
    ast.BoolOp,
    ast.Compare,
    ast.Load,
    ast.operator,
    ast.unaryop,
    ast.cmpop,
    ast.boolop,
    ast.keyword,
    ast.Constant,
)


def is_plain_sympy(text: str) -> bool:
    """Whether ``sympy.sympify(text)`` only builds sympy objects: numbers, names (symbols),
    operators, and calls of sympy expression classes (``Symbol('s0', integer=True)``,
    ``Max``, ``FloorDiv``...), strings only as a Symbol's name. No attributes, subscripts,
    lambdas, or other callables (``__import__``, ``exec``, ``lambdify``...)."""
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    names: set[int] = set()  # the Symbol-name string constants
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            if not isinstance(func, ast.Name) or not _is_sympy_class(func.id):
                return False
            for i, arg in enumerate(node.args):
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    if i or func.id not in ("Symbol", "Dummy"):
                        return False
                    names.add(id(arg))
            if any(
                kw.arg is None
                or not isinstance(kw.value, ast.Constant)
                or not isinstance(kw.value.value, (bool, int))
                for kw in node.keywords
            ):
                return False
        elif isinstance(node, ast.Name):
            if node.id.startswith("_"):
                return False
        elif isinstance(node, ast.Constant):
            if isinstance(node.value, str) and id(node) not in names:
                return False
            if not isinstance(node.value, (str, int, float, bool)):
                return False
        elif not isinstance(node, _PLAIN_NODES):
            return False
    return True


def _is_sympy_class(name: str) -> bool:
    import sympy  # type: ignore[import-untyped]
    from torch.utils._sympy import functions as torch_sympy

    if name.startswith("_"):
        return False
    obj = getattr(torch_sympy, name, None) or getattr(sympy, name, None)
    return isinstance(obj, type) and issubclass(obj, sympy.Basic)


def _literal_hooks() -> Any:
    """An ``FxImporterHooks`` whose ``resolve_literal`` builds weight literals from the
    tensors' bytes.

    torch-mlir's default path turns every weight into a Python list (``tensor.tolist()``)
    and back into a numpy array, most of the import time of a model with many weights. The
    hook makes the same ``torch.vtensor.literal``:
    a resource blob (a ``dense<>`` splat for one element), named as torch-mlir names it, of
    the same bytes, from one contiguous copy of the tensor (a copy, so that the module does
    not change when the model's weights do later). Each tensor object gets one attribute,
    shared by all its uses, as in torch-mlir's own tracker. Anything it does not handle
    (fake, meta, sparse or quantized tensors, tensor subclasses, dtypes numpy cannot hold)
    goes to torch-mlir's default path."""
    from torch_mlir.extras.fx_importer import (
        TORCH_DTYPE_TO_MLIR_TYPE,
        TORCH_DTYPE_TO_NPY_TYPE,
        FxImporterHooks,
    )

    class LiteralHooks(FxImporterHooks):  # type: ignore[misc]
        def __init__(self) -> None:
            # id(tensor) -> (tensor, attribute); the tensor is held so that its id stays its
            # own for the whole import (torch-mlir's tracker keys on id() the same way).
            self._attrs: dict[int, tuple[torch.Tensor, Any]] = {}

        def resolve_literal(self, gni: Any, literal: Any, info: Any) -> Any:
            if not _plain_tensor(literal):
                return None
            npy_dtype = TORCH_DTYPE_TO_NPY_TYPE.get(literal.dtype)
            if npy_dtype is None or literal.dtype not in TORCH_DTYPE_TO_MLIR_TYPE:
                return None
            cached = self._attrs.get(id(literal))
            if cached is not None:
                attr = cached[1]
            else:
                attr = _elements_attr(literal, npy_dtype)
                self._attrs[id(literal)] = (literal, attr)
            # gni._cc is the ContextCache torch-mlir's own literal converters are given.
            return ir.Operation.create(
                name="torch.vtensor.literal",
                results=[gni._cc.tensor_to_vtensor_type(literal)],
                attributes={"value": attr},
            ).result

    def _elements_attr(tensor: torch.Tensor, npy_dtype: Any) -> Any:
        dense = tensor.detach().cpu().resolve_conj().resolve_neg()
        copy = dense.clone(memory_format=torch.contiguous_format)
        # Through uint8 bytes: numpy has no bf16/fp8, ml_dtypes' types are views of bytes.
        array = copy.reshape(-1).view(torch.uint8).numpy().view(npy_dtype)
        array = array.reshape(tuple(tensor.shape))
        element_type = TORCH_DTYPE_TO_MLIR_TYPE[tensor.dtype]()
        if array.size == 1:  # a splat, as torch-mlir makes it (blobs cannot be splats)
            return ir.DenseElementsAttr.get(type=element_type, array=array, shape=array.shape)
        shape = "_".join(str(d) for d in tensor.shape)
        return ir.DenseResourceElementsAttr.get_from_buffer(
            array,
            f"torch_tensor_{shape}_{tensor.dtype}",
            ir.RankedTensorType.get(list(tensor.shape), element_type),
        )

    return LiteralHooks()


def _plain_tensor(value: Any) -> bool:
    """A dense tensor with real data (a plain tensor or a Parameter, on a real device)."""
    return (
        type(value) in (torch.Tensor, torch.nn.Parameter)
        and value.layout == torch.strided
        and not value.is_quantized
        and not value.is_meta
    )


def _gelu_tanh_exact(x: torch.Tensor, approximate: str = "none") -> Any:
    """``aten.gelu`` with ``approximate="tanh"`` as the formula PyTorch computes, with
    sqrt(2/pi) in full: torch-mlir's own lowering writes 0.797724 for it (0.7978846), which
    moves the result by up to 4.4e-4 of its value. The erf form is left to torch-mlir."""
    if approximate != "tanh":
        return NotImplemented
    k = math.sqrt(2.0 / math.pi)
    return 0.5 * x * (1.0 + torch.tanh(k * (x + 0.044715 * x * x * x)))


def _decompositions() -> dict[Any, Any]:
    from torch_mlir.extras.fx_decomp_util import get_decomposition_table

    table = dict(get_decomposition_table())
    table[torch.ops.aten.gelu.default] = _gelu_tanh_exact
    return table


def import_exported(prog: torch.export.ExportedProgram, entry: str = "main") -> ir.Module:
    """ExportedProgram -> linalg-on-tensors module in a fresh torch-mlir context."""
    from torch_mlir.extras.fx_importer import FxImporter

    from .._mlir import torch_dialect as torch_d

    ctx = ir.Context()
    torch_d.register_dialect(ctx)
    importer = FxImporter(context=ctx, hooks=_literal_hooks())
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            prog = prog.run_decompositions(_decompositions())
            importer.import_frozen_program(prog, func_name=entry)
    except Exception as e:
        raise FrontendError(
            f"torch-mlir's FX importer failed: {type(e).__name__}: {_first_lines(e)}"
        ) from None
    return lower_torch_to_linalg(importer.module)


def import_torch(
    model: torch.nn.Module | torch.export.ExportedProgram | str | os.PathLike[str],
    example_inputs: Sequence[Any] | None = None,
    entry: str = "main",
    trust_pickle: bool = False,
) -> ir.Module:
    if isinstance(model, (str, os.PathLike)):
        return import_exported(load_pt2(model, trust_pickle), entry)
    if isinstance(model, torch.export.ExportedProgram):
        return import_exported(model, entry)
    if example_inputs is None:
        raise FrontendError(
            f"compiling a {type(model).__name__} needs example_inputs (a tensor or a tuple)"
        )
    return import_exported(export_program(model, example_inputs), entry)
