"""Ops whose lowering a search may choose: their signature, their search space, and a
standalone module to measure each choice on.

A *tunable* is a contraction (matmul, batch matmul, a 1x1 conv as a matmul: MLIR's own
``isa_contraction_op``, one reduced loop, static sizes). Its choices: data-tiled
(``{"kind": "data-tiled"}``: IREE packs its operands into tiled layouts and runs its mmt4d
ukernel; the op carries IREE's data-tiling hint), or plain with IREE's llvm-cpu
``compilation_info`` on the op
(``#iree_cpu.lowering_config``: ``distribution`` tiles = one workgroup's share,
``vector_common_parallel`` = the register tile of each vector step, ``vector_reduction`` =
how many k steps one vector step unrolls; pipeline ``DoubleTilingExpert``, as IREE's own
``setRootConfig`` for contractions picks) or IREE's own heuristic (``{"kind": "iree"}``).
The hand rules of ``matmul_tiling`` / ``gemv_tiling`` are one more candidate (the prior).

The *signature* names what the measurement depends on: the op (maps, iterator types, body,
element types, shapes) and the elementwise op IREE fuses after it (its body: a GELU epilogue
changes which tiles win). Two ops with one signature, in one model or two, share records.

The *standalone module* is that op, its zero fill and its epilogue as one function whose
operands are arguments (those that are constants in the model, the weights, are marked
``xgen.constant``: a measurement makes them constants again, so IREE packs them at compile
time as in the model): compiled alone it gives the dispatch the model would get, which a
tuner compiles once per candidate config and times against IREE's own config.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from itertools import product
from math import ceil, log2, prod
from typing import Any

from .._mlir import binding_of
from ..analysis.mapping_types import ir_of, loop_sizes
from .data_tiling import HINT

PIPELINE = "DoubleTilingExpert"
ROOT_ATTR = "xgen.tune_root"  # marks the op a candidate's config goes on, in a standalone module
IREE_DEFAULT: dict[str, Any] = {"kind": "iree"}
DATA_TILED: dict[str, Any] = {"kind": "data-tiled"}
CONSTANT_ARG = "xgen.constant"  # an argument of a standalone module that is a weight
_FLOATS = {"f32": 32, "f16": 16, "bf16": 16}


@dataclass
class Tunable:
    """One contraction a search may tune, as found in a dispatch-phase module."""

    op: Any
    signature: str
    description: str
    loops: dict[str, list[int]]  # "batch", "m", "n", "k": loop positions (MLIR's inference)
    sizes: dict[int, int]
    elem_bits: int
    epilogue: str  # the fused elementwise op's body ("" when none), for features and people
    current: dict[str, Any] = field(default_factory=lambda: dict(IREE_DEFAULT))  # hand rule
    prior_why: str = ""

    @property
    def bmnk(self) -> tuple[int, int, int, int]:
        def size(name: str) -> int:
            return prod(self.sizes[d] for d in self.loops[name]) if self.loops[name] else 1

        return size("batch"), size("m"), size("n"), size("k")


@dataclass
class TuningRequest:
    """What ``compile()`` hands the ``xgen-apply-tuning`` step (through ``DispatchState``):
    the configs to apply per signature, and whether to collect each tunable's standalone
    module for a tuner. The step fills ``applied`` / ``untuned`` / ``tasks``."""

    configs: dict[str, dict[str, Any]] = field(default_factory=dict)
    collect: bool = False
    source: str = ""  # where the configs came from (a database file), for the report
    applied: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    untuned: list[tuple[str, str]] = field(default_factory=list)  # (description, why)
    tasks: list[dict[str, Any]] = field(default_factory=list)
    # xgen-winograd-convs' decisions under winograd=tuned: (conv, algorithm, why) per conv;
    # and xgen-byoc-offload's split of the Linear layers: (group signature, direction, why)
    choices: list[tuple[str, str, str]] = field(default_factory=list)


def _contraction_loops(op: Any) -> dict[str, list[int]] | None:
    linalg = binding_of(op).linalg
    view = op.opview
    try:
        if not linalg.isa_contraction_op(view):
            return None
        dims = linalg.infer_contraction_dimensions(view)
    except (TypeError, AttributeError):
        return None
    if dims is None:
        return None
    loops = {
        "batch": [int(d) for d in dims.batch],
        "m": [int(d) for d in dims.m],
        "n": [int(d) for d in dims.n],
        "k": [int(d) for d in dims.k],
    }
    if len(loops["k"]) != 1 or not loops["n"]:
        return None
    return loops


def _elem_bits(op: Any) -> int | None:
    ir = ir_of(op)
    bits = set()
    for v in [*op.operands, *op.results]:
        t = v.type
        if not isinstance(t, ir.RankedTensorType):
            return None
        name = str(ir.RankedTensorType(t).element_type)
        if name not in _FLOATS:
            return None
        bits.add(_FLOATS[name])
    return max(bits) if bits else None


def _epilogue(op: Any) -> Any | None:
    """The op's only reader, when it is an all-parallel ``linalg.generic`` with one result of
    the op's type (the elementwise op IREE puts in the contraction's dispatch)."""
    uses = list(op.results[0].uses)
    if len(uses) != 1:
        return None
    user = uses[0].owner
    user = user.operation if hasattr(user, "operation") else user
    if user.name != "linalg.generic" or len(user.results) != 1:
        return None
    if any("parallel" not in str(k) for k in user.attributes["iterator_types"]):
        return None
    if user.results[0].type != op.results[0].type:
        return None
    return user


def _body_names(op: Any) -> list[str]:
    return [o.operation.name for o in op.regions[0].blocks[0].operations] if op.regions else []


def _canonical(op: Any, epi: Any | None) -> str:
    def one(o: Any) -> dict[str, Any]:
        return {
            "name": o.name,
            "operands": [str(v.type) for v in o.operands],
            "results": [str(v.type) for v in o.results],
            "maps": str(o.attributes["indexing_maps"]) if "indexing_maps" in o.attributes else "",
            "iters": str(o.attributes["iterator_types"])
            if "iterator_types" in o.attributes
            else "",
            "body": _body_names(o),
        }

    data = {"op": one(op), "epilogue": one(epi) if epi is not None else None}
    return json.dumps(data, sort_keys=True)


def parse_compilation_info(text: str) -> dict[str, Any] | None:
    """The tile levels of a ``compilation_info`` attribute's text (None if it has none)."""
    levels = {}
    for key, short in (
        ("distribution", "dist"),
        ("vector_common_parallel", "vec"),
        ("vector_reduction", "red"),
    ):
        m = re.search(rf"{key} = \[([^\]]*)\]", text)
        if m is None:
            return None
        levels[short] = [int(x) for x in m.group(1).replace(" ", "").split(",") if x]
    return {"kind": "tiles", **levels}


def describe_op(b: int, m: int, n: int, k: int, bits: int, epilogue: str) -> str:
    shape = f"{b}x{m}x{n}x{k}" if b > 1 else f"{m}x{n}x{k}"
    kind = "batch_matmul" if b > 1 else "matmul"
    epi = f" +{epilogue}" if epilogue else ""
    return f"{kind} {shape} f{bits}{epi}"


def find_tunables(block: Any) -> tuple[list[Tunable], list[tuple[str, str]]]:
    """The tunable contractions of ``block`` (outside dispatch regions), and the contractions
    left out with why (data-tiled, dynamic sizes, element types)."""
    found, skipped = [], []
    for op in block.operations:
        op = op.operation
        if not op.name.startswith("linalg.") or len(op.results) != 1:
            continue
        loops = _contraction_loops(op)
        if loops is None:
            continue
        sizes = loop_sizes(op)
        n_loops = sum(len(v) for v in loops.values())
        if len(sizes) != n_loops:
            skipped.append((op.name, "dynamic sizes"))
            continue
        bits = _elem_bits(op)
        if bits is None:
            skipped.append((op.name, "element types other than f32/f16/bf16"))
            continue
        epi = _epilogue(op)
        epi_body = [n for n in _body_names(epi) if n != "linalg.yield"] if epi else []
        math_ops = sorted({n.split(".", 1)[1] for n in epi_body if n.startswith("math.")})
        epi_text = ",".join(math_ops) or ("elementwise" if epi_body else "")
        canonical = _canonical(op, epi)
        digest = hashlib.sha256(canonical.encode()).hexdigest()[:12]
        t = Tunable(op, "", "", loops, sizes, bits, epi_text)
        t.description = describe_op(*t.bmnk, bits, epi_text)
        t.signature = f"{t.description.replace(' ', '_')}#{digest}"
        if HINT in op.attributes:
            t.current, t.prior_why = dict(DATA_TILED), "xgen_mlir's data-tiling rule"
        elif "compilation_info" in op.attributes:
            prior = parse_compilation_info(str(op.attributes["compilation_info"]))
            if prior is not None:
                t.current, t.prior_why = prior, "xgen_mlir's tile rule"
        found.append(t)
    return found, skipped


def compilation_info_text(config: dict[str, Any]) -> str:
    def lst(v: list[int]) -> str:
        return "[" + ", ".join(map(str, v)) + "]"

    return (
        "#iree_codegen.compilation_info<lowering_config = #iree_cpu.lowering_config<"
        f"distribution = {lst(config['dist'])}, vector_common_parallel = {lst(config['vec'])}, "
        f"vector_reduction = {lst(config['red'])}>, translation_info = "
        f"#iree_codegen.translation_info<pipeline = #iree_cpu.pipeline<{PIPELINE}>>>"
    )


def check_config(config: Any, n_loops: int) -> str | None:
    """Why ``config`` cannot go on an op of ``n_loops`` loops (a damaged or foreign record),
    or None."""
    if not isinstance(config, dict) or config.get("kind") not in ("iree", "tiles", "data-tiled"):
        return "not a config"
    if config["kind"] in ("iree", "data-tiled"):
        return None
    for level in ("dist", "vec", "red"):
        v = config.get(level)
        if not isinstance(v, list) or len(v) != n_loops:
            return f"{level} tiles are not {n_loops} numbers"
        if not all(isinstance(x, int) and 0 <= x <= 1 << 20 for x in v):
            return f"{level} tiles out of range"
    return None


def apply_config(op: Any, config: dict[str, Any]) -> None:
    """Give ``op`` this config: IREE's own (no ``compilation_info``), these tiles, or data
    tiling (IREE's hint; the caller keeps ``--iree-opt-data-tiling`` when any op has it)."""
    op = op.operation
    for name in ("compilation_info", HINT):
        if name in op.attributes:
            del op.attributes[name]
    if config["kind"] == "data-tiled":
        op.attributes[HINT] = ir_of(op).UnitAttr.get(op.context)
    if config["kind"] == "tiles":
        ir = ir_of(op)
        with op.location:
            op.attributes["compilation_info"] = ir.Attribute.parse(compilation_info_text(config))


def standalone_module(t: Tunable) -> str:
    """The op, its fill and its epilogue as ``func.func @main``; every other value it reads
    is an argument. The op carries ``xgen.tune_root`` and no ``compilation_info``."""
    op = t.op.operation
    ir = ir_of(op)
    epi = _epilogue(op)
    keep = [op] if epi is None else [op, epi]
    inner: list[Any] = []  # fill + empty of the init, cloned rather than passed in
    init = op.operands[len(op.operands) - 1]
    owner = init.owner
    owner = owner.operation if hasattr(owner, "operation") else owner
    if isinstance(owner, ir.Operation) and owner.name == "linalg.fill":
        scalar = owner.operands[0].owner
        scalar = scalar.operation if hasattr(scalar, "operation") else scalar
        empty = owner.operands[1].owner
        empty = empty.operation if hasattr(empty, "operation") else empty
        if (
            isinstance(scalar, ir.Operation)
            and scalar.name == "arith.constant"
            and isinstance(empty, ir.Operation)
            and empty.name == "tensor.empty"
            and not len(empty.operands)
        ):
            inner = [scalar, empty, owner]
    cloned_ops = inner + keep
    produced = {r for o in cloned_ops for r in o.results}
    args: list[Any] = []
    captured: list[Any] = []  # scalar constants a body reads from outside its region
    for o in cloned_ops:
        for v in o.operands:
            if v not in produced and v not in args:
                if not isinstance(v.type, (ir.RankedTensorType, ir.FloatType)):
                    raise ValueError(f"operand of type {v.type} cannot be an argument")
                args.append(v)
        for v in captured_values(ir, o):
            owner = v.owner.operation if hasattr(v.owner, "operation") else v.owner
            if isinstance(owner, ir.Operation) and owner.name == "arith.constant":
                if owner not in captured:
                    captured.append(owner)
            elif isinstance(v.type, (ir.RankedTensorType, ir.FloatType)):
                if v not in produced and v not in args:
                    args.append(v)  # a value the body reads from outside: an argument too
            else:
                raise ValueError(f"the op's body reads a {v.type} from outside it")
    result = keep[-1].results[0]
    with op.context, ir.Location.unknown():  # clones need the op's own context
        mod = ir.Module.create()
        ftype = ir.FunctionType.get([a.type for a in args], [result.type])
        fn = ir.Operation.create(
            "func.func",
            regions=1,
            attributes={
                "sym_name": ir.StringAttr.get("main"),
                "function_type": ir.TypeAttr.get(ftype),
            },
        )
        constant = [_is_constant(ir, a) for a in args]
        if any(constant):
            unit = ir.DictAttr.get({CONSTANT_ARG: ir.UnitAttr.get()})
            fn.attributes["arg_attrs"] = ir.ArrayAttr.get(
                [unit if c else ir.DictAttr.get({}) for c in constant]
            )
        mod.body.append(fn)
        block = fn.regions[0].blocks.append(*ftype.inputs)
        mapping = dict(zip(args, block.arguments, strict=True))
        with ir.InsertionPoint(block):
            for c in captured:
                mapping[c.results[0]] = c.clone().results[0]
            for o in cloned_ops:
                c = clone_remapped(ir, o, mapping)
                for name in ("compilation_info", HINT, "lowering_config"):
                    if name in c.attributes:
                        del c.attributes[name]
                if o is op:
                    c.attributes[ROOT_ATTR] = ir.UnitAttr.get()
            ir.Operation.create("func.return", operands=[mapping[result]])
        mod.operation.verify()
        return str(mod)


def _is_constant(ir: Any, value: Any) -> bool:
    """A weight: a tensor defined by a constant or a load of an immutable global (what IREE's
    constant hoisting leaves at the dispatch phase)."""
    owner = value.owner.operation if hasattr(value.owner, "operation") else value.owner
    if not isinstance(owner, ir.Operation) or not isinstance(value.type, ir.RankedTensorType):
        return False
    return owner.name in ("arith.constant", "util.global.load")


def _nested_ops(ir: Any, op: Any) -> list[Any]:
    found: list[Any] = []

    def visit(o: Any) -> Any:
        found.append(o)
        return ir.WalkResult.ADVANCE

    op.walk(visit)
    return [o for o in found if o != op]


def captured_values(ir: Any, op: Any) -> list[Any]:
    """Values the ops nested in ``op`` read from outside it."""
    nested = _nested_ops(ir, op)
    inside = {r for o in nested for r in o.results}
    for region in op.regions:
        for block in region.blocks:
            inside.update(block.arguments)
    out: list[Any] = []
    for o in nested:
        for v in o.operands:
            if v not in inside and v not in out:
                out.append(v)
    return out


def clone_remapped(ir: Any, op: Any, mapping: dict[Any, Any]) -> Any:
    """Clone ``op`` at the insertion point with its operands (nested ones too) read through
    ``mapping``, and map its results to the clone's."""
    c = op.clone()
    for i, v in enumerate(op.operands):
        c.operands[i] = mapping[v]
    _remap_nested(ir, c, mapping)
    for old, new in zip(op.results, c.results, strict=True):
        mapping[old] = new
    return c


def _remap_nested(ir: Any, op: Any, mapping: dict[Any, Any]) -> None:
    for o in _nested_ops(ir, op):
        for i, v in enumerate(o.operands):
            if v in mapping:
                o.operands[i] = mapping[v]


# ---- the search space ------------------------------------------------------------------


def _divisor_friendly(values: list[int], limit: int) -> list[int]:
    return sorted({v for v in values if 1 <= v <= limit})


def candidates(t: Tunable, vector_bits: int, limit: int = 4000) -> list[dict[str, Any]]:
    """Tile configs for ``t`` on a target with ``vector_bits``-wide vectors: register tiles of
    up to 32 accumulators, workgroups of 1-16 register tiles per side or a whole side, k
    unrolled 1-16. Tiles go on the innermost m loop and the innermost n loop; other parallel
    loops get 1 (a workgroup per outer row / batch)."""
    n_loops = len(t.sizes)
    lanes = max(4, (vector_bits or 128) // t.elem_bits)
    m_loop = t.loops["m"][-1] if t.loops["m"] else None
    n_loop, k_loop = t.loops["n"][-1], t.loops["k"][0]
    size_m = t.sizes[m_loop] if m_loop is not None else 1
    size_n, size_k = t.sizes[n_loop], t.sizes[k_loop]
    vec_ns = _divisor_friendly([lanes // 2, lanes, 2 * lanes, 3 * lanes], max(size_n, lanes // 2))
    vec_ms = _divisor_friendly([1, 2, 4, 6, 7, 8, 12, 14, 16], size_m)
    reds = _divisor_friendly([1, 2, 4, 8, 16], size_k)
    out = []
    for vm, vn, vk in product(vec_ms, vec_ns, reds):
        if vm * ceil(vn / lanes) > 32:  # more accumulators than vector registers
            continue
        dms = _divisor_friendly([vm * f for f in (1, 2, 4, 8, 16)], size_m) + [size_m]
        dns = _divisor_friendly([vn * f for f in (1, 2, 4, 8)], size_n) + [size_n]
        for dm, dn in product(sorted(set(dms)), sorted(set(dns))):
            if dm % vm or (dn % vn and dn != size_n):
                continue
            dist, vec, red = [0] * n_loops, [0] * n_loops, [0] * n_loops
            for loop in t.loops["batch"] + t.loops["m"][:-1] + t.loops["n"][:-1]:
                dist[loop], vec[loop] = 1, 1
            if m_loop is not None:
                dist[m_loop], vec[m_loop] = dm, vm
            dist[n_loop], vec[n_loop] = dn, vn
            red[k_loop] = vk
            out.append({"kind": "tiles", "dist": dist, "vec": vec, "red": red})
    if len(out) > limit:  # keep an even spread
        step = len(out) / limit
        out = [out[int(i * step)] for i in range(limit)]
    return [dict(DATA_TILED), *out]


def tile_params(t: Tunable, config: dict[str, Any]) -> tuple[int, int, int, int, int] | None:
    """(workgroup m, workgroup n, vector m, vector n, k unroll) of a tiles config."""
    if config.get("kind") != "tiles":
        return None
    m_loop = t.loops["m"][-1] if t.loops["m"] else None
    n_loop, k_loop = t.loops["n"][-1], t.loops["k"][0]
    dm = config["dist"][m_loop] if m_loop is not None else 1
    vm = config["vec"][m_loop] if m_loop is not None else 1
    return dm, config["dist"][n_loop], vm, config["vec"][n_loop], config["red"][k_loop]


def features(
    t: Tunable, config: dict[str, Any], vector_bits: int, threads: int, l2_bytes: int
) -> dict[str, float]:
    """What the cost model sees of (op, config, target): sizes, tiles, and what they imply
    (padding waste, workgroup count and balance, accumulators, a workgroup's bytes vs L2)."""
    b, m, n, k = t.bmnk
    lanes = max(4, (vector_bits or 128) // t.elem_bits)
    f: dict[str, float] = {
        "log_b": log2(b),
        "log_m": log2(m),
        "log_n": log2(n),
        "log_k": log2(k),
        "log_flops": log2(2 * b * m * n * k),
        "elem_bits": t.elem_bits,
        "epilogue_math": float(bool(t.epilogue) and t.epilogue != "elementwise"),
        "vector_bits": vector_bits,
        "threads": threads,
        "n_mod_lanes": (n % lanes) / lanes,
    }
    p = tile_params(t, config)
    f["iree_default"] = float(config.get("kind") == "iree")
    f["data_tiled"] = float(config.get("kind") == "data-tiled")
    if p is None:
        for name in ("log_dm", "log_dn", "log_vm", "log_vn", "log_vk", "waste_m", "waste_n"):
            f[name] = -1.0
        for name in ("log_groups", "balance", "accumulators", "tile_l2"):
            f[name] = -1.0
        return f
    dm, dn, vm, vn, vk = p
    size_m = t.sizes[t.loops["m"][-1]] if t.loops["m"] else 1
    size_n = t.sizes[t.loops["n"][-1]]
    outer = (b * m // size_m) * (n // size_n)
    groups = outer * ceil(size_m / dm) * ceil(size_n / dn)
    f.update(
        {
            "log_dm": log2(dm),
            "log_dn": log2(dn),
            "log_vm": log2(vm),
            "log_vn": log2(vn),
            "log_vk": log2(vk),
            "waste_m": (ceil(dm / vm) * vm - dm) / dm + (ceil(size_m / dm) * dm - size_m) / size_m,
            "waste_n": (ceil(dn / vn) * vn - dn) / dn + (ceil(size_n / dn) * dn - size_n) / size_n,
            "log_groups": log2(groups),
            "balance": (groups % threads) / threads if threads else 0.0,
            "accumulators": vm * ceil(vn / lanes),
            "tile_l2": (dm * k + k * dn + dm * dn) * t.elem_bits / 8 / max(l2_bytes, 1),
        }
    )
    return f
