"""``xgen-attention-kernels``: a transformer's attention core -> one generated C kernel.

torch-mlir lowers attention (eager or SDPA) to ``batch_matmul(Q, K^T)``, the elementwise ops
on the scores (a scale, an additive mask), the softmax as five generics (row maximum,
subtract, exp, row sum, divide), ``batch_matmul(P, V)``, with reshapes, slices and
transposes between the projections' ``[T, heads x D]`` layout and the heads'. IREE makes
that four or more dispatches and writes the ``heads x T x T`` scores to memory twice. This
pass finds the chain and replaces it by one dispatch of ``codegen/attention.py``'s kernel:

- Q, K and V are traced back through ``collapse_shape`` / ``expand_shape`` /
  ``extract_slice`` / ``transpose`` to the tensors they are views of; the kernel reads those
  in place through strides, found by replaying the views on an array of element indices
  (so any chain of them that is affine in (head, token, feature) is taken, and no other).
- The output is traced forward the same way to the last reshape or transpose (the
  ``[T, heads x D]`` tensor the output projection reads), which the kernel writes directly.
- The score ops become the kernel's ``score`` function (``epilogue_c.py``, with tensors
  broadcast over heads: the mask); anything it cannot translate leaves the chain to IREE.

Only f32, static shapes, Q K^T's feature count equal to V's, and key rows that fit the
kernel's stack tile; the rest stays with IREE, counted with the reason. In a bf16 compile
(``precision=bf16``) on a 512-bit target the kernel's two products are bf16 dot products with
f32 sums, where K^T and V paired fit its stack (else the f32 kernel); on a target with bf16
matrix tiles (the ``bf16-tiles`` fact: AMX-BF16) they run in AMX tiles.
"""

from __future__ import annotations

import hashlib
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._mlir import ir
from ..codegen.attention import SCORE_BYTES, STACK_BYTES, AttentionSpec, Strided, generate
from ..codegen.toolchain import ToolchainOptions, compile_object
from ..diagnostics import format_location, warn_fallback
from ..irutil import function_of, ops_named
from ..target import gemm_tile, host_threads
from ..tunedb import (
    ALGORITHM,
    MIN_GAIN,
    REJECTED_IN_MODEL,
    Record,
    readable_detail,
)
from .consteval import ConstEval
from .epilogue_c import Epilogue, Operands, epilogue, scalar_constant
from .generic_util import (
    body_ops,
    has_default_maps,
    indexing_maps,
    is_identity,
    iterator_types,
    map_dims,
    num_inputs,
    num_uses,
    producer,
)
from .kernel_call import free_symbol, install_kernel
from .kernel_match import NoMatch
from .registry import PassFailure, register_pass
from .winograd_convs import ATTENTION_ALGORITHM, CHOICES, MODES, load_choices

_VIEWS = (
    "tensor.collapse_shape",
    "tensor.expand_shape",
    "tensor.extract_slice",
    "linalg.transpose",
)
_RESHAPES = ("tensor.collapse_shape", "tensor.expand_shape")


@dataclass
class AttentionKernelOptions(ToolchainOptions):
    # "true": every core the kernel takes; "false": none; "tuned": as this host's
    # measurements decide (``decide``: the kernel unless IREE measured faster)
    enable: str = "true"
    functions: str = ""  # comma-separated function names to look in; empty: all
    db: str = ""  # "tuned" outside compile(): the tuning database ("": the default one)
    # the threads the module runs on (0: this host's): the records measured with that many
    # (enable=tuned), and the workgroups per core (two per thread)
    threads: int = 0
    vector_bits: int = 512  # the target's vector width (the kernel's register tile)
    # bf16: the kernel's two products in bf16 (vdpbf16ps, f32 sums) on a 512-bit target, as
    # IREE's demoted batch matmuls would compute them (the pipeline allows bf16 only on a CPU
    # with bf16 dot products or AMX)
    precision: str = "fp32"
    # in an int8 compile (``precision=int8``), the precision of the float products it keeps
    # (attention's Q K^T and P V): "bf16" makes them bf16 products as above (the pipeline's
    # ``int8_float_ops``, which needs a CPU with bf16 dot products or AMX), "f32" keeps f32
    int8_float: str = "f32"
    # the target has bf16 matrix tiles (AMX-BF16): a bf16 kernel's products run in them
    bf16_tiles: int = 0
    verbose: bool = False


def _shape(value: ir.Value) -> list[int]:
    return list(ir.RankedTensorType(value.type).shape)


def _static_f32(value: ir.Value) -> bool:
    ty = ir.RankedTensorType(value.type)
    return ty.has_static_shape and str(ty.element_type) == "f32"


def _users(value: ir.Value) -> list[ir.Operation]:
    return [u.owner.operation for u in value.uses]


def _only_user(value: ir.Value) -> ir.Operation | None:
    users = _users(value)
    return users[0] if len(users) == 1 else None


# ---- views: where a tensor's elements lie in the tensor it was sliced or reshaped from ----


def _apply_view(op: ir.Operation, idx: np.ndarray) -> np.ndarray:
    """``op`` (a reshape, transpose or static slice) applied to an array of indices."""
    out = _shape(op.results[0])
    if op.name in _RESHAPES:
        return idx.reshape(out)
    if op.name == "linalg.transpose":
        perm = list(ir.DenseI64ArrayAttr(op.attributes["permutation"]))
        return np.transpose(idx, perm)
    offsets = list(ir.DenseI64ArrayAttr(op.attributes["static_offsets"]))
    sizes = list(ir.DenseI64ArrayAttr(op.attributes["static_sizes"]))
    strides = list(ir.DenseI64ArrayAttr(op.attributes["static_strides"]))
    if len(op.operands) != 1 or any(s < 0 or s > 1 << 40 for s in offsets + sizes + strides):
        raise NoMatch("a slice with dynamic offsets, sizes or strides")
    sl = tuple(slice(o, o + n * s, s) for o, n, s in zip(offsets, sizes, strides, strict=True))
    return idx[sl].reshape(out)


def _view_source(value: ir.Value) -> tuple[ir.Value, np.ndarray, list[ir.Operation]]:
    """The tensor ``value`` is a view of, for each element of ``value`` its flat index
    there, and the views in between."""
    chain: list[ir.Operation] = []
    while (op := producer(value)) is not None and op.name in _VIEWS:
        chain.append(op)
        value = op.operands[0]
    if not _static_f32(value):
        raise NoMatch("an attention operand that is not a static f32 tensor")
    idx = np.arange(int(np.prod(_shape(value))), dtype=np.int64).reshape(_shape(value))
    for op in reversed(chain):
        idx = _apply_view(op, idx)
    return value, idx, chain


def _affine(idx: np.ndarray) -> list[int] | None:
    """``idx`` as ``off + sum(i_a * step_a)`` over its axes: [off, step_0, ...], or None."""
    off = int(idx.flat[0])
    rank = idx.ndim
    steps = []
    for a, n in enumerate(idx.shape):
        at = tuple(1 if b == a else 0 for b in range(rank))
        steps.append(int(idx[at]) - off if n > 1 else 0)
    grid = np.indices(idx.shape, dtype=np.int64)
    want = off + sum(g * s for g, s in zip(grid, steps, strict=True))
    return [off, *steps] if np.array_equal(idx, want) else None


def _fit(idx: np.ndarray, what: str, contiguous: bool) -> Strided:
    """``idx`` [heads, tokens, features] as ``off + h hs + t ts + f fs``, or with the heads a
    folded (batch item, head) pair (the first split that is affine), or NoMatch."""
    heads = idx.shape[0]
    found = _affine(idx)
    if found is not None:
        fitted = Strided(*found)
    else:
        for inner in range(heads // 2, 1, -1):
            if heads % inner:
                continue
            split = _affine(idx.reshape(heads // inner, inner, *idx.shape[1:]))
            if split is not None:
                off, bs, hs, ts, fs = split
                fitted = Strided(off, hs, ts, fs, bs, inner)
                break
        else:
            raise NoMatch(f"{what} is not a strided view of one tensor")
    if contiguous and idx.shape[2] > 1 and fitted.fs != 1:
        raise NoMatch(f"{what}'s features are not contiguous")
    return fitted


def _output_view(value: ir.Value) -> tuple[list[ir.Operation], np.ndarray]:
    """The reshapes and transposes that alone use ``value`` (the last one's result is the
    output the kernel writes), and for each element of ``value`` its flat index in that
    op's result."""
    chain: list[ir.Operation] = []
    cur = value
    while (user := _only_user(cur)) is not None and user.name in (*_RESHAPES, "linalg.transpose"):
        if user.operands[0] != cur:
            break
        chain.append(user)
        cur = user.results[0]
    size = int(np.prod(_shape(value)))
    idx = np.arange(size, dtype=np.int64).reshape(_shape(value))
    for op in chain:
        idx = _apply_view(op, idx)
    pos = np.empty(size, np.int64)
    pos[idx.ravel()] = np.arange(size, dtype=np.int64)
    return chain, pos.reshape(_shape(value))


# ---- the chain ----


def _zero_init(op: ir.Operation) -> bool:
    return _fill_value(op.operands[2]) == 0.0


def _through_reshapes(value: ir.Value) -> tuple[ir.Value, list[ir.Operation]]:
    ops = []
    while (user := _only_user(value)) is not None and user.name in _RESHAPES:
        ops.append(user)
        value = user.results[0]
    return value, ops


def _body_names(op: ir.Operation) -> list[str]:
    return [b.name for b in body_ops(op)]


def _fill_value(value: ir.Value) -> float | None:
    fill = producer(value)
    if fill is None or fill.name != "linalg.fill":
        return None
    return scalar_constant(fill.operands[0])


def _row_reduction(op: ir.Operation, source: ir.Value, combine: str, start: float) -> bool:
    """A generic reducing ``source``'s last dim into its first result with ``combine`` from
    ``start``, every other result unused (torch's max also returns the indices)."""
    if op.name != "linalg.generic" or num_inputs(op) != 1 or op.operands[0] != source:
        return False
    if _fill_value(op.operands[1]) != start:
        return False
    kinds = iterator_types(op)
    rank = len(_shape(source))
    if kinds != ["parallel"] * (rank - 1) + ["reduction"] or not is_identity(indexing_maps(op)[0]):
        return False
    if any(num_uses(r) for r in list(op.results)[1:]):
        return False
    ops = body_ops(op)
    yielded = ops[-1].operands[0]
    yop = producer(yielded)
    return yop is not None and yop.name == combine


def _elementwise_body(op: ir.Operation, names: list[str]) -> bool:
    """A generic computing ``names`` in order over its inputs, each read whole (identity)
    or, the second, as one value per row (a reduction's result)."""
    if op.name != "linalg.generic" or _body_names(op) != [*names, "linalg.yield"]:
        return False
    if any(k != "parallel" for k in iterator_types(op)):
        return False
    maps = indexing_maps(op)
    if not is_identity(maps[0]) or not is_identity(maps[-1]):
        return False
    rank = maps[0].n_dims
    for amap in maps[1 : num_inputs(op)]:
        dims = map_dims(amap)
        if dims not in (list(range(rank - 1)), [*range(rank - 1), None]):
            return False
    return True


def _subtracts_args(op: ir.Operation) -> bool:
    """The body's first op (a subtraction or a division) is ``op(in0, in1)``, and the rest
    (an exp) take its result."""
    args = list(op.regions[0].blocks[0].arguments)
    first = body_ops(op)[0]
    if list(first.operands) != args[:2]:
        return False
    rest = body_ops(op)[1:-1]
    return all(list(b.operands) == [first.results[0]] for b in rest)


def _reduced(value: ir.Value) -> ir.Value:
    """A row reduction's result, or the ``[..., 1]`` reshape of it that its users read."""
    user = _only_user(value)
    return user.results[0] if user is not None and user.name == "tensor.expand_shape" else value


def _softmax(scores: ir.Value) -> tuple[ir.Value, list[ir.Operation]]:
    """The probabilities of torch-mlir's softmax over ``scores``' last dim (max, subtract,
    exp, sum, divide), and its ops; NoMatch otherwise."""
    users = _users(scores)
    if len(users) != 2:
        raise NoMatch("the scores are not used by a softmax alone")
    mx = next((u for u in users if _row_reduction(u, scores, "arith.maximumf", -np.inf)), None)
    sub = next((u for u in users if u is not mx), None)
    if mx is None or sub is None:
        raise NoMatch("no row maximum of the scores (softmax)")
    mval = _reduced(mx.results[0])
    if not (
        sub.name == "linalg.generic"
        and list(sub.operands[: num_inputs(sub)]) == [scores, mval]
        and _body_names(sub)[:1] == ["arith.subf"]
        and _subtracts_args(sub)
    ):
        raise NoMatch("the softmax does not subtract the row maximum")
    ops = [mx, *([producer(mval)] if mval != mx.results[0] else []), sub]
    if _elementwise_body(sub, ["arith.subf", "math.exp"]):
        exp = sub
    elif _elementwise_body(sub, ["arith.subf"]):
        exp = _only_user(sub.results[0])
        if exp is None or not _elementwise_body(exp, ["math.exp"]):
            raise NoMatch("no exp after the softmax's subtraction")
        ops.append(exp)
    else:
        raise NoMatch("the softmax's subtraction does more")
    e = exp.results[0]
    users = _users(e)
    if len(users) != 2:
        raise NoMatch("the softmax's exponentials are used elsewhere")
    total = next((u for u in users if _row_reduction(u, e, "arith.addf", 0.0)), None)
    div = next((u for u in users if u is not total), None)
    if total is None or div is None:
        raise NoMatch("no row sum of the exponentials (softmax)")
    sval = _reduced(total.results[0])
    if not (
        _elementwise_body(div, ["arith.divf"])
        and list(div.operands[: num_inputs(div)]) == [e, sval]
        and _subtracts_args(div)
    ):
        raise NoMatch("the softmax does not divide by the row sum")
    ops += [total, *([producer(sval)] if sval != total.results[0] else []), div]
    return div.results[0], ops


def _tensor_strides(epi: Epilogue, bmm_shape: list[int]) -> list[Strided]:
    """Each score tensor's (head, query, key) strides, from its map in the generic that reads
    it (whose output is a reshape of the ``[heads, queries, keys]`` scores)."""
    out = []
    for t, amap in zip(epi.tensors, epi.tensor_maps, strict=True):
        reader = next(
            op
            for op in epi.ops
            if op.name == "linalg.generic"
            and any(
                v == t and m == amap for v, m in zip(op.operands, indexing_maps(op), strict=False)
            )
        )
        shape = _shape(reader.results[0])
        grid = np.indices(shape, dtype=np.int64)
        dims = map_dims(amap)
        assert dims is not None  # epilogue_c accepted the map
        coords = [grid[d] if d is not None else np.zeros(shape, np.int64) for d in dims]
        flat = np.ravel_multi_index(coords, _shape(t))
        out.append(_fit(flat.reshape(bmm_shape), "a score tensor", contiguous=True))
    return out


@dataclass
class Found:
    """One attention core the kernel takes: its spec and the IR it replaces."""

    spec: AttentionSpec
    bases: list[ir.Value]  # the tensors Q, K and V are views of (the kernel's inputs)
    tensors: list[ir.Value]  # the score ops' tensors (a mask)
    replaced: list[ir.Operation]  # Q K^T, the score ops, the softmax, P V
    last: ir.Operation  # the op whose result the kernel's result replaces
    pv: ir.Operation
    views: list[ir.Operation]  # Q's, K's and V's views and the output's (a measuring slice)

    @property
    def ops(self) -> list[ir.Operation]:
        """Every op of the core with the views around it (unordered)."""
        return [*self.views, *(o for o in self.replaced if o not in self.views)]

    def signature(self) -> tuple[str, str]:
        """(signature, description) for the tuning database: shapes, the strides Q, K, V, the
        output and the score's tensors are read and written with, and the score ops. Cores
        with one signature share measurements, in a model or across models."""
        s = self.spec
        desc = f"attention {s.heads}x{s.tq}x{s.tk} d{s.d}"
        if s.score:
            desc += f" +{len(s.score)} score ops"
        if s.tensors:
            desc += f" ({len(s.tensors)} tensor{'s' if len(s.tensors) > 1 else ''})"
        text = "|".join(
            [
                desc,
                *(repr(x) for x in (s.q, s.k, s.v, s.o, *s.tensors)),
                f"{s.q_input},{s.k_input},{s.v_input}/{s.inputs}",
                *s.score,
            ]
        )
        digest = hashlib.sha256(text.encode()).hexdigest()[:12]
        return f"{desc.replace(' ', '_')}#{digest}", desc


def _match(
    module_op: ir.Operation, bmm: ir.Operation, ev: ConstEval, opts: AttentionKernelOptions
) -> Found:
    """The attention core starting at ``bmm`` (Q K^T) as the kernel would compute it; NoMatch
    where it is not one the kernel takes. Changes nothing."""
    qv, ktv = bmm.operands[0], bmm.operands[1]
    if not all(_static_f32(v) for v in (qv, ktv, bmm.results[0])):
        raise NoMatch("not a static f32 batch matmul")
    if not _zero_init(bmm) or not has_default_maps(bmm):
        raise NoMatch("Q K^T does not start from zero or transposes an operand")
    heads, tq, d = _shape(qv)
    tk = _shape(ktv)[2]
    epi = epilogue(bmm.results[0], ev, Operands(bmm, column_dim=-1, tensors=True, broadcast=True))
    if epi.columns:
        raise NoMatch("a score op reads a per-key constant (the kernel reads tensors only)")
    if epi:
        scores = epi.ops[-1].results[0]
        score_ops = list(epi.ops)
    else:
        scores, score_ops = _through_reshapes(bmm.results[0])
    probs, soft_ops = _softmax(scores)
    probs, p_views = _through_reshapes(probs)
    pv = _only_user(probs)
    if pv is None or pv.name != "linalg.batch_matmul" or pv.operands[0] != probs:
        raise NoMatch("the probabilities do not go to a batch matmul with V")
    if not _zero_init(pv) or not has_default_maps(pv) or not _static_f32(pv.operands[1]):
        raise NoMatch("P V does not start from zero or V is not static f32")
    if _shape(pv.operands[1])[2] != d:
        raise NoMatch("V's features differ from Q's (the kernel takes one D)")
    out_views, opos = _output_view(pv.results[0])
    out_view = _fit(opos, "the output", contiguous=True)
    q_src, q_idx, q_views = _view_source(qv)
    k_src, k_idx, k_views = _view_source(ktv)
    v_src, v_idx, v_views = _view_source(pv.operands[1])
    q = _fit(q_idx, "Q", contiguous=False)
    k = _fit(np.transpose(k_idx, (0, 2, 1)), "K", contiguous=False)
    v = _fit(v_idx, "V", contiguous=True)
    bases: list[ir.Value] = []
    for src in (q_src, k_src, v_src):
        if src not in bases:
            bases.append(src)
    rows, n_vectors, lanes = gemm_tile(opts.vector_bits or 128)
    spec = AttentionSpec(
        free_symbol(module_op, "xgen_attention", 1), heads, tq, tk, d, lanes, rows, n_vectors,
        q, k, v, out_view, bases.index(q_src), bases.index(k_src), bases.index(v_src),
        len(bases), tuple(epi.lines), _tensor_strides(epi, [heads, tq, tk]),
    )  # fmt: skip
    last = out_views[-1] if out_views else pv
    spec.out_size = int(np.prod(_shape(last.results[0])))
    spec.for_workers(opts.threads or host_threads())
    bf16 = opts.precision == "bf16" or (opts.precision == "int8" and opts.int8_float == "bf16")
    spec.bf16 = bf16 and opts.vector_bits == 512
    spec.amx = spec.bf16 and bool(opts.bf16_tiles)
    if spec.amx and spec.stack_bytes > STACK_BYTES:
        spec.amx = False  # the tiles' padding and rows must fit too: vdpbf16ps then
    if spec.bf16 and spec.stack_bytes > STACK_BYTES:
        spec.bf16 = False  # K^T and V in pairs must both fit the stack: the f32 kernel then
    spec.place()
    if spec.stack_bytes > STACK_BYTES:  # V rows of partial vectors are packed on the stack
        raise NoMatch(f"V's {d}-feature rows, padded to whole vectors, pass the stack budget")
    if spec.score_bytes > SCORE_BYTES:
        raise NoMatch(f"{tk} keys: a tile's score rows pass the kernel's {SCORE_BYTES // 1024} KiB")
    views = [*q_views, *k_views, *v_views, *out_views]
    replaced = [bmm, *score_ops, *soft_ops, *p_views, pv]
    return Found(spec, bases, list(epi.tensors), replaced, last, pv, views)


def _install(module_op: ir.Operation, found: Found, opts: AttentionKernelOptions) -> None:
    """Replace the core by a call of its generated kernel."""
    spec = found.spec
    obj = compile_object(generate(spec), opts.toolchain(), spec.symbol)
    install_kernel(
        module_op, spec.symbol, str(obj), opts.object_format, [*found.bases, *found.tensors],
        found.last.results[0].type, spec.grid, found.replaced, found.last, ids=2,
        scratch=spec.scratch,
    )  # fmt: skip


def decide(records: list[Record]) -> tuple[bool, str]:
    """Whether a core runs as the kernel, from this host's measurements of its signature, and
    why. The kernel is the prior (one dispatch instead of four or more, the scores kept in
    L1); IREE's dispatches replace it where ``xgen_mlir.tune`` measured them ``MIN_GAIN``
    faster, and where the kernel failed its measurement (wrong numbers, a crash). A
    measured lead of IREE's that did not make the model faster (rejected in the model) is
    not taken."""
    mine = [r for r in records if r.config.get("algorithm") == ATTENTION_ALGORITHM]
    if not mine:
        return True, "no measurement on this host: the kernel (xgen_mlir.tune measures it)"
    r = mine[-1]
    if r.detail.startswith(REJECTED_IN_MODEL):
        return True, f"IREE's measured lead not kept: {readable_detail(r.detail)}"
    if r.speedup is None or r.seconds is None or r.baseline_seconds is None:
        return False, f"the kernel's measurement: {r.status}{': ' + r.detail if r.detail else ''}"
    said = (
        f"measured kernel {r.seconds * 1e3:.3f} ms vs IREE {r.baseline_seconds * 1e3:.3f} ms "
        f"({r.speedup:.2f}x)"
    )
    if r.speedup * MIN_GAIN <= 1.0:
        return False, f"{said}: IREE's dispatches faster"
    return True, said


def attention_config() -> dict[str, Any]:
    """The config of an ``algorithm`` record for an attention core run as the kernel; its
    baseline is IREE's dispatches for the same core."""
    return {"kind": ALGORITHM, "algorithm": ATTENTION_ALGORITHM, "compute": "f32"}


def _scope(module_op: ir.Operation, opts: AttentionKernelOptions) -> list[ir.Operation]:
    scope = {f for f in opts.functions.split(",") if f}
    bmms = ops_named(module_op, "linalg.batch_matmul")
    return [b for b in bmms if not scope or function_of(b) in scope]


def _cores(
    module_op: ir.Operation, ev: ConstEval, opts: AttentionKernelOptions
) -> Iterator[tuple[ir.Operation, Found | NoMatch]]:
    """Each Q K^T batch matmul in scope with the core it starts, or why it starts none; a
    core's P V is not offered again. The caller may install a core before the next one."""
    bmms = _scope(module_op, opts)
    done: set[int] = set()  # P V batch matmuls of cores found (by index: maybe erased since)
    for i, bmm in enumerate(bmms):
        if i in done:
            continue
        try:
            found = _match(module_op, bmm, ev, opts)
        except NoMatch as e:
            yield bmm, e
            continue
        done.update(j for j, b in enumerate(bmms) if j > i and b == found.pv)
        yield bmm, found


def candidates(module_op: ir.Operation, vector_bits: int) -> list[Found]:
    """Every core the kernel takes (what ``tuning/choices.py`` measures), unchanged."""
    opts = AttentionKernelOptions(vector_bits=vector_bits)
    with module_op.context:
        ev = ConstEval(module_op)
        return [f for _, f in _cores(module_op, ev, opts) if isinstance(f, Found)]


@register_pass(
    "xgen-attention-kernels",
    "Lower each f32 attention core (Q K^T, score ops, softmax, P V and the views around "
    "them) to one dispatch of a generated C kernel that keeps the scores in L1.",
    AttentionKernelOptions,
)
def attention_kernels(module_op: ir.Operation, opts: AttentionKernelOptions | None) -> Counter:
    opts = opts or AttentionKernelOptions()
    mode = str(opts.enable).lower()
    if mode not in MODES:
        raise PassFailure(f"enable={opts.enable!r} is not one of {', '.join(MODES)}")
    counts: Counter[str] = Counter()
    bmms = _scope(module_op, opts)
    if not bmms or mode == "false":
        return counts
    if not opts.toolchain().available():
        warn_fallback(
            f"xgen-attention-kernels: C compiler '{opts.cc}' not found; attention stays with IREE"
        )
        return Counter({"kept: no C compiler": len(bmms)})
    choices = (CHOICES.get() or load_choices(opts.db, opts.threads)) if mode == "tuned" else None
    with module_op.context:
        ev = ConstEval(module_op)
        for bmm, found in _cores(module_op, ev, opts):
            where = format_location(bmm.location)
            if isinstance(found, NoMatch):
                counts[f"kept: {found}"] += 1
                if opts.verbose:
                    print(f"xgen-attention-kernels: {where}: kept: {found}", file=sys.stderr)
                continue
            if choices is not None:
                sig, desc = found.signature()
                use, why = decide(choices.records.get(sig, []))
                choices.log.append((desc, "xgen_attention" if use else "IREE", why))
                if opts.verbose:
                    print(f"xgen-attention-kernels: {where}: {desc}: {why}", file=sys.stderr)
                if not use:
                    counts["kept: IREE's dispatches (tuned)"] += 1
                    continue
            _install(module_op, found, opts)
            counts["attention kernels"] += 1
            if found.spec.score:
                counts["with their score ops"] += 1
            if found.spec.bf16:
                counts["with bf16 products"] += 1
            if found.spec.amx:
                counts["in AMX tiles"] += 1
            if opts.verbose:
                print(f"xgen-attention-kernels: {where}: generated kernel", file=sys.stderr)
    return counts
