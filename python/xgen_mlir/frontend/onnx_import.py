"""ONNX -> linalg-on-tensors through torch-mlir's ONNX importer.

Why each step exists:
- torch-mlir lowers BatchNormalization only from opset 15 and Unsqueeze/Slice from opset 13,
  so older models are upgraded to opset 17 first (newer ones are left alone).
- ONNX Runtime's quantized ``com.microsoft`` ops (QGemm, QLinearAdd, DynamicQuantizeMatMul,
  ...) are rewritten into standard ops first (``onnx_quant``); torch-mlir has none of them.
- The importer types every value from ONNX shape inference; a value it cannot type becomes
  ``!torch.none`` and breaks its users, so shape inference (with data propagation) runs first.
- Every node gets a unique name: it becomes the MLIR location of all ops lowered from it, which
  is how unsupported ops are reported by ONNX op type and node.
- torch-mlir's passes stop (and roll back) at the first op they cannot lower. To report every
  such op at once, each op a stage fails on is swapped for an inert ``torch.operator`` and the
  stage is retried; whatever is not linalg at the end goes into one ``UnsupportedOpsError``.
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import shape_inference, version_converter

from .._mlir import ir, passmanager
from ..errors import FrontendError, UnsupportedOp, UnsupportedOpsError
from .onnx_quant import rewrite_quantized_contrib_ops
from .onnx_resize import rewrite_nearest_resizes
from .onnx_rnn import rewrite_recurrent_ops

TARGET_OPSET = 17
STAGES = (  # (name, pipeline); the first is cheap, so retrying it per failing op is cheap too
    ("ONNX -> torch", "builtin.module(func.func(convert-torch-onnx-to-torch))"),
    ("torch shape refinement", "builtin.module(torch-onnx-to-torch-backend-pipeline)"),
    ("torch backend contract", "builtin.module(torch-lower-to-backend-contract)"),
    ("torch -> linalg", "builtin.module(torch-backend-to-linalg-on-tensors-backend-pipeline)"),
)
_DEFAULT_DOMAINS = ("", "ai.onnx")
_UNSUPPORTED, _BLOCKED = "xgen.unsupported.", "xgen.blocked."
# Torch ops that only carry constants/lists; they vanish once their users are lowered.
_GLUE = (
    "torch.constant.",
    "torch.prim.ListConstruct",
    "torch.prim.TupleConstruct",
    "torch.vtensor.literal",
    "torch.derefine",
)
_MAX_RETRIES = 64  # per stage; ops still failing after that are reported by the final walk
Diag = tuple[ir.Location | None, str]


@dataclass(frozen=True)
class TensorSpec:
    """One graph input/output; unknown (symbolic) dims are None."""

    name: str
    shape: tuple[int | None, ...]
    dtype: np.dtype


@dataclass(frozen=True)
class OnnxSignature:
    """The entry's inputs (initializer-backed graph inputs excluded, as the importer does)."""

    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
    graph_name: str = ""
    opset: int = 0  # default-domain opset after the upgrade

    @property
    def input_names(self) -> list[str]:
        return [t.name for t in self.inputs]

    @property
    def output_names(self) -> list[str]:
        return [t.name for t in self.outputs]


def import_onnx(
    model: str | os.PathLike[str] | onnx.ModelProto,
    *,
    entry_name: str = "main",
    context: ir.Context | None = None,
    dynamic_dims: dict[int, dict[int, str]] | None = None,
    input_shapes: Sequence[Sequence[int]] | None = None,
) -> tuple[ir.Module, OnnxSignature]:
    """Import an ONNX model as a linalg-on-tensors module with public entry ``entry_name``.

    The graph's symbolic dims (``dim_param``, or no value) stay dynamic (``?``) in the
    module, unless ``input_shapes`` (one shape per graph input, initializers excluded: the
    example inputs' shapes) gives them sizes: then the module is static, as a torch export
    from examples is, and every shape the graph computes from them folds. ``dynamic_dims``
    ({input index: {dim: name}}) makes more dims symbolic first (``onnx_dynamic_dims``).

    Raises FrontendError for missing/unreadable/invalid models and UnsupportedOpsError listing
    every op (ONNX op type, node name) that torch-mlir cannot convert or lower.
    """
    from torch_mlir.extras import onnx_importer

    from .._mlir import torch_dialect as torch_d

    proto, label = _load(model)
    proto = _prepare(proto, label)
    rewrite_quantized_contrib_ops(proto)  # ONNX Runtime's com.microsoft quantized ops
    if dynamic_dims:
        _make_symbolic(proto, dynamic_dims, label)
    if input_shapes is not None:
        _make_static(proto, input_shapes, label)
    nodes: dict[str, str] = {}  # node name -> "domain.OpType"
    _name_nodes(proto.graph, nodes)
    try:
        proto = shape_inference.infer_shapes(proto, data_prop=True)
    except Exception as e:  # >2 GB or inconsistent: import with the declared types only
        warnings.warn(
            f"{label}: ONNX shape inference failed ({e}); importing without it", stacklevel=2
        )
    else:  # the rewrites need the sequence lengths and sizes shape inference found
        proto = _shaped_rewrites(proto, nodes, label)
    ctx = context or ir.Context()
    torch_d.register_dialect(ctx)
    handler = ctx.attach_diagnostic_handler(lambda d: True)  # keep warnings off stderr
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "node without a valid type proto": reported later
            info = onnx_importer.ModelInfo(proto)
            module = info.create_module(context=ctx)
            onnx_importer.NodeImporter.define_function(
                info.main_graph, module.operation
            ).import_all()
        _set_entry(module, proto.graph.name, entry_name)
        _lower(module, nodes, label)
        module.operation.verify()
    except FrontendError:
        raise
    except Exception as e:  # OnnxImportError, unsupported element types, MLIRError, ...
        raise FrontendError(
            f"{label}: torch-mlir's ONNX importer failed: {type(e).__name__}: {_short(str(e))}"
        ) from None
    finally:
        handler.detach()
    try:
        return module, _signature(proto)
    except Exception as e:  # an element type numpy has no dtype for, ...
        raise FrontendError(
            f"{label}: cannot read the graph's inputs and outputs: {type(e).__name__}: "
            f"{_short(str(e))}"
        ) from None


def _load(model: str | os.PathLike[str] | onnx.ModelProto) -> tuple[onnx.ModelProto, str]:
    """Read and check the model; every failure names the file."""
    if isinstance(model, onnx.ModelProto):
        label, proto = f"ONNX model '{model.graph.name}'", model
    else:
        path = Path(model)
        label = str(path)
        if not path.exists():
            raise FrontendError(f"{label}: no such ONNX file")
        if not path.is_file():
            raise FrontendError(f"{label}: not a file (expected an .onnx model)")
        try:
            proto = onnx.load(label)
        except Exception as e:  # OSError: unreadable; DecodeError & co: not a protobuf
            what = "cannot read the file" if isinstance(e, OSError) else "not an ONNX protobuf"
            raise FrontendError(f"{label}: {what} ({type(e).__name__}: {_short(str(e))})") from None
    try:  # the path form also works past protobuf's 2 GB limit
        onnx.checker.check_model(model if isinstance(model, onnx.ModelProto) else label)
    except Exception as e:
        raise FrontendError(
            f"{label}: not a valid ONNX model (onnx.checker: {_short(str(e))})"
        ) from None
    return proto, label


def _prepare(proto: onnx.ModelProto, label: str) -> onnx.ModelProto:
    """A copy (the caller's proto is never touched), upgraded to TARGET_OPSET if older."""
    opset = _opset(proto)
    if 0 < opset < TARGET_OPSET:
        try:
            return version_converter.convert_version(proto, TARGET_OPSET)
        except Exception as e:
            warnings.warn(
                f"{label}: opset {opset} -> {TARGET_OPSET} upgrade failed ({e}); importing as is",
                stacklevel=3,
            )
    copy = onnx.ModelProto()
    copy.CopyFrom(proto)
    return copy


def _shaped_rewrites(proto: onnx.ModelProto, nodes: dict[str, str], label: str) -> onnx.ModelProto:
    """``proto`` with the rewrites that need the sizes shape inference found (LSTM / GRU
    unrolled, ``onnx_rnn``; nearest Resizes by integer factors as reshapes and a broadcast,
    ``onnx_resize``), shapes inferred again after each and the new nodes named in ``nodes``.
    A rewrite that fails leaves the graph as it was (torch-mlir's lowering computes the same,
    slower), with a warning."""
    rewrites: list[tuple[tuple[str, ...], Callable[[onnx.ModelProto], object], str]] = [
        (
            ("LSTM", "GRU", "DynamicQuantizeLSTM"),
            rewrite_recurrent_ops,
            "unrolling its recurrent layers failed ({e}); importing them as loops",
        ),
        (
            ("Resize",),
            rewrite_nearest_resizes,
            "rewriting its nearest Resizes failed ({e}); importing them as gathers",
        ),
    ]
    for op_types, rewrite, failed in rewrites:
        if not any(n.op_type in op_types for n in proto.graph.node):
            continue
        work = onnx.ModelProto()
        work.CopyFrom(proto)
        try:
            if not rewrite(work):
                continue
            work = shape_inference.infer_shapes(work, data_prop=True)
        except Exception as e:
            warnings.warn(f"{label}: " + failed.format(e=e), stacklevel=3)
            continue
        nodes.update({n.name: f"onnx.{n.op_type}" for n in work.graph.node if n.name not in nodes})
        proto = work
    return proto


def onnx_dynamic_dims(
    spec: object,
) -> tuple[dict[int, dict[int, str]], dict[tuple[int, int], tuple[int | None, int | None]]]:
    """``compile(dynamic_shapes=...)`` for an ONNX model: one entry per graph input (None, or
    {dim: torch.export.Dim, a name, or None}), as for an nn.Module. Returns {input: {dim:
    symbol name}} and the bounds {(input, dim): (min, max)} of the dims given as a ``Dim``."""
    if not isinstance(spec, (tuple, list)):
        raise FrontendError(
            "dynamic_shapes for an ONNX model: a tuple with one entry per graph input, each "
            "None or {dim: torch.export.Dim(...) | name}"
        )
    dims: dict[int, dict[int, str]] = {}
    bounds: dict[tuple[int, int], tuple[int | None, int | None]] = {}
    for i, entry in enumerate(spec):
        if entry is None:
            continue
        if not isinstance(entry, dict):
            raise FrontendError(
                f"dynamic_shapes[{i}]: expected None or {{dim: Dim}}, got {entry!r}"
            )
        for d, dim in entry.items():
            name = getattr(dim, "__name__", None) or (dim if isinstance(dim, str) else None)
            dims.setdefault(i, {})[int(d)] = name or f"input{i}_dim{d}"
            lo, hi = getattr(dim, "min", None), getattr(dim, "max", None)
            lo = int(lo) if isinstance(lo, int) and lo > 0 else None
            hi = int(hi) if isinstance(hi, int) and hi < 2**62 else None
            if lo is not None or hi is not None:
                bounds[(i, int(d))] = (lo, hi)
    return dims, bounds


def _make_symbolic(proto: onnx.ModelProto, dims: dict[int, dict[int, str]], label: str) -> None:
    """Give the named dims of the graph's inputs a ``dim_param`` (dynamic)."""
    g = proto.graph
    inputs = _graph_inputs(g)
    for i, by_dim in dims.items():
        if not 0 <= i < len(inputs):
            raise FrontendError(f"{label}: dynamic_shapes names input {i}; it has {len(inputs)}")
        shape = inputs[i].type.tensor_type.shape
        for d, name in by_dim.items():
            if not 0 <= d < len(shape.dim):
                raise FrontendError(
                    f"{label}: dynamic_shapes names dim {d} of input {i} "
                    f"('{inputs[i].name}'), which has {len(shape.dim)} dims"
                )
            shape.dim[d].Clear()
            shape.dim[d].dim_param = name
    # Shapes recorded for the old static sizes would contradict the new dims: shape
    # inference (next) gives them again.
    del g.value_info[:]
    for out in g.output:
        if out.type.HasField("tensor_type"):
            out.type.tensor_type.ClearField("shape")


def _make_static(proto: onnx.ModelProto, shapes: Sequence[Sequence[int]], label: str) -> None:
    """Give the graph inputs' symbolic dims the sizes of ``shapes``; a static dim that
    disagrees, or a wrong number of shapes, is an error naming the input and dim."""
    g = proto.graph
    inputs = _graph_inputs(g)
    if len(shapes) != len(inputs):
        names = ", ".join(f"'{v.name}'" for v in inputs)
        raise FrontendError(
            f"{label}: {len(shapes)} example input(s) for a graph with {len(inputs)} "
            f"input(s) ({names})"
        )
    changed = False
    for v, shape in zip(inputs, shapes, strict=True):
        if not v.type.HasField("tensor_type"):
            continue
        dims = v.type.tensor_type.shape.dim
        if len(dims) != len(shape):
            raise FrontendError(
                f"{label}: input '{v.name}' has {len(dims)} dims; its example has shape "
                f"{tuple(shape)}"
            )
        for d, (dim, size) in enumerate(zip(dims, shape, strict=True)):
            if dim.HasField("dim_value") and dim.dim_value > 0:  # -1: dynamic (Paddle's export)
                if dim.dim_value != size:
                    raise FrontendError(
                        f"{label}: input '{v.name}' dim {d} is {dim.dim_value} in the model; "
                        f"its example has {size}"
                    )
                continue
            dim.Clear()
            dim.dim_value = int(size)
            changed = True
    if changed:  # symbolic shapes recorded inside: shape inference gives them again
        del g.value_info[:]
        for out in g.output:
            if out.type.HasField("tensor_type"):
                out.type.tensor_type.ClearField("shape")


def _opset(proto: onnx.ModelProto) -> int:
    return next((o.version for o in proto.opset_import if o.domain in _DEFAULT_DOMAINS), 0)


def _name_nodes(graph: onnx.GraphProto, nodes: dict[str, str]) -> None:
    """Give every node (subgraphs too) a unique name and record its op type."""
    for node in graph.node:
        name = node.name or f"{node.op_type}_{len(nodes)}"
        while name in nodes:
            name = f"{name}_{len(nodes)}"
        node.name = name
        default = node.domain in _DEFAULT_DOMAINS
        nodes[name] = f"{'onnx' if default else node.domain}.{node.op_type}"
        if default and node.op_type == "Unique":  # torch-mlir segfaults on < 4 outputs
            node.output.extend(f"{name}__unused{i}" for i in range(len(node.output), 4))
        for attr in node.attribute:
            for sub in ([attr.g] if attr.HasField("g") else []) + list(attr.graphs):
                _name_nodes(sub, nodes)


def _set_entry(module: ir.Module, graph_name: str, entry_name: str) -> None:
    """The importer names the func after the graph (spaces, dots...): rename it, make it public."""
    for op in module.body.operations:
        attrs = op.operation.attributes
        if "sym_name" in attrs and ir.StringAttr(attrs["sym_name"]).value == graph_name:
            attrs["sym_name"] = ir.StringAttr.get(entry_name, module.context)
            if "sym_visibility" in attrs:
                del attrs["sym_visibility"]
            return
    raise FrontendError(f"torch-mlir's ONNX importer produced no function '{graph_name}'")


def _graph_inputs(g: onnx.GraphProto) -> list[onnx.ValueInfoProto]:
    """The graph's inputs without the initializer-backed ones (as the importer counts them)."""
    inits = {t.name for t in g.initializer}
    return [v for v in g.input if v.name not in inits]


def onnx_inputs(path: str | os.PathLike[str]) -> tuple[TensorSpec, ...]:
    """The inputs of an ONNX file as the entry takes them (name, shape with None for a
    symbolic dim, dtype), read without its weights."""
    try:
        graph = onnx.load(str(path), load_external_data=False).graph
    except Exception as e:
        raise FrontendError(f"{path}: cannot read it as an ONNX model: {_short(str(e))}") from None
    return tuple(_spec(v) for v in _graph_inputs(graph))


def _signature(proto: onnx.ModelProto) -> OnnxSignature:
    g = proto.graph
    ins = tuple(_spec(v) for v in _graph_inputs(g))
    return OnnxSignature(ins, tuple(_spec(v) for v in g.output), g.name, _opset(proto))


def _spec(v: onnx.ValueInfoProto) -> TensorSpec:
    if not v.type.HasField("tensor_type"):  # sequences/maps/optionals: no numpy equivalent
        return TensorSpec(v.name, (), np.dtype(object))
    tt = v.type.tensor_type
    shape = tuple(d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim)
    return TensorSpec(v.name, shape, np.dtype(onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type)))


def _lower(module: ir.Module, nodes: dict[str, str], label: str) -> None:
    """Run STAGES, quarantining each op a stage fails on; then report everything non-linalg."""
    # Custom domains: the importer drops the domain ("onnx.Foo"), so a same-named standard op's
    # conversion could take them over with the wrong semantics. Never convert them.
    custom = {n for n, kind in nodes.items() if not kind.startswith("onnx.")}
    for op in _ops(module):
        if op.name == "torch.operator" and _node(op.location) in custom:
            _quarantine(op, _UNSUPPORTED)
    unexplained: list[str] = []
    for stage, pipeline in STAGES:
        if not _run_stage(module, stage, pipeline, unexplained):
            break
    found, blocked = _leftovers(module, nodes)
    if found:
        note = f" ({len(blocked)} op(s) fed by them not checked)" if blocked else ""
        raise UnsupportedOpsError(found, stage=f"import of {label}{note}")
    if blocked:  # set-aside ops only, no root cause found: list them rather than nothing
        raise UnsupportedOpsError(blocked, stage=f"import of {label}")
    if unexplained:
        raise FrontendError(f"{label}: torch-mlir failed:\n  " + "\n  ".join(unexplained))


def _run_stage(module: ir.Module, stage: str, pipeline: str, unexplained: list[str]) -> bool:
    """Run one stage, retrying after quarantining its culprits; False: stop lowering here."""
    for _ in range(_MAX_RETRIES):
        _block_untyped(module)
        diags, work = _run(module, pipeline)
        # Culprits are looked up in the IR as it was before the stage. A failure no op can be
        # blamed for (e.g. the final contract check) keeps the stage's output for the walk.
        culprits = _culprits(module, diags) if diags else []
        if culprits:
            work.erase()
            for op, blocked in culprits:
                _quarantine(op, _BLOCKED if blocked else _UNSUPPORTED)
            continue
        unexplained += [f"{stage}: {_node(loc) or loc}: {_short(m)}" for loc, m in diags[:5]]
        if diags and _broken(work):  # a pass left invalid IR: keep the last valid one
            work.erase()
            return False
        _adopt(module, work)
        if not diags and stage == STAGES[0][0]:  # ONNX ops with no conversion at all
            for op in _ops(module):
                if op.name == "torch.operator" and _opname(op).startswith("onnx."):
                    _quarantine(op, _UNSUPPORTED)
        return True
    return True


def _broken(op: ir.Operation) -> bool:
    try:
        op.verify()
        return False
    except ir.MLIRError:
        return True


def _run(module: ir.Module, pipeline: str) -> tuple[list[Diag], ir.Operation]:
    """Run a pipeline on a copy of the module: (error diagnostics, [] on success; the copy)."""
    work = module.operation.clone()
    try:
        passmanager.PassManager.parse(pipeline, module.context).run(work)
        return [], work
    except ir.MLIRError as e:
        return [(d.location, d.message) for d in e.error_diagnostics] or [(None, str(e))], work


def _adopt(module: ir.Module, work: ir.Operation) -> None:
    """Make ``module`` hold the body of ``work`` (a pipeline's result); drop ``work``."""
    for op in list(module.body.operations):
        op.erase()
    for op in list(work.regions[0].blocks[0].operations):
        module.body.append(op)
    work.erase()


def _culprits(module: ir.Module, diags: list[Diag]) -> list[tuple[ir.Operation, bool]]:
    """(op, blocked) for the torch ops of the nodes the error diagnostics point at.

    An op fed (transitively) by a quarantined op is "blocked": it may fail only because its
    input is opaque now, so it is set aside without being blamed.
    """
    ops = _ops(module)
    tainted: set[ir.Operation] = set()
    out: list[tuple[ir.Operation, bool]] = []
    for op in ops:
        if _quarantined(op) or any(_owner(v) in tainted for v in op.operands):
            tainted.add(op)
    for loc, msg in diags:
        node, quoted = _node(loc), re.search(r"operation '([\w.]+)'", msg)
        for op in ops if node else []:
            if (
                _node(op.location) == node
                and _is_compute(op)
                and not _quarantined(op)
                and not (quoted and quoted.group(1) != op.name)
                and all(op != o for o, _ in out)
            ):
                out.append((op, op in tainted))
    return out


def _block_untyped(module: ir.Module) -> None:
    """Quarantine ONNX ops fed an untyped (!torch.none) value by another torch.operator.

    Such a value comes from an op ONNX shape inference could not type (a custom op, mostly);
    its users would fail one per retry only because of that: set them all aside up front.
    """
    for op in _ops(module):
        if (
            op.name == "torch.operator"
            and _opname(op).startswith("onnx.")
            and any(
                str(v.type) == "!torch.none" and getattr(_owner(v), "name", "") == "torch.operator"
                for v in op.operands
            )
        ):
            _quarantine(op, _BLOCKED)


def _leftovers(module: ir.Module, nodes: dict[str, str]) -> tuple[list, list]:
    """(unsupported, blocked): every op not in linalg form, once per (ONNX op type, node)."""
    seen: dict[tuple[bool, str, str], UnsupportedOp] = {}
    for op in filter(_is_compute, _ops(module)):
        mlir_name = _opname(op) if op.name == "torch.operator" else op.name
        blocked = mlir_name.startswith(_BLOCKED)
        mlir_name = mlir_name.removeprefix(_BLOCKED).removeprefix(_UNSUPPORTED)
        node = _node(op.location)
        name = nodes.get(node or "", mlir_name)
        loc = f"node '{node}'" if node else str(op.location)
        if node and mlir_name.removeprefix("onnx.") != name.rsplit(".", 1)[-1]:
            loc += f" ({mlir_name})"
        if any(str(r.type) == "!torch.none" for r in op.results):
            loc += " [output type unknown to ONNX shape inference]"
        seen.setdefault((blocked, name, node or loc), UnsupportedOp(name, loc))
    return [o for k, o in seen.items() if not k[0]], [o for k, o in seen.items() if k[0]]


def _quarantine(op: ir.Operation, prefix: str) -> None:
    """Swap ``op`` for an inert ``torch.operator "<prefix><name>"`` that no pass converts."""
    if op.name == "torch.operator":
        op.attributes["name"] = ir.StringAttr.get(prefix + _opname(op), op.context)
        return
    with ir.InsertionPoint(op), op.location:
        new = ir.Operation.create(
            "torch.operator",
            results=[r.type for r in op.results],
            operands=list(op.operands),
            attributes={"name": ir.StringAttr.get(prefix + op.name)},
        )
    for old, rep in zip(op.results, new.results, strict=True):
        old.replace_all_uses_with(rep)
    op.erase()


def _ops(module: ir.Module) -> list[ir.Operation]:
    ops: list[ir.Operation] = []  # .operation: an OpView's .name may be an attribute accessor

    def visit(op: ir.Operation) -> ir.WalkResult:
        ops.append(op.operation)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return ops


def _owner(v: ir.Value) -> ir.Operation | None:
    return None if isinstance(v.owner, ir.Block) else v.owner.operation


def _opname(op: ir.Operation) -> str:
    return ir.StringAttr(op.attributes["name"]).value


def _quarantined(op: ir.Operation) -> bool:
    return op.name == "torch.operator" and _opname(op).startswith("xgen.")


def _is_compute(op: ir.Operation) -> bool:
    return op.name.startswith("torch.") and not op.name.startswith(_GLUE)


def _node(loc: ir.Location | None) -> str | None:
    """The ONNX node name a location carries (the importer uses NameLocs, passes fuse them)."""
    # diagnostics hand out the base class: downcast
    if loc is not None and type(loc) is ir.Location:
        loc = ir.Location.from_attr(loc.attr, loc.context)
    if isinstance(loc, ir.NameLoc):
        return loc.name_str
    if isinstance(loc, ir.FusedLoc):
        return next((n for n in map(_node, loc.locations) if n), None)
    if isinstance(loc, ir.CallSiteLoc):
        return _node(loc.callee)
    return None


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + " ..."
