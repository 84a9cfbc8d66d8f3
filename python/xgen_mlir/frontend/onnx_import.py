"""ONNX -> linalg-on-tensors through torch-mlir's ONNX importer.

Why each step exists:
- torch-mlir lowers BatchNormalization only from opset 15 and Unsqueeze/Slice from opset 13,
  so older models are upgraded to opset 17 first (newer ones are left alone).
- The importer types every value from ONNX shape inference; a value it cannot type becomes
  ``!torch.none`` and poisons its users, so shape inference (with data propagation) runs first.
- Every node gets a unique name: it becomes the MLIR location of everything lowered from it,
  which is how unsupported ops are reported by node.
- torch-mlir's passes stop at the first op they cannot lower (and roll back). To report every
  such op at once, each failing op is swapped for an inert ``torch.operator`` and the stage is
  retried; whatever is not linalg at the end is listed in one ``UnsupportedOpsError``.
"""

from __future__ import annotations

import os
import re
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import shape_inference, version_converter

from .._mlir import ir, passmanager
from ..errors import FrontendError, UnsupportedOp, UnsupportedOpsError

TARGET_OPSET = 17
STAGES = (
    ("ONNX -> torch", "builtin.module(torch-onnx-to-torch-backend-pipeline)"),
    ("torch backend contract", "builtin.module(torch-lower-to-backend-contract)"),
    ("torch -> linalg", "builtin.module(torch-backend-to-linalg-on-tensors-backend-pipeline)"),
)
_DEFAULT_DOMAINS = ("", "ai.onnx")
_UNSUPPORTED, _BLOCKED = "xgen.unsupported.", "xgen.blocked."
_GLUE = ("torch.constant.", "torch.prim.ListConstruct", "torch.prim.TupleConstruct",
         "torch.vtensor.literal", "torch.derefine")
_MAX_RETRIES = 64


@dataclass(frozen=True)
class TensorSpec:
    """One graph input/output; unknown dims are None."""

    name: str
    shape: tuple[int | None, ...]
    dtype: np.dtype


@dataclass(frozen=True)
class OnnxSignature:
    """The entry function's inputs (initializer-backed inputs excluded) and outputs."""

    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
    graph_name: str = ""
    opset: int = 0

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
) -> tuple[ir.Module, OnnxSignature]:
    """Import an ONNX model as a linalg-on-tensors module whose public entry is ``entry_name``.

    Raises FrontendError for unreadable/invalid models and UnsupportedOpsError listing every
    op (ONNX op type, node name) that torch-mlir cannot convert or lower.
    """
    from torch_mlir.dialects import torch as torch_d
    from torch_mlir.extras import onnx_importer

    proto, label = _load(model)
    proto = _prepare(proto, label)
    nodes: dict[str, str] = {}  # node name -> "domain.OpType"
    _name_nodes(proto.graph, nodes)
    try:
        proto = shape_inference.infer_shapes(proto, data_prop=True)
    except Exception as e:  # too big (>2GB) or inconsistent: import with the declared types
        warnings.warn(f"{label}: ONNX shape inference failed ({e}); importing without it",
                      stacklevel=2)
    ctx = context or ir.Context()
    torch_d.register_dialect(ctx)
    handler = ctx.attach_diagnostic_handler(lambda d: True)  # keep warnings off stderr
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "node without a valid type proto": reported below
            info = onnx_importer.ModelInfo(proto)
            module = info.create_module(context=ctx)
            imp = onnx_importer.NodeImporter.define_function(info.main_graph, module.operation)
            imp.import_all()
        func_op = imp._p  # the graph's func.func (no public accessor)
        func_op.attributes["sym_name"] = ir.StringAttr.get(entry_name, ctx)
        if "sym_visibility" in func_op.attributes:
            del func_op.attributes["sym_visibility"]
        _lower(module, nodes, label)
        module.operation.verify()
    except FrontendError:
        raise
    except Exception as e:  # OnnxImportError, unsupported element types, MLIRError, ...
        raise FrontendError(f"{label}: torch-mlir's ONNX importer failed: "
                            f"{type(e).__name__}: {_short(str(e))}") from None
    finally:
        handler.detach()
    return module, _signature(proto)


def _load(model: str | os.PathLike[str] | onnx.ModelProto) -> tuple[onnx.ModelProto, str]:
    """Read and check the model; every failure names the file."""
    if isinstance(model, onnx.ModelProto):
        label, proto = f"ONNX model '{model.graph.name}'", model
    else:
        path = Path(model)
        label = str(path)
        if not path.is_file():
            raise FrontendError(f"{label}: no such ONNX file")
        try:
            proto = onnx.load(str(path))
        except OSError as e:
            raise FrontendError(f"{label}: cannot read file: {e}") from None
        except Exception as e:  # protobuf DecodeError and friends
            raise FrontendError(f"{label}: not an ONNX protobuf ({type(e).__name__}: "
                                f"{_short(str(e))})") from None
    try:  # the path form also works for models over protobuf's 2 GB limit
        onnx.checker.check_model(proto if isinstance(model, onnx.ModelProto) else str(model))
    except Exception as e:
        raise FrontendError(f"{label}: not a valid ONNX model (onnx.checker: "
                            f"{_short(str(e))})") from None
    return proto, label


def _prepare(proto: onnx.ModelProto, label: str) -> onnx.ModelProto:
    """Copy (never mutate the caller's proto) and upgrade the default opset to TARGET_OPSET."""
    opset = _opset(proto)
    if 0 < opset < TARGET_OPSET:
        try:
            return version_converter.convert_version(proto, TARGET_OPSET)
        except Exception as e:
            warnings.warn(f"{label}: opset {opset} -> {TARGET_OPSET} upgrade failed ({e}); "
                          "importing as is", stacklevel=3)
    copy = onnx.ModelProto()
    copy.CopyFrom(proto)
    return copy


def _opset(proto: onnx.ModelProto) -> int:
    return next((o.version for o in proto.opset_import if o.domain in _DEFAULT_DOMAINS), 0)


def _name_nodes(graph: onnx.GraphProto, nodes: dict[str, str]) -> None:
    """Give every node (subgraphs too) a unique name and record its op type."""
    for node in graph.node:
        name = node.name or f"{node.op_type}_{len(nodes)}"
        while name in nodes:
            name = f"{name}_{len(nodes)}"
        node.name = name
        domain = "onnx" if node.domain in _DEFAULT_DOMAINS else node.domain
        nodes[name] = f"{domain}.{node.op_type}"
        if node.op_type == "Unique" and node.domain in _DEFAULT_DOMAINS:
            # torch-mlir's Unique conversion segfaults unless all 4 outputs exist.
            while len(node.output) < 4:
                node.output.append(f"{name}__unused_{len(node.output)}")
        for attr in node.attribute:
            for sub in ([attr.g] if attr.HasField("g") else []) + list(attr.graphs):
                _name_nodes(sub, nodes)


def _signature(proto: onnx.ModelProto) -> OnnxSignature:
    g = proto.graph
    inits = {t.name for t in g.initializer}
    return OnnxSignature(
        inputs=tuple(_spec(v) for v in g.input if v.name not in inits),
        outputs=tuple(_spec(v) for v in g.output),
        graph_name=g.name,
        opset=_opset(proto),
    )


def _spec(v: onnx.ValueInfoProto) -> TensorSpec:
    if not v.type.HasField("tensor_type"):
        return TensorSpec(v.name, (), np.dtype(object))
    tt = v.type.tensor_type
    shape = tuple(d.dim_value if d.HasField("dim_value") else None for d in tt.shape.dim)
    return TensorSpec(v.name, shape, np.dtype(onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type)))


def _lower(module: ir.Module, nodes: dict[str, str], label: str) -> None:
    """Run STAGES; quarantine each op a stage fails on, then report everything non-linalg."""
    for op in _ops(module):  # non-default domains: never let a same-named ONNX op convert them
        if op.name == "torch.operator" and nodes.get(_node(op.location) or "", "onnx.")[:5] != "onnx.":
            _quarantine(op, _UNSUPPORTED)
    unexplained: list[str] = []
    for stage, pipeline in STAGES:
        for _ in range(_MAX_RETRIES):
            diags, work = _run(module, pipeline)
            # Culprits are looked up in the IR as it was before the stage; a failure nobody
            # can be blamed for (e.g. the final contract check) keeps the stage's output.
            culprits = _culprits(module, diags) if diags else []
            if not culprits:
                _adopt(module, work)
            else:
                work.erase()
            if diags is None:
                break
            if not culprits:
                unexplained = [f"{stage}: {_node(d.location) or d.location}: {_short(d.message)}"
                               for d in diags[:8]]
                break
            for op, blocked in culprits:
                _quarantine(op, _BLOCKED if blocked else _UNSUPPORTED)
        if diags is None and stage == STAGES[0][0]:  # ONNX ops with no conversion at all
            for op in _ops(module):
                if op.name == "torch.operator" and _opname(op).startswith("onnx."):
                    _quarantine(op, _UNSUPPORTED)
    found, blocked = _leftovers(module, nodes)
    if found or blocked:
        raise UnsupportedOpsError(found or blocked, stage=f"import of {label}")
    if unexplained:
        raise FrontendError(f"{label}: torch-mlir could not lower the model:\n  "
                            + "\n  ".join(unexplained))


def _run(module: ir.Module, pipeline: str) -> tuple[list | None, ir.Operation]:
    """Run a pipeline on a copy of the module: (None or the error diagnostics, the copy)."""
    work = module.operation.clone()
    try:
        passmanager.PassManager.parse(pipeline, module.context).run(work)
        return None, work
    except ir.MLIRError as e:
        return list(e.error_diagnostics) or [_FakeDiag(str(e))], work


def _adopt(module: ir.Module, work: ir.Operation) -> None:
    """Make ``module`` hold the body of ``work`` (a pipeline's result) and drop ``work``."""
    for op in list(module.body.operations):
        op.erase()
    for op in list(work.regions[0].blocks[0].operations):
        module.body.append(op)
    work.erase()


@dataclass
class _FakeDiag:
    message: str
    location: str = "unknown location"


def _culprits(module: ir.Module, diags: list) -> list[tuple[ir.Operation, bool]]:
    """The not-yet-quarantined torch ops that the error diagnostics point at (by node)."""
    out: list[tuple[ir.Operation, bool]] = []
    for d in diags:
        node = _node(d.location) if isinstance(d.location, ir.Location) else None
        quoted = re.search(r"operation '([\w.]+)'", d.message)
        for op in _ops(module):
            name = op.name
            if (node is None or _node(op.location) != node or not _is_compute(name)
                    or (quoted and quoted.group(1) != name)
                    or (name == "torch.operator" and _opname(op).startswith("xgen."))
                    or any(op is o for o, _ in out)):
                continue
            # An op fed by an untyped (!torch.none) value of another op only fails because an
            # unsupported op upstream has no known output type: do not blame it.
            blocked = any(str(v.type) == "!torch.none" and not isinstance(v.owner, ir.Block)
                          and v.owner.operation.name == "torch.operator" for v in op.operands)
            out.append((op, blocked))
    return out


def _leftovers(module: ir.Module, nodes: dict[str, str]) -> tuple[list, list]:
    """Every op not in linalg-on-tensors form, one entry per (op kind, node)."""
    found: dict[tuple[str, str], UnsupportedOp] = {}
    blocked: dict[tuple[str, str], UnsupportedOp] = {}
    for op in _ops(module):
        if not _is_compute(op.name):
            continue
        mlir_name = _opname(op) if op.name == "torch.operator" else op.name
        target = blocked if mlir_name.startswith(_BLOCKED) else found
        mlir_name = mlir_name.removeprefix(_BLOCKED).removeprefix(_UNSUPPORTED)
        node = _node(op.location)
        name = nodes.get(node or "", mlir_name)
        loc = f"node '{node}'" if node else str(op.location)
        if node and mlir_name not in (name, "onnx." + name.rsplit(".", 1)[-1]):
            loc += f" ({mlir_name})"
        if any(str(r.type) == "!torch.none" for r in op.results):
            loc += " [output type unknown to ONNX shape inference]"
        target.setdefault((name, node or loc), UnsupportedOp(name, loc))
    return list(found.values()), list(blocked.values())


def _quarantine(op: ir.Operation, prefix: str) -> None:
    """Swap ``op`` for an inert ``torch.operator "<prefix><name>"`` no pass tries to convert."""
    if op.name == "torch.operator":
        op.attributes["name"] = ir.StringAttr.get(prefix + _opname(op), op.context)
        return
    with ir.InsertionPoint(op), op.location:
        new = ir.Operation.create(
            "torch.operator", results=[r.type for r in op.results], operands=list(op.operands),
            attributes={"name": ir.StringAttr.get(prefix + op.name)})
    for old, rep in zip(op.results, new.results, strict=True):
        old.replace_all_uses_with(rep)
    op.erase()


def _ops(module: ir.Module) -> list[ir.Operation]:
    ops: list[ir.Operation] = []
    module.operation.walk(lambda op: ops.append(op.operation) or ir.WalkResult.ADVANCE)
    return ops


def _is_compute(name: str) -> bool:
    return name.startswith("torch.") and not name.startswith(_GLUE)


def _opname(op: ir.Operation) -> str:
    return ir.StringAttr(op.attributes["name"]).value


def _node(loc: ir.Location) -> str | None:
    """The ONNX node name a location carries (the importer uses NameLocs, passes fuse them)."""
    if type(loc) is ir.Location:  # diagnostics hand out the base class: downcast
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
