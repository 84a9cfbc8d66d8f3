"""xgen-fold-batchnorm: fold eval-mode batch norm into the producing conv's / matmul's weights.

Why: torch-mlir lowers an eval-mode ``BatchNorm2d`` / ``BatchNorm1d`` to four full-size
elementwise ops after the convolution or linear layer (``x - mean``, ``* 1/sqrt(var + eps)``,
``* gamma``, ``+ beta``, the per-channel factor itself computed by small generics on the
constant parameters). In inference these are a per-channel affine map ``y = a*x + b`` with
constant ``a, b``, so ``conv(x, W) + bias`` followed by it equals ``conv(x, W*a) +
(a*bias + b)``: the normalisation disappears, and the network does the work of the conv
alone (ResNet-18 and MobileNetV2 have a batch norm after every convolution).

What it matches: a ``linalg.conv_2d_nchw_fchw``, ``conv_2d_nhwc_hwcf``,
``depthwise_conv_2d_nchw_chw``, ``matmul``, ``batch_matmul`` or ``xgen_sparse.pattern_conv2d``
(its bias operand takes the shift; scaling keeps its weights on their patterns) whose weights
evaluate to a constant (through reshapes/transposes, see ``consteval``) and whose init is a
zero/constant fill or a per-channel constant bias broadcast, followed by a chain of elementwise
generics each doing ``+ c``, ``- c``, ``c - x``, ``* c`` or ``/ c`` with ``c`` a constant that
varies at most along the output-channel dimension (a linear layer's bias add is absorbed too).
The chain is folded only if it scales (a multiply or divide: otherwise nothing is gained) and
every link, the contraction's result included, has exactly one use. The contraction is then
given new constant weights ``W*a`` (``a`` along the output-channel axis) and a broadcast bias
init ``a*bias0 + b``; the chain is erased.

Dynamic shapes: folded the same (the constants vary only along the channels, which must be
static); the new init takes the dynamic sizes of the old one.

Numerics: ``a`` and ``b`` are accumulated in float64 and rounded once; the result differs
from the unfolded graph by float reassociation only (the constant multiply is distributed over
the contraction's sum). f32 only.
"""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass

import numpy as np

from .._mlir import ir
from ..diagnostics import format_location
from ..dialects.sparse import PATTERN_CONV
from ..irutil import constant_op, ops_named
from .consteval import ConstEval, NotConstant, loop_view
from .generic_util import (
    body_ops,
    channel_init,
    erase_dead_tree,
    has_default_maps,
    indexing_maps,
    is_dynamic,
    is_elementwise,
    is_identity,
    map_dims,
    mixed_sizes,
    num_uses,
)
from .registry import register_pass

# op name -> (output-channel dim of the result, output-channel axis of the weights)
CONTRACTIONS = {
    "linalg.conv_2d_nchw_fchw": (1, 0),
    "linalg.conv_2d_nhwc_hwcf": (3, 3),
    "linalg.depthwise_conv_2d_nchw_chw": (1, 0),
    "linalg.matmul": (1, 1),
    "linalg.batch_matmul": (2, 2),
    PATTERN_CONV: (1, 0),  # bias is a 1-D operand, not an accumulator init
}
_AFFINE = ("arith.addf", "arith.subf", "arith.mulf", "arith.divf")


@dataclass
class FoldBatchNormOptions:
    verbose: bool = False  # print what was folded to stderr
    # fold only into xgen_sparse.pattern_conv2d (the cpu target: the folded scale keeps the
    # pattern's zeros and the kernel's bias applies the shift, so the norm costs nothing there)
    sparse_only: bool = False


def _affine_step(user: ir.Operation, chain: ir.Value, ch_dim: int, ev: ConstEval):
    """(op name, chain-operand position, per-channel constant) if ``user`` is one link of a
    per-channel affine chain on ``chain``, else None."""
    if not is_elementwise(user) or len(user.operands) != 3 or user.results[0].type != chain.type:
        return None
    ops = body_ops(user)
    if len(ops) != 2 or ops[0].name not in _AFFINE or ops[1].operands[0] != ops[0].results[0]:
        return None
    args = list(user.regions[0].blocks[0].arguments)
    if [v for v in ops[0].operands] not in ([args[0], args[1]], [args[1], args[0]]):
        return None
    maps = indexing_maps(user)
    pos = 0 if user.operands[0] == chain else 1
    if user.operands[pos] != chain or user.operands[1 - pos] == chain or not is_identity(maps[pos]):
        return None
    dims = map_dims(maps[1 - pos])
    assert dims is not None  # an input map of an elementwise op (is_elementwise)
    if any(d is not None and d != ch_dim for d in dims):
        return None
    const = ev.value(user.operands[1 - pos])
    if const is None or const.dtype != np.float32:
        return None
    loops = list(ir.RankedTensorType(chain.type).shape)
    try:
        full = loop_view(const, dims, loops)
    except NotConstant:
        return None
    vec = full[tuple(slice(None) if d == ch_dim else 0 for d in range(len(loops)))]
    chain_pos = 0 if ops[0].operands[0] == args[pos] else 1
    return ops[0].name, chain_pos, vec.astype(np.float64)


def fold_one(op: ir.Operation, ev: ConstEval) -> str | None:
    """Fold the affine chain after contraction ``op``; returns what was done, or None."""
    ch_dim, w_axis = CONTRACTIONS[op.name]
    out_ty = ir.RankedTensorType(op.results[0].type)
    sparse = op.name == PATTERN_CONV
    if str(out_ty.element_type) != "f32" or not (sparse or has_default_maps(op)):
        return None
    channels = out_ty.shape[ch_dim]
    if is_dynamic(channels):  # a dynamic batch or image size is fine, dynamic channels not
        return None
    a, b = np.ones(channels), np.zeros(channels)
    chain, links, scaled = op.results[0], [], False
    while num_uses(chain) == 1:
        user = next(iter(chain.uses)).owner.operation
        step = _affine_step(user, chain, ch_dim, ev)
        if step is None:
            break
        name, chain_pos, c = step
        if name == "arith.addf":
            b = b + c
        elif name == "arith.subf" and chain_pos == 0:
            b = b - c
        elif name == "arith.subf":
            a, b = -a, c - b
        elif name == "arith.mulf":
            a, b, scaled = a * c, b * c, True
        elif name == "arith.divf" and chain_pos == 0:
            a, b, scaled = a / c, b / c, True
        else:
            break  # c / x is not affine in x
        links.append(user)
        chain = user.results[0]
    if not scaled:
        return None
    weight = ev.value(op.operands[1])
    bias0 = ev.value(op.operands[2]) if sparse else ev.per_channel_init(op.operands[2], ch_dim)
    if weight is None or weight.dtype != np.float32 or bias0 is None:
        return None
    shape = [1] * weight.ndim
    shape[w_axis] = channels
    new_w = (weight.astype(np.float64) * a.reshape(shape)).astype(np.float32)
    new_b = (a * bias0 + b).astype(np.float32)
    old_w, old_init = op.operands[1], op.operands[2]
    with ir.InsertionPoint(op), op.location:
        w = constant_op(new_w, "xgen_bn_weight").result
        if sparse:
            init = constant_op(new_b, "xgen_bias").result
        else:
            sizes = mixed_sizes(old_init, range(len(out_ty.shape)))  # dynamic dims: tensor.dim
            init = channel_init(new_b, sizes, ch_dim, out_ty.element_type)
    op.replace_uses_of_with(old_w, w)
    op.replace_uses_of_with(old_init, init)
    chain_values = [op.results[0], *(link.results[0] for link in links)]
    leftovers = [v for link in links for v in link.operands if v not in chain_values]
    chain.replace_all_uses_with(op.results[0])
    for link in reversed(links):
        link.erase()
    erase_dead_tree([*leftovers, old_w, old_init])
    return f"{len(links)} elementwise ops folded"


def fold_batchnorm(module_op: ir.Operation, opts: FoldBatchNormOptions | None = None) -> Counter:
    """Run the fold on every contraction; returns counts by contraction kind."""
    with module_op.context:
        opts = opts or FoldBatchNormOptions()
        ev = ConstEval(module_op)
        counts: Counter[str] = Counter()
        kinds = [PATTERN_CONV] if opts.sparse_only else list(CONTRACTIONS)
        for op in ops_named(module_op, *kinds):
            done = fold_one(op, ev)
            if done is not None:
                counts[op.name] += 1
                if opts.verbose:
                    where = format_location(op.location)
                    print(f"xgen-fold-batchnorm: {where}: {op.name}: {done}", file=sys.stderr)
        return counts


@register_pass(
    "xgen-fold-batchnorm",
    "Fold per-channel constant affine chains (eval-mode batch norm) into conv/matmul weights.",
    FoldBatchNormOptions,
)
def _pass(module_op: ir.Operation, opts: FoldBatchNormOptions | None) -> Counter:
    return fold_batchnorm(module_op, opts)
