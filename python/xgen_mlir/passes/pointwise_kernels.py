"""xgen-pointwise-kernels: 1x1 convs over few pixels as generated kernels without a row tile.

Why: IREE's data tiling computes a matmul in tiles of ``row-tile`` rows (by default the
target's f32 lanes, as IREE's x86 f32 tiles have them: 16 with AVX-512, 8 with AVX2), so a
1x1 conv over a 7x7 image (49 rows) does the work of 64 on AVX-512: MobileNetV2's seven 7x7
1x1 convs run at 140-160 of the 205 GFLOP/s sgemm rate. The kernel (``codegen/pointwise.py``)
blocks the rows by a divisor of M instead and runs at the FMA peak on one core. It fires
where the padding IREE would add is at least ``min-padding`` of M (49 rows: 31% with
AVX-512, 14% with AVX2; 196 rows: 6% / 2%, left to IREE). On an AVX2 EPYC, MobileNetV2 with
the kernels sized for AVX2 ran 10.5 ms against 11.6 ms without them (median of 6 rounds).

The f32 convs over whole row tiles (which the padding rule leaves) are one choice for the
model (option ``convs``): alone, the kernel beat IREE's matmul on each such conv measured,
but in the model it went both ways on one host, so under ``tuned`` (the default)
``xgen_mlir.tune`` measures the model both ways and ``compile()`` follows this host's record
(``_decide_every``); ``every`` and ``padded`` force one. Any conv with few output channels
over many rows gets workgroups along its rows too (``codegen.pointwise.row_chunks``).

What it matches (NHWC, after ``xgen-nhwc-convs``): ``linalg.conv_2d_nhwc_hwcf`` with a 1x1
constant filter, stride 1, a per-channel constant bias (the accumulator init), any static
batch (its images are more rows: M = N x H x W, and the padding test is on that M), static
f32; then the single-use elementwise activations after it that translate to C
(``kernel_match.activation_c``: comparisons with the IR's predicates, select, arithmetic),
with the bf16 kernels also the elementwise ops ``epilogue_c`` translates (exp, erf, tanh
through ``codegen.block_sparse.math_c``; a DAG that reads the conv's output twice, as
EfficientNet's SiLU, ``x * sigmoid(x)``, does: ``_math_epilogue``), and an add of another
tensor of the same shape (a residual), followed through torch-mlir's layout transposes. A
conv followed by an elementwise op the kernel cannot take stays with IREE, which fuses that
op into its dispatch.
The conv, activations and add become one call; the add's layout is restored with a
transpose of the kernel's result where it was not NHWC.

It also takes ``linalg.matmul`` with fewer than 4 rows and a constant right-hand side (a
classifier head: pool -> flatten -> linear; its rows are the batch, so a batch of 4 or more
is a real matmul, left to IREE's tiles), reading the weights packed in 64-column panels,
four independent accumulators per row. Measured in the model against IREE with xgen_mlir's
gemv tiles (``fusion/gemv_tiling.py``): ResNet-18's 512 -> 1000 0.085-0.090 -> 0.059-0.065
ms; MobileNetV2's 1280 -> 1000 reads 5 MB and is bound by DRAM, 0.11-0.21 ms for both,
depending on the neighbours' traffic. The bias add after the matmul (a constant vector along
the columns) is taken in and added after the sum, as the IR does.

Numerics: each output is a dot product summed over k in order, then the bias where the IR
adds it after the product, the activation and the add as the IR has them.

The kernels read and write f32: an op with any other element type among its operands and
results (an fp16 or bf16 model's convs, which torch-mlir gives f16 inputs and an f32
accumulator) or whose result is converted to another type right after it (the truncf after
an fp16 model's f32 head) stays with IREE, counted with that reason.

With ``precision=bf16`` on a 512-bit target the products are bf16 (``vdpbf16ps``: weights
rounded to bf16 at compile time, each block of input rows rounded as it is read, f32 sums)
and every 1x1 conv is taken, whatever IREE would pad: IREE's contraction demotion does not
reach convs, and its bf16 matmuls need packs around them (1x1 convs written as named matmuls
so IREE demoted them made MobileNetV2 bf16 slower, 5.8 against 4.8-5.0 ms). MobileNetV2 in
bf16, in-process: 4.40-4.90 -> 3.65-3.69 ms (docs/precision.md). The bf16 kernels also take a
filter computed at run time as ``W[k, n] * s[k]`` with ``W`` constant (``scaled_filter``: a
squeeze-excite's scale that xgen-scale-to-weights moved onto the project conv's weights, which
left IREE an f32 matmul): ``W`` is packed as usual and the rows are multiplied by ``s`` as
they are rounded. EfficientNet-B0 in bf16, 9 of its 11 such convs, paired in-process rounds
(Zen 4): 6.55 -> 5.94 ms (ratio 0.909-0.924).
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial

import numpy as np

from .._mlir import ir
from ..codegen.pointwise import (
    VL,
    PointwiseSpec,
    generate,
    pack_weights,
    row_chunks,
    unsupported,
)
from ..codegen.toolchain import ToolchainOptions, compile_object
from ..diagnostics import format_location, warn_fallback
from ..irutil import ops_named
from ..target import simd_lanes, vector_registers
from ..tunedb import ALGORITHM
from .byoc_offload import group_signature, group_use
from .consteval import ConstEval
from .epilogue_c import Epilogue, epilogue
from .generic_util import (
    body,
    has_default_maps,
    is_elementwise,
    num_uses,
    producer,
    tensor_shape,
)
from .kernel_call import free_symbol, install_kernel
from .kernel_match import (
    NoMatch,
    activation_c,
    bias_add,
    conv_1x1,
    residual_add,
    static_f32,
    tensor_input,
)
from .registry import PassFailure, register_pass
from .scale_to_weights import split_scale

# the convs option's values (PointwiseOptions.convs), and the tuning database's group of the
# convs it decides (tuning/choices.py: tune_pointwise_convs)
CONVS = ("tuned", "every", "padded")
GROUP_PREFIX = "pointwise kernels of"
GROUP_ALGORITHM = "pointwise kernels"

# The kernels are generated for a static number of rows (batch x pixels); a dynamic batch or
# size is IREE's (whose matmul takes it as fast as at a static shape: nothing is lost that the
# pruning bought, so no warning)
DYNAMIC = "dynamic shape (the kernels take static shapes)"


@dataclass
class PointwiseOptions(ToolchainOptions):
    vector_bits: int = 512  # the target's SIMD width: the kernels' vectors and register block
    row_tile: int = 0  # rows of IREE's data-tiled f32 matmul tile; 0: the target's f32 lanes
    min_padding: float = 0.1  # fire where IREE pads M by at least this fraction of M
    matvec: bool = True  # also take matmuls of fewer than 4 rows (classifier heads)
    verbose: bool = False  # print every replaced conv to stderr
    # bf16: bf16 products (AVX512-BF16 dot products, f32 sums) on 512-bit targets, and every
    # 1x1 conv, whatever IREE would pad (see bf16_kernels)
    precision: str = "fp32"
    # the target has bf16 matrix tiles (AMX-BF16): see bf16_kernels
    bf16_tiles: int = 0
    # which f32 1x1 convs over whole row tiles (those min_padding leaves) also run as kernels:
    # "tuned" (as this host's record of the model's group says, else none), "every", "padded"
    # (none: the padding rule alone); see _decide_every
    convs: str = "tuned"

    def bf16_kernels(self) -> bool:
        """Whether the kernels compute bf16 products: ``precision=bf16`` (which the pipeline
        allows only on a CPU with bf16 dot products or AMX) on a 512-bit target without bf16
        matrix tiles. With them (an Intel Xeon with AMX) the vdpbf16ps kernels lost to the
        f32 ones: MobileNetV2 in bf16 4.59 ms against 3.47 in fp32, its 1x1 convs 2.45 ms
        against 1.83 (in-process medians, 2 threads). There the products run in the tiles
        instead (``amx_kernels``)."""
        return self.precision == "bf16" and self.vector_bits == 512 and not self.bf16_tiles

    def amx_kernels(self) -> bool:
        """Whether the kernels multiply in AMX tiles: ``precision=bf16`` on a 512-bit target
        with bf16 matrix tiles."""
        return self.precision == "bf16" and self.vector_bits == 512 and bool(self.bf16_tiles)

    def bf16_products(self) -> bool:
        """Whether the kernels compute bf16 products (in dot products or in tiles), taking
        every 1x1 conv."""
        return self.bf16_kernels() or self.amx_kernels()


@dataclass
class Match:
    conv: ir.Operation  # the conv or matmul
    spec_args: tuple[int, int, int]  # m, k, n
    weights: np.ndarray  # [k, n]
    bias: np.ndarray  # [n]
    act: list[str]
    replaced: list[ir.Operation]  # conv, activations, add: for the FLOPs count
    end: ir.Operation  # the op whose result the call's result replaces
    residual: ir.Value | None  # the other addend, NHWC
    perm: list[int] | None  # the add's layout (dim i is NHWC dim perm[i])
    bias_after: bool = False  # the bias is the IR's add after the product
    scale: ir.Value | None = None  # a per-input-channel scale of the rows (scaled_filter)


def padding(m: int, row_tile: int) -> float:
    """The fraction of ``m`` that tiles of ``row_tile`` rows add. Fewer rows than a tile get
    IREE's narrow tiles (1, 2, 4, 8 rows) and no kernel: a squeeze-excite block's convs on
    one pooled pixel are matrix-vector products that IREE runs as such."""
    return (-m % row_tile) / m if m > row_tile else 0.0


def _element_types(op: ir.Operation) -> set[str]:
    return {
        str(v.type.element_type)
        for v in [*op.operands, *op.results]
        if isinstance(v.type, ir.ShapedType)
    }


def f32_only(op: ir.Operation) -> None:
    """NoMatch unless every tensor ``op`` reads and writes is f32 (the kernels' only type)."""
    other = sorted(_element_types(op) - {"f32"})
    if other:
        raise NoMatch(f"{'/'.join(other)} tensors (the kernel computes f32 only)")


def scaled_filter(conv: ir.Operation, ev: ConstEval) -> tuple[np.ndarray, ir.Value] | None:
    """The constant 1x1 filter ``W`` and the run-time scale ``s`` of a filter computed as
    ``W[0, 0, k, n] * s[k]`` (what xgen-scale-to-weights makes of a squeeze-excite's
    ``conv(x * s, W)``; its own matcher, ``split_scale``, along the filter's input channels),
    or None. The kernel multiplies its rows by ``s`` instead, as it rounds them, and keeps
    ``W`` packed at compile time."""
    value = conv.operands[1]
    mul = producer(value)
    if mul is None or mul.name != "linalg.generic" or num_uses(value) != 1:
        return None
    split = split_scale(mul, 2)  # hwcf: the filter's input channels are dim 2
    if split is None:
        return None
    w_value, s, _ = split
    w = ev.value(w_value)
    shape = tensor_shape(s)
    if w is None or w.dtype != np.float32 or w.ndim != 4 or w.shape[:2] != (1, 1):
        return None
    if shape is None or int(np.prod(shape)) != w.shape[2]:
        return None
    return w, s


def match_conv(
    conv: ir.Operation, ev: ConstEval, vl: int = VL, math: bool = False, scaled: bool = False
) -> Match:
    """The conv with the activations and residual add it takes in, or NoMatch. ``scaled``:
    also a filter ``scaled_filter`` takes apart (the bf16 kernels)."""
    f32_only(conv)
    found = scaled_filter(conv, ev) if scaled else None
    w, b = conv_1x1(conv, ev, "pointwise", None if found is None else found[0])
    n_, h, wd, k = static_f32(conv.operands[0])
    shape = static_f32(conv.results[0])
    m, n = n_ * h * wd, shape[3]  # NHWC: a batch's images are more rows, [N*H*W, C]
    replaced = [conv]
    act, end, residual, perm = _epilogue(conv.results[0], ev, replaced, True, math)
    why = unsupported(m, k, n, residual is not None, vl)
    if why:
        raise NoMatch(why)
    scale = None if found is None else found[1]
    return Match(conv, (m, k, n), w, b, act, replaced, end, residual, perm, scale=scale)


def match_matmul(mm: ir.Operation, ev: ConstEval, vl: int = VL, math: bool = False) -> Match:
    """A matmul with a constant right-hand side, with its bias add and the activations after
    it, or NoMatch."""
    f32_only(mm)
    if not has_default_maps(mm):
        raise NoMatch("a matmul with transposing or broadcasting indexing maps")
    m, k = static_f32(mm.operands[0])
    n = static_f32(mm.results[0])[1]
    w = ev.value(mm.operands[1])
    if w is None or w.dtype != np.float32:
        raise NoMatch("the matmul's right-hand side is not a constant f32 matrix")
    init = ev.per_channel_init(mm.operands[2], 1)
    if init is None:
        raise NoMatch("the matmul's accumulator is not a per-column constant")
    replaced = [mm]
    value, bias_after = mm.results[0], False
    found = bias_add(mm, ev) if not init.any() else None
    if found is not None:
        add, init = found
        bias_after, value = True, add.results[0]
        replaced.append(add)
    # a one-row product rounded back to integers: xgen-integer-in-float converts one-row
    # matmuls only for this kernel, so the rounding may be a dispatch of its own
    act, end, _, _ = _epilogue(value, ev, replaced, False, math, leave_consumer=True)
    return Match(mm, (m, k, n), w, init, act, replaced, end, None, None, bias_after)


def _epilogue(
    value: ir.Value,
    ev: ConstEval,
    replaced: list[ir.Operation],
    residual_ok: bool,
    math: bool = False,
    leave_consumer: bool = False,
) -> tuple[list[str], ir.Operation, ir.Value | None, list[int] | None]:
    """The single-use activations after ``value`` that translate to C and (with
    ``residual_ok``) the residual add after them, appended to ``replaced``: their C, the op
    the kernel's result replaces, the other addend and the add's layout."""
    act = []
    while num_uses(value) == 1:  # the activations after it, as far as they translate
        op = next(iter(value.uses)).owner.operation
        if not is_elementwise(op):
            break
        chain = tensor_input(op, op.results[0])
        if chain is None and len(op.results) == 1:
            elem = ir.ShapedType(op.results[0].type).element_type
            if isinstance(elem, ir.FloatType):  # a truncf to f16 / bf16 after an f32 product
                raise NoMatch(f"its result is converted to {elem} (the kernel writes f32 only)")
        if chain is None or chain != value:
            break
        try:
            stmt = activation_c(op, value, ev)
        except NoMatch:
            break
        act.append(stmt)
        replaced.append(op)
        value = op.results[0]
    more = _math_epilogue(value, ev) if math else None
    if more is not None:  # the ops activation_c does not take (SiLU's exp): the whole DAG
        act += more.lines
        replaced += more.ops
        value = more.ops[-1].results[0]
    end, residual, perm = replaced[-1], None, None
    add = residual_add(value) if residual_ok else None
    if add is not None:
        end, perm, residual = add
        replaced.append(end)
    elif num_uses(value) == 1 and is_elementwise(next(iter(value.uses)).owner.operation):
        consumer = next(iter(value.uses)).owner.operation
        if not (leave_consumer and _rounds(consumer, value)):
            # IREE fuses an elementwise consumer into the product's dispatch; the kernel
            # would leave it a dispatch of its own
            raise NoMatch("an elementwise op after it that the kernel does not translate")
        # else (a matrix-vector product): the rounding of a contraction xgen-integer-in-float
        # made f32 (back to i32, or with xgen-elide-int-roundtrips the whole requantize in
        # f32), a dispatch of its own: IREE's f32 form of a one-row matmul failed its
        # dispatch steps, and its integer form is slow
    return act, end, residual, perm


def _rounds(op: ir.Operation, value: ir.Value) -> bool:
    """Whether elementwise ``op`` rounds ``value`` (``math.roundeven`` of its element): how
    xgen-integer-in-float ends a contraction it computed in f32."""
    args = [a for v, a in zip(op.operands, body(op).arguments, strict=False) if v == value]
    return any(u.owner.operation.name == "math.roundeven" for a in args for u in a.uses)


def _math_epilogue(value: ir.Value, ev: ConstEval) -> Epilogue | None:
    """The elementwise ops after ``value`` as ``epilogue_c`` translates them (exp, erf, tanh
    through ``codegen.block_sparse.math_c``; a DAG that reads the value more than once, as
    torch-mlir's SiLU, ``x * sigmoid(x)``, does), when it takes any; scalar constants only
    (no per-column constants or tensors), else None.

    Only for the bf16 kernels (``math``): there the other way is IREE's f32 code, and
    EfficientNet-B0 in bf16 ran 12.82-13.15 -> 11.96-12.34 ms with its SiLU convs as kernels
    (in-process, Zen 4, a slow hour). In fp32 IREE's dispatch with the activation fused (and
    xgen-matmul-tiles' tiles) was as fast or faster: 11.42-11.53 against 11.51-11.55 ms."""
    users = [u.owner.operation for u in value.uses]
    if not users or not all(is_elementwise(u) for u in users):
        return None
    more = epilogue(value, ev, None)
    return more if more and not more.columns and not more.tensors else None


def replace(
    module_op: ir.Operation, match: Match, symbol: str, opts: PointwiseOptions
) -> PointwiseSpec:
    """Replace the conv (with its activations and add) by a call of its generated kernel."""
    m, k, n = match.spec_args
    bf16 = opts.bf16_products()
    spec = PointwiseSpec(
        symbol,
        m,
        k,
        n,
        tuple(match.act),
        match.residual is not None,
        match.bias_after,
        simd_lanes(opts.vector_bits),
        vector_registers(opts.vector_bits),
        bf16=bf16,
        row_chunks=row_chunks(
            m, k, n, vl=simd_lanes(opts.vector_bits), registers=vector_registers(opts.vector_bits)
        ),
        amx=opts.amx_kernels(),
        scaled=match.scale is not None,
    )
    packed = pack_weights(match.weights, match.bias, spec)
    obj = compile_object(generate(spec), opts.toolchain(), symbol)
    inputs = [match.conv.operands[0], packed]
    inputs += [v for v in (match.scale, match.residual) if v is not None]
    install_kernel(
        module_op,
        symbol,
        str(obj),
        opts.object_format,
        inputs,
        match.conv.results[0].type,
        spec.grid,
        match.replaced,
        match.end,
        match.perm,
        "xgen_pointwise_weights",
        ids=2,
    )
    return spec


def _candidates(
    module_op: ir.Operation, opts: PointwiseOptions, every: bool = False
) -> Iterator[tuple]:
    """(op, rows, matcher, kind) for every conv and matmul the options let the pass try, in
    program order; with ``every``, also the f32 convs over whole row tiles."""
    names = ("linalg.conv_2d_nhwc_hwcf",) + (("linalg.matmul",) if opts.matvec else ())
    for op in ops_named(module_op, *names):
        ty = ir.RankedTensorType(op.results[0].type)
        if not ty.has_static_shape:
            yield op, 0, None, DYNAMIC
            continue
        try:
            shape = static_f32(op.results[0])
        except NoMatch:
            continue
        if op.name == "linalg.matmul":
            if len(shape) == 2 and shape[0] < 4:
                yield op, shape[0], match_matmul, "matrix-vector products"
            continue
        rows = shape[0] * shape[1] * shape[2]  # the batch's images one after another
        row_tile = opts.row_tile or simd_lanes(opts.vector_bits)
        # bf16: every conv over more rows than a tile (fewer: a squeeze-excite conv on one
        # pooled pixel, a matrix-vector product IREE runs as such); 16: the off switch
        every_conv = (every or opts.bf16_products()) and opts.min_padding < 1 and rows > row_tile
        if every_conv or padding(rows, row_tile) >= opts.min_padding:
            yield op, rows, partial(match_conv, scaled=opts.bf16_kernels()), "convs"


def every_extras(module_op: ir.Operation, opts: PointwiseOptions, ev: ConstEval) -> list:
    """The convs ``convs=every`` adds to what the padding rule takes: f32 1x1 convs over whole
    row tiles that the kernel can take (the bf16 kernels take every conv already)."""
    if opts.bf16_products() or not opts.toolchain().available():
        return []
    ruled = [op for op, *_ in _candidates(module_op, opts)]
    extras = []
    for op, _, matcher, _ in _candidates(module_op, opts, every=True):
        if matcher is None or op in ruled:
            continue
        try:
            match = matcher(op, ev, simd_lanes(opts.vector_bits), True)
        except NoMatch:
            continue
        if not _feeds_elementwise_only(match.end.results[0]):
            extras.append(op)
    return extras


def _feeds_elementwise_only(value: ir.Value) -> bool:
    """Whether every use of ``value`` (the kernel's result) is an elementwise op, more than
    one: a DAG such as torch-mlir's SiLU (``x * sigmoid(x)``), which IREE fuses into the
    conv's dispatch and the f32 kernel would leave as dispatches of their own, its output
    written and read back (EfficientNet-B0's 112x112x96 expand: 4.8 MB each way)."""
    users = [u.owner.operation for u in value.uses]
    return len(users) > 1 and all(is_elementwise(u) for u in users)


def _decide_every(extras: list, opts: PointwiseOptions) -> bool:
    """Whether ``extras`` (``every_extras``) run as kernels: ``every``, not ``padded``; under
    ``tuned`` as this host's record of their group says (``xgen_mlir.tune`` compiles the model
    both ways and times them in the model: ``tuning/choices.py: tune_pointwise_convs``), and
    without one the padding rule (none of them). Per dispatch the kernel beat IREE's matmul
    on such convs, but in the model it goes both ways on one host (an AMD Zen 4, paired
    rounds: the PP-OCRv4 recognizer 0.73x, its detector 0.93x, MobileNetV2 1.06x,
    EfficientNet-B0 1.05x; docs/measurements.md), so no rule decides it. The decision goes
    to the report (``report.tuning.choices``)."""
    from .winograd_convs import CHOICES  # (it imports the BYOC pass, which imports much)

    if opts.convs not in CONVS:
        raise PassFailure(f"convs must be one of {', '.join(CONVS)}, got '{opts.convs}'")
    if opts.convs != "tuned" or not extras:
        return opts.convs == "every"
    choices = CHOICES.get()
    if choices is None:
        return False
    signature = group_signature(GROUP_PREFIX, extras, "convs", opts.precision)
    rule = "1x1 convs whose rows IREE's tiles pad"
    measured, why = group_use(choices.records.get(signature, []), GROUP_ALGORITHM, rule)
    use = measured == "every"
    choices.log.append((signature, f"{'kernels' if use else 'IREE'} ({len(extras)} convs)", why))
    return use


def pointwise_convs_config(use: str) -> dict[str, str]:
    """The ``algorithm`` record of the group of convs ``every_extras`` finds, run by ``use``:
    ``every`` (the kernels) or ``padded`` (IREE's matmul, the padding rule's choice)."""
    return {"kind": ALGORITHM, "algorithm": GROUP_ALGORITHM, "use": use}


def pointwise_kernels(module_op: ir.Operation, opts: PointwiseOptions | None = None) -> Counter:
    """Replace every 1x1 conv IREE would pad by at least ``min_padding`` (and, as ``convs``
    decides, the others over whole row tiles) and every matmul of fewer than 4 rows; returns
    counts of the replaced ops and of the reasons others were not."""
    opts = opts or PointwiseOptions()
    toolchain = opts.toolchain()
    counts: Counter[str] = Counter()
    with module_op.context:
        ev = ConstEval(module_op)
        extras = every_extras(module_op, opts, ev)
        work = list(_candidates(module_op, opts))
        if _decide_every(extras, opts):
            ruled = [c[0] for c in work]
            work = [c for c in _candidates(module_op, opts, True) if c[0] in ruled + extras]
        for op, m, matcher, kind in work:
            if matcher is None:
                counts[f"not replaced: {kind}"] += 1
                continue
            # the extras take in the DAGs epilogue_c translates (SiLU, hard-swish), as the bf16
            # kernels do: left to IREE they would be dispatches of their own
            math = opts.bf16_products() or op in extras
            try:
                match = matcher(op, ev, simd_lanes(opts.vector_bits), math)
            except NoMatch as e:
                counts[f"not replaced: {e}"] += 1
                continue
            if not toolchain.available():
                counts[f"not replaced: C compiler '{opts.cc}' not found"] += 1
                continue
            where = format_location(op.location)
            symbol = free_symbol(module_op, "xgen_pointwise", 1)
            spec = replace(module_op, match, symbol, opts)
            counts[f"{kind} replaced"] += 1
            if spec.act:
                counts["of them with their activations"] += 1
            if spec.residual:
                counts["of them with a residual add"] += 1
            if spec.scaled:
                counts["of them with their input's per-channel scale"] += 1
            if opts.verbose:
                extra = " + activation" * bool(spec.act) + " + residual" * spec.residual
                print(
                    f"xgen-pointwise-kernels: {where}: {m} rows x {spec.k} -> {spec.n}{extra} "
                    f"as {symbol}, {spec.panels} panels",
                    file=sys.stderr,
                )
    if any(k.startswith("not replaced: C compiler") for k in counts):
        warn_fallback(
            f"xgen-pointwise-kernels: C compiler '{opts.cc}' not found; "
            "1x1 convs and matrix-vector products stay with IREE"
        )
    return counts


@register_pass(
    "xgen-pointwise-kernels",
    "1x1 convs over few pixels (+ activations, + residual add) and matrix-vector products "
    "(+ bias, + activations) as generated C kernels.",
    PointwiseOptions,
)
def _pass(module_op: ir.Operation, opts: PointwiseOptions | None) -> Counter:
    return pointwise_kernels(module_op, opts)
