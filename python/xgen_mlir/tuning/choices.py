"""Algorithm choices measured on this host: each conv ``xgen-winograd-convs`` could rewrite,
timed direct and as Winograd, the verdict kept in the tuning database.

Whether Winograd beats the direct conv depends on the host and the conv (an Intel Xeon ran
ResNet-18 24.4 -> 16.9 ms with every 3x3 conv as Winograd; elsewhere some convs get slower),
so it is measured rather than ruled. For one model: import it, run the target's graph steps
that come before the Winograd pass, and ask the pass which convs it can rewrite
(``winograd_convs.candidates``: its own matching, and the signature its ``tuned`` mode looks
up). Each signature is measured once: the conv with what the model computes around it (its
input's pad, its bias, the elementwise ops IREE fuses after it: a batch norm, a residual add,
a ReLU; the model's own weights) becomes one module of functions ``base`` (direct) and
``c0``, ``c1`` (the same conv as F(4x4, 3x3), F(2x2, 3x3)), compiled by the whole target
pipeline as a model would be, and ``tuning/measure.py``'s machinery runs them in a child
process (a crash or hang costs the child), compares each output with the direct conv's on the
same random inputs, and times whole calls interleaved round by round. A variant whose numbers
are off by more than ``WINOGRAD_TOLERANCE`` of the output's scale is recorded as
``wrong_numbers`` and never chosen.

Kernel libraries (BYOC) compete the same way: where oneDNN's plugin builds here, each conv
and each linear layer (a matmul with constant weights, ``winograd_convs.candidates`` with
``offload``) is also measured offloaded (``variants_module``: the slice as xgen-byoc-offload
makes it), against IREE's own code for the same slice ("direct" in the records and reports).
Which wins differs by host: on an AMD Zen 4, IREE's bf16 linear layers ran 1.3x faster than
oneDNN's; on an Intel Xeon, oneDNN reaches the AMX tiles that IREE's code does not.

Records are of kind ``tunedb.ALGORITHM`` (``{"kind": "algorithm", "algorithm":
"winograd", "m": 4}``, plus ``"gemm": "gemm"`` where its batched GEMM ran in xgen_mlir's
generated kernel), keyed by the conv's signature and the host, the direct conv's time
as their baseline; ``compile()`` under ``winograd=tuned`` rewrites a conv where one is
``tunedb.MIN_GAIN`` faster (``winograd_convs.decide_algorithm``).
"""

from __future__ import annotations

import contextlib
import re
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from .._mlir import ir
from ..analysis.flops import op_flops
from ..byoc import ONEDNN
from ..codegen.dispatch import EXECUTABLE_ATTR
from ..compiler import CompileOptions, CompileReport, _import, _int8_source, _target_options
from ..compiler import compile as compile_model
from ..fusion.tunable import captured_values, clone_remapped
from ..irutil import np_dtype
from ..passes.attention_kernels import AttentionKernelOptions, Found, attention_config
from ..passes.attention_kernels import candidates as attention_candidates
from ..passes.attention_kernels import decide as decide_attention
from ..passes.block_sparse import (
    MEASURED_MAX_DENSITY,
    BcsrKernelOptions,
    RaiseBlockOptions,
    block_config,
    block_records,
    block_structure,
    decide_block,
)
from ..passes.byoc_offload import SPLIT_GROUPS, SPLIT_PREFIX, is_integer, split_config
from ..passes.consteval import ConstEval
from ..passes.gemm_kernels import GemmKernelOptions
from ..passes.generic_util import transpose
from ..passes.integer_in_float import library_may_take_convs
from ..passes.nhwc_convs import to_nhwc
from ..passes.registry import get_pass
from ..passes.runner import run_steps
from ..passes.winograd_convs import (
    BLOCK_ALGORITHM,
    CONV_GROUP_PREFIX,
    TRANSFORMS,
    Candidate,
    WinogradOptions,
    allowed_variants,
    candidates,
    conv_group_config,
    decide_algorithm,
    epilogue,
    gemm_config,
    library_label,
    library_matches,
    live_records,
    offload_config,
    rewrite_conv,
    unmeasured_prior,
    variant_name,
    winograd_config,
)
from ..pipelines import load_pipeline
from ..target import host_threads
from ..tunedb import (
    ALGORITHM,
    MIN_GAIN,
    REJECTED_IN_MODEL,
    UNCHECKED_IN_MODEL,
    HostIdentity,
    Record,
    TuningDB,
    default_db_path,
)
from .measure import Measurement, MeasureSettings, _run

# Winograd's output differs from the direct conv's by more than reassociation (the transforms
# multiply by constants such as 1/6 and sum up to 36 terms); 10x the 1e-4 a tile config gets.
# A wrong transform is off by O(1) of the output's scale.
WINOGRAD_TOLERANCE = 1e-3
# A kernel library in bf16 rounds each operand to 8 bits of mantissa (precision="bf16"): its
# output is off by a few 1e-3 of the scale; a wrong primitive by O(1).
BF16_TOLERANCE = 3e-2
STEP = "xgen-winograd-convs"
BLOCK_STEP = "xgen-raise-block-linear"
# The generated GEMM kernel's panels per workgroup measured for each linear layer: one panel
# per workgroup balances small layers over the threads, two halve the x reads of large ones
GEMM_GROUPS = (1, 2)
GEMM_OPS = ("linalg.matmul", "linalg.conv_2d_nchw_fchw", "linalg.conv_2d_nhwc_hwcf")


@dataclass
class ConvChoice:
    """One conv (or linear layer) signature of a model: what was measured and what
    ``compile()`` will do."""

    signature: str
    description: str
    count: int  # ops of the model with this signature
    flops: int = 0  # of one such op (the order of measurement: ``measure_priority``)
    weight_bytes: int = 0  # of its weights (what makes one measurement slow: packing them)
    measured: list[Record] = field(default_factory=list)  # this host's records, all variants
    algorithm: str = "direct"  # "direct" or "winograd F(4x4)" ...
    why: str = ""
    new: bool = False  # measured in this call (not found in the database)
    # what compile() does before any measurement (the attention kernel is its cores' prior)
    prior: str = "direct"
    # a block-pruned layer's block and compact density (its block-sparse kernel is measured
    # too, and decides first: xgen-raise-block-linear runs before xgen-winograd-convs)
    block: tuple[int, int] | None = None
    density: float = 0.0
    # what the dense layer's prior is, where ``prior`` is the block kernel (the rule's)
    dense_prior: str = ""

    def times(self) -> dict[str, float | None]:
        """Milliseconds: the direct conv (median over the variants' batches) and each variant."""
        out: dict[str, float | None] = {}
        base = [r.baseline_seconds for r in self.measured if r.baseline_seconds]
        out["direct"] = float(np.median(base)) * 1e3 if base else None
        for r in self.measured:
            out[variant_name(r.config)] = r.seconds * 1e3 if r.seconds else None
        return out


# What one choice measurement costs, about: a few compiles of a small module (~5 s), plus
# packing and hashing its weights into each variant (GPT-2's 154 MB head took 58 s).
MEASURE_FIXED_S = 5.0
MEASURE_S_PER_MB = 0.35


def measure_priority(c: ConvChoice) -> float:
    """The layer's share of the model (count x FLOPs) per second of measuring it: a budget
    that ends early has measured the layers that cost the model most for their measuring
    cost (by count alone, a detector's two small 1x1 convs went before its 224-MFLOP 3x3
    one; by FLOPs alone, GPT-2's one 50257-wide head took a 5-minute tune's whole share of
    choices before its twelve-fold Linear layers)."""
    cost_s = MEASURE_FIXED_S + MEASURE_S_PER_MB * c.weight_bytes / 2**20
    return c.count * max(c.flops, 1) / cost_s


def _weight_bytes(op: ir.Operation) -> int:
    ty = ir.RankedTensorType(op.operands[1].type)
    if not ty.has_static_shape:
        return 0
    return int(np.prod(ty.shape)) * max(1, ty.element_type.width // 8)


def _graph_module(
    model: Any, example_inputs: Any, target: str, compile_options: dict[str, Any]
) -> ir.Module:
    """The model as the Winograd pass sees it: imported, then the target's graph steps
    before that pass."""
    opts = CompileOptions.from_kwargs(compile_options)
    if example_inputs is not None and not isinstance(example_inputs, (tuple, list)):
        example_inputs = (example_inputs,)
    if opts.precision == "int8":  # the model as compile() imports it: quantized
        model = _int8_source(model, example_inputs, opts, CompileReport())
    module, _ = _import(model, example_inputs, opts)
    if module is model:
        module = ir.Module.parse(str(module), module.context)
    values = {**opts.target_options, "winograd": "false", "offload": "none"}
    if _block_step(target, compile_options) is not None:
        # block-pruned layers stay Linear layers: their block-sparse kernel is a variant
        values["block_kernels"] = "false"
    elif load_pipeline(target).with_options(values).option_value("block_kernels") == "tuned":
        values["block_kernels"] = "true"  # not measured here: the rule, not a database's
    compiled = load_pipeline(target).with_options(opts.target_options)
    if compiled.option_value("integer_contractions") == "convs":
        # xgen-integer-in-float keeps integer convs a library may take (the compile's offload
        # option, not the "none" above): the convs stay as the compile will see them
        if library_may_take_convs(compiled.option_value("offload") or "none"):
            values["integer_contractions"] = "integer"
    steps = load_pipeline(target).with_options(values).pass_steps(opts.entry)
    at = next((i for i, s in enumerate(steps) if s.startswith(STEP)), None)
    if at is None:
        raise ValueError(f"target '{target}' has no {STEP} step: no algorithm to choose")
    run_steps(module, steps[:at], what=f"pipeline '{target}' (before {STEP})")
    return module


def _op(v: Any) -> Any:
    o = v.owner
    return o.operation if isinstance(o, ir.OpView) else o if isinstance(o, ir.Operation) else None


class _Slice:
    """The ops of one conv's standalone function, cut out of the model."""

    def __init__(self, cand: Candidate, roots: list[Any] | None = None, result: Any = None) -> None:
        """The conv (or matmul) with its pad and epilogue, or the ops ``roots`` (any order)
        with ``result`` the value the function returns."""
        self.memo: dict[Any, bool] = {}
        self.root = conv = cand.op
        self.keep: list[Any] = []  # ops cloned, in any order (sorted later)
        self.args: list[Any] = []  # values that become arguments
        if roots is None:
            pad = _op(conv.operands[0]) if "conv" in conv.name else None
            roots = [conv, *epilogue(conv)]
            if pad is not None and pad.name == "tensor.pad":
                roots.insert(0, pad)
            result = roots[-1].results[0]
        self.result = result
        produced = {r for o in roots for r in o.results}
        for o in roots:
            self.keep.append(o)
            for v in [*o.operands, *captured_values(ir, o)]:
                if v in produced:
                    continue
                if self._constant(v):
                    self._take(v)
                elif v not in self.args:
                    scalar = isinstance(v.type, ir.IntegerType | ir.FloatType)
                    if not isinstance(v.type, ir.RankedTensorType) and not scalar:
                        raise ValueError(f"{cand.description}: reads a {v.type} from outside")
                    self.args.append(v)  # (a scalar, e.g. dynamic quantization's zero point)

    def _constant(self, v: Any) -> bool:
        """Computed from constants only (a weight, a batch norm's parameters, a fill). Walked
        with a stack, not recursion: an activation's producers reach back through the whole
        model (GPT-2's 12 layers overflowed Python's recursion limit)."""
        stack = [v]
        while stack:
            top = stack[-1]
            if top in self.memo:
                stack.pop()
                continue
            o = _op(top)
            if o is None or o.name == "arith.constant":
                self.memo[top] = o is not None
                stack.pop()
                continue
            inputs = [*o.operands, *captured_values(ir, o)]
            if any(self.memo.get(x) is False for x in inputs):
                self.memo[top] = False
                stack.pop()
                continue
            todo = [x for x in inputs if x not in self.memo]
            if todo:
                stack.extend(todo)
                continue
            self.memo[top] = True
            stack.pop()
        return self.memo[v]

    def _take(self, v: Any) -> None:
        o = _op(v)
        if o in self.keep:
            return
        for x in [*o.operands, *captured_values(ir, o)]:
            self._take(x)
        self.keep.append(o)

    def function(
        self, module: ir.Module, name: str, order: dict[Any, int], nhwc: bool = False
    ) -> Any:
        """Clone the slice into ``module`` as public ``func.func @name``; returns its conv (or
        matmul). ``nhwc``: its 4-D activations in and out are NHWC (transposed to the slice's
        NCHW inside), as in a model that runs its convs NHWC: there the transposes around
        each conv cancel, and here they cancel against the conv's own."""

        def channels_last(t: Any) -> Any:
            if not nhwc or not isinstance(t, ir.RankedTensorType) or t.rank != 4:
                return t
            n, c, h, w = t.shape
            return ir.RankedTensorType.get([n, h, w, c], t.element_type)

        ops = sorted(self.keep, key=lambda o: order[o])
        with module.context, ir.Location.unknown():
            # a scalar read from outside is a 0-d tensor argument, extracted in the function
            types = [
                channels_last(a.type)
                if isinstance(a.type, ir.RankedTensorType)
                else ir.RankedTensorType.get([], a.type)
                for a in self.args
            ]
            ftype = ir.FunctionType.get(types, [channels_last(self.result.type)])
            fn = ir.Operation.create(
                "func.func",
                regions=1,
                attributes={
                    "sym_name": ir.StringAttr.get(name),
                    "function_type": ir.TypeAttr.get(ftype),
                },
            )
            module.body.append(fn)
            block = fn.regions[0].blocks.append(*ftype.inputs)
            mapping = dict(zip(self.args, block.arguments, strict=True))
            conv = None
            with ir.InsertionPoint(block):
                for a, b in zip(self.args, block.arguments, strict=True):
                    if not isinstance(a.type, ir.RankedTensorType):
                        extract = ir.Operation.create("tensor.extract", [a.type], [b])
                        mapping[a] = extract.results[0]
                    elif b.type != a.type:  # NHWC in: the slice reads NCHW
                        mapping[a] = transpose(b, [0, 3, 1, 2])
                for o in ops:
                    c = clone_remapped(ir, o, mapping)
                    if o == self.root:
                        conv = c
                out = mapping[self.result]
                if ftype.results[0] != out.type:  # NHWC out
                    out = transpose(out, [0, 2, 3, 1])
                ir.Operation.create("func.return", operands=[out])
        return conv


def variants_module(
    cand: Candidate,
    order: dict[Any, int],
    winograd: bool = True,
    offload: str | None = None,
    precision: str = "fp32",
    gemm_step: str | None = None,
    threads: int = 1,
    block: tuple[tuple[int, int], float, int] | None = None,
    nhwc: bool = False,
) -> tuple[ir.Module, list[dict[str, Any]]]:
    """One module of ``base`` (the direct conv, or matmul, with its pad, bias and epilogue;
    with ``nhwc``, an NCHW conv as the named NHWC conv between transposes, as a model that
    runs its convs NHWC has it: ``_runs_nhwc``)
    and ``c0``, ``c1`` ...: the same as Winograd F(m x m), one per transform that fits
    (``winograd``), then run by kernel library ``offload`` as xgen-byoc-offload makes it in
    the model (NHWC, the residual add and ReLU fused, split over ``threads`` workgroups) if
    the library takes it; and the
    config of each ``c`` function, in order; with ``gemm_step`` (the target's
    xgen-gemm-kernels step), a linear layer also as xgen_mlir's generated GEMM kernel, and
    each Winograd tile also with its batched GEMM in that kernel; with ``block`` (the layer's
    block, compact density and the target's vector width), a block-pruned layer also as
    xgen_mlir's block-sparse kernel. One module: one compile and one child process measure
    every variant of the op."""
    cut = _Slice(cand)
    module = ir.Module.create(ir.Location.unknown(cand.op.context))
    base = cut.function(module, "base", order, nhwc)
    if nhwc and base is not None and base.name == "linalg.conv_2d_nchw_fchw":
        to_nhwc(base, ConstEval(module.operation))
    configs: list[dict[str, Any]] = []
    kernels = (False, True) if gemm_step is not None and precision == "fp32" else (False,)
    for t in TRANSFORMS if winograd else ():
        if cand.tiles.get(t.m, 0) < 1:
            continue
        for kernel in kernels:
            name = f"c{len(configs)}"
            conv = cut.function(module, name, order, nhwc)
            done = rewrite_conv(module.operation, conv, t.m, kernel=kernel)
            if isinstance(done, int) and kernel:  # the marked batched GEMM -> the kernel
                step = _scoped(str(gemm_step), f"functions={name}")
                counts = run_steps(module, [step], what=f"Winograd's GEMM for {cand.description}")
                done = done if counts.get("xgen-gemm-kernels", {}).get("gemm kernels") else None
            if not isinstance(done, int):
                module.body.operations[len(module.body.operations) - 1].erase()
                break
            configs.append(winograd_config(t.m, kernel))

    def offloaded(library: str, impl: str = "") -> set[str]:
        """Add a function of the op run by ``library`` (in implementation family ``impl``);
        returns the import names it calls (none: the library does not take it)."""
        name = f"c{len(configs)}"
        cut.function(module, name, order, nhwc)
        before = _imports(module)
        step = (
            f"xgen-byoc-offload{{backend={library} precision={precision} functions={name} "
            f"threads={threads}" + (f" impl={impl}" if impl else "")
        )
        counts = run_steps(
            module,
            [f"{step} phase=layout}}", "xgen-cancel-reshapes", f"{step} phase=call}}"],
            what=f"offloading {cand.description} to {library}",
        )
        said = counts.get("xgen-byoc-offload", {})  # "<op> -> onednn (+relu)": offloaded
        if not any(k.split(" -> ", 1)[-1].startswith(library) for k in said if " -> " in k):
            module.body.operations[len(module.body.operations) - 1].erase()  # not taken
            return set()
        configs.append(offload_config(library, _compute(cand, precision), impl))
        return _imports(module) - before

    # the library's first choice, then each implementation family that would change it
    imports = offloaded(offload) if offload is not None else set()
    if imports and offload == ONEDNN.name:
        for family in ONEDNN.other_families(min(imports)):
            offloaded(offload, family)
    gemm = gemm_step is not None and cand.op.name in GEMM_OPS and not is_integer(cand.op)
    for group in GEMM_GROUPS if gemm else ():
        name = f"c{len(configs)}"
        cut.function(module, name, order, nhwc)
        step = _scoped(str(gemm_step), f"all=true functions={name} group={group}")
        counts = run_steps(module, [step], what=f"generating a GEMM kernel for {cand.description}")
        if counts.get("xgen-gemm-kernels", {}).get("gemm kernels"):
            configs.append(gemm_config(group))
        else:  # the kernel does not take it
            module.body.operations[len(module.body.operations) - 1].erase()
            break
    if block is not None:
        shape, density, bits = block
        name = f"c{len(configs)}"
        cut.function(module, name, order, nhwc)
        step = f"{BLOCK_STEP}{{enable=true max-density=1.0 vector-bits={bits} functions={name}}}"
        counts = run_steps(module, [step], what=f"raising {cand.description} to block-sparse")
        if counts.get(BLOCK_STEP, {}).get("raised"):
            configs.append(block_config(shape, density))
        else:
            module.body.operations[len(module.body.operations) - 1].erase()
    module.operation.verify()
    return module, configs


def _scoped(step: str, options: str) -> str:
    """Pass step ``step`` (``name{opts}`` or ``name``) with ``options`` put first."""
    head, _, rest = step.partition("{")
    return f"{head}{{{options} {rest}" if rest else f"{head}{{{options}}}"


def attention_module(
    found: Found, cand: Candidate, order: dict[Any, int], step: str
) -> tuple[ir.Module, list[dict[str, Any]]]:
    """One module of ``base`` (the attention core with the views around it, as IREE's
    dispatches compute it) and ``c0`` (the same core as xgen-attention-kernels makes it
    with ``step``, the target's step under ``attention_kernels=true``); no ``c0`` where the
    kernel does not take the slice."""
    cut = _Slice(cand, found.ops, found.last.results[0])
    module = ir.Module.create(ir.Location.unknown(cand.op.context))
    cut.function(module, "base", order)
    cut.function(module, "c0", order)
    head, _, rest = step.partition("{")
    counts = run_steps(
        module,
        [f"{head}{{functions=c0 {rest}"],
        what=f"generating the attention kernel for {cand.description}",
    )
    if not counts.get("xgen-attention-kernels", {}).get("attention kernels"):
        module.body.operations[len(module.body.operations) - 1].erase()
        return module, []
    module.operation.verify()
    return module, [attention_config()]


def measure_attention(
    found: Found,
    cand: Candidate,
    order: dict[Any, int],
    target: str,
    settings: MeasureSettings,
    compile_options: dict[str, Any],
    step: str,
) -> list[Measurement]:
    """The attention core as the generated kernel against IREE's dispatches for it (numerics
    within the contraction tolerance: the kernel only reassociates sums and rounds exp
    differently), measured as ``measure_conv`` measures a conv's variants."""
    module, configs = attention_module(found, cand, order, step)
    return _measure_module(module, configs, target, settings, compile_options)


def _compute(cand: Candidate, precision: str) -> str:
    """What a library computes ``cand`` in: s8 for an integer contraction, else the
    precision's float type."""
    if is_integer(cand.op):
        return "s8"
    return "bf16" if precision == "bf16" else "f32"


def _order(module: ir.Module) -> dict[Any, int]:
    order: dict[Any, int] = {}

    def visit(op: Any) -> Any:
        order[op] = len(order)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return order


def _imports(module: ir.Module) -> set[str]:
    """The oneDNN import names ``module``'s executables call: read from the kernels'
    executable texts, not from the printed module (which holds the weights in hex)."""
    pattern = re.compile(rf"\b{ONEDNN.prefix}[a-z0-9_]+")
    found: set[str] = set()

    def visit(op: Any) -> Any:
        if op.name == "func.func" and EXECUTABLE_ATTR in op.attributes:
            found.update(pattern.findall(ir.StringAttr(op.attributes[EXECUTABLE_ATTR]).value))
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return found


def _library_changed(records: list[Record]) -> bool:
    """Whether a signature's offload was measured only with another version of the library
    than the one its plugin is built against now (its records are not applied: measure it
    again)."""
    offloads = [r for r in records if r.config.get("algorithm") == ONEDNN.name]
    return bool(offloads) and not any(library_matches(r.config) for r in offloads)


def _runs_nhwc(cand: Candidate, target: str, compile_options: dict[str, Any]) -> bool:
    """Whether the model runs ``cand``'s conv NHWC: the target converts the convs
    (``xgen-nhwc-convs``) of a function with a depthwise conv (MobileNets, EfficientNets) and,
    unless the option ``nhwc_convs`` is ``depthwise``, of any other (under ``tuned`` its
    prior; the group's check in the model decides after the convs are measured). Its direct
    conv is then measured so: as the NCHW conv alone, IREE's code for a 1x1 conv was 5-10x
    slower than the data-tiled matmul the model runs (MobileNetV2's 96->576 at 14x14 on an
    Intel Xeon: 1.16 ms alone, about 0.1 in the model), and every variant won alone and lost
    in the model."""
    if cand.op.name != "linalg.conv_2d_nchw_fchw":
        return False
    if not any(s.startswith("xgen-nhwc-convs") for s in load_pipeline(target).pass_steps()):
        return False
    options = compile_options.get("target_options") or {}
    if options.get("nhwc_convs", "tuned") != "depthwise":
        return True
    func = cand.op.parent
    while func is not None and func.name != "func.func":
        func = func.parent
    if func is None:
        return False
    found = []

    def visit(op: Any) -> Any:
        if op.name == "linalg.depthwise_conv_2d_nchw_chw":
            found.append(op)
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    func.walk(visit)
    return bool(found)


def measure_conv(
    cand: Candidate,
    order: dict[Any, int],
    target: str,
    settings: MeasureSettings,
    compile_options: dict[str, Any],
    offload: str | None = None,
    gemm_step: str | None = None,
    block: tuple[tuple[int, int], float, int] | None = None,
) -> list[Measurement]:
    """Compile ``cand``'s variants through the target's pipeline and measure them against
    the direct conv (numerics, then interleaved timing, in a child process): its Winograd
    tiles where it has any, its offload to kernel library ``offload`` where given, a
    linear layer's generated GEMM kernel with ``gemm_step``, and a block-pruned layer's
    block-sparse kernel with ``block``."""
    precision = str(compile_options.get("precision") or "fp32")
    bf16 = precision == "bf16"
    options = compile_options.get("target_options") or {}
    # Winograd's variants are not measured under winograd=false (never applied), nor under
    # bf16: IREE demotes Winograd's batched GEMM to bf16, its output is off by ~5e-2 of the
    # scale (measured on every ResNet-18 conv), far over WINOGRAD_TOLERANCE.
    try:
        winograd = not bf16 and str(options.get("winograd", "tuned")) != "false"
        nhwc = _runs_nhwc(cand, target, compile_options)
        module, configs = variants_module(
            cand, order, winograd, offload, precision, gemm_step, settings.threads, block, nhwc
        )
    except Exception as e:  # the offload pass failed on the slice
        if offload is None:  # the slice itself cannot be made: nothing to measure
            raise
        detail = f"{type(e).__name__}: {str(e).splitlines()[0][:300]}"
        config = offload_config(str(offload), _compute(cand, precision))
        return [
            *measure_conv(cand, order, target, settings, compile_options, None, gemm_step, block),
            Measurement(config, "compile_error", detail=detail),
        ]
    # a bf16 library's output is off by a few 1e-3 of the scale (each operand rounded to 8
    # bits of mantissa); in f32 Winograd's and the library's are held to WINOGRAD_TOLERANCE
    tol = BF16_TOLERANCE if bf16 else WINOGRAD_TOLERANCE
    plugins = (str(ONEDNN.plugin()),) if offload == ONEDNN.name else ()
    return _measure_module(
        module, configs, target, replace(settings, tolerance=tol, plugins=plugins), compile_options
    )


def _measure_module(
    module: ir.Module,
    configs: list[dict[str, Any]],
    target: str,
    settings: MeasureSettings,
    compile_options: dict[str, Any],
) -> list[Measurement]:
    """Compile a module of ``base`` and ``c0``, ``c1`` ... (``configs``, in order) and measure
    each against ``base``."""
    if not configs:
        return []
    options = dict(compile_options)
    # the variants are already in the IR; ``base`` is the op as IREE's code computes it, the
    # "direct" every record's speedup is over, so no prior may apply to it (on AVX2 the
    # GEMM kernel's prior made ``base`` the kernel, and a tune that found nothing faster by
    # MIN_GAIN sent the layer to IREE's code, which was never measured)
    chosen = {
        "winograd": "false",
        "offload": "none",
        "gemm_kernels": "false",
        "attention_kernels": "false",
        "block_kernels": "false",
    }
    options["target_options"] = {**options.get("target_options", {}), **chosen}
    options.update(entry="base", tuning_db=False, precision_check=False)
    if options.get("precision") == "int8":  # the slice is quantized already: compile as is
        options["precision"] = "fp32"
        options.pop("calibration", None)
        options.pop("quantization", None)
    try:
        compiled = compile_model(module, None, target, **options)
    except Exception as e:  # one module for all variants: IREE rejected it
        detail = f"{type(e).__name__}: {str(e).splitlines()[0][:300]}"
        return [Measurement(c, "compile_error", detail=detail) for c in configs]
    main = next(
        o.operation
        for o in module.body.operations
        if o.operation.name == "func.func"
        and ir.StringAttr(o.operation.attributes["sym_name"]).value == "base"
    )
    with tempfile.TemporaryDirectory(prefix="xgen-choice-") as tmp:
        work = Path(tmp)
        vmfb = work / "variants.vmfb"
        vmfb.write_bytes(compiled.vmfb)
        standalone = _inputs_only(main)
        got = _run(vmfb, standalone, configs, list(range(len(configs))), settings, 32, work, [])
    return [got[i] for i in range(len(configs))]


def _inputs_only(main: Any) -> str:
    """A module with ``main``'s signature and nothing else: what ``measure._run`` reads to
    make the random inputs (the weights are constants of the functions, not arguments)."""
    ftype = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value)
    args = ", ".join(f"%a{i}: {t}" for i, t in enumerate(ftype.inputs))
    res = ftype.results[0]
    body = f"    %0 = tensor.empty() : {res}\n    return %0 : {res}"
    for t in ftype.inputs:
        np_dtype(ir.RankedTensorType(t).element_type)  # a type the inputs can be made of
    return f"module {{\n  func.func @main({args}) -> {res} {{\n{body}\n  }}\n}}\n"


def measure_choices(
    model: Any,
    example_inputs: Sequence[Any] | Any | None = None,
    target: str = "cpu",
    *,
    db: str | Path | None = None,
    settings: MeasureSettings | None = None,
    remeasure: bool = False,
    max_convs: int | None = None,
    deadline: float | None = None,
    progress: bool = True,
    **compile_options: Any,
) -> list[ConvChoice]:
    """Measure, on this host, each conv of ``model`` the Winograd pass could rewrite, direct
    against Winograd, and store the records in ``db`` (default: the tuning database).
    Signatures this host already measured are not measured again (``remeasure``: they are).
    ``max_convs``: at most that many new signatures, those with the most FLOPs in the model
    (count x FLOPs of one) first;
    ``deadline`` (``time.perf_counter()``): none started after it. Timing blocks last 50 ms
    (``min_block_s``), so a preempted call on a loaded machine is averaged out. Returns
    every signature with its records and the decision ``winograd=tuned`` takes."""
    settings = settings or MeasureSettings(threads=host_threads(), rounds=9, min_block_s=0.05)
    db_path = Path(db) if db is not None else default_db_path()
    host = HostIdentity.current(threads=settings.threads)
    module = _graph_module(model, example_inputs, target, compile_options)
    offload = _offload_backend(target, compile_options)
    gemm_step = _gemm_step(target, compile_options)
    found = candidates(module.operation, offload=offload is not None or gemm_step is not None)
    # one choice per signature, and per block structure within it: the records of the dense
    # variants serve every layer of a signature, the block-sparse kernel's only its structure
    block_step = _block_step(target, compile_options)
    structure = _block_structures(module, found, block_step)
    by_sig: dict[str, list[Candidate]] = {}
    for c in found:
        shape = structure.get(c.op)
        key = c.signature if shape is None else f"{c.signature}@{shape[0]}:{shape[1]:.2f}"
        by_sig.setdefault(key, []).append(c)
    attention = _attention_step(target, compile_options)
    attention_step, bits = attention if attention is not None else (None, 0)
    cores: dict[str, Found] = {}  # attention signatures: the first core of each
    for core in attention_candidates(module.operation, bits) if attention_step else []:
        sig, desc = core.signature()
        cores.setdefault(sig, core)
        by_sig.setdefault(sig, []).append(Candidate(core.replaced[0], sig, desc, {}))
    with TuningDB(db_path) as tdb:
        tdb.add_host(host)
        known = tdb.choices(host)
    step = _step_options(target, compile_options)
    out: list[ConvChoice] = []
    first_of: dict[int, Candidate] = {}  # id(choice) -> the op measured for it
    for key, cs in by_sig.items():
        shape = structure.get(cs[0].op)
        choice = ConvChoice(
            cs[0].signature,
            cs[0].description,
            len(cs),
            _flops(cs[0], cores.get(key)),
            _weight_bytes(cs[0].op) if key not in cores else 0,
            prior=ATTENTION_TEXT if key in cores else _prior(cs[0], step),
            block=None if shape is None else shape[0],
            density=0.0 if shape is None else shape[1],
        )
        if shape is not None and block_step is not None and shape[1] <= block_step.max_density:
            choice.dense_prior, choice.prior = choice.prior, _block_text(choice)
        out.append(choice)
        first_of[id(choice)] = cs[0]
    todo = [
        c
        for c in out
        if remeasure
        or c.signature not in known
        or (offload is not None and _library_changed(known[c.signature]))
        or (c.block is not None and not block_records(known[c.signature], c.block, c.density))
    ]
    todo.sort(key=lambda c: -measure_priority(c))
    if max_convs is not None:
        todo = todo[:max_convs]
    order = _order(module) if todo else {}
    bar = _bar(progress, len(todo))
    for choice in todo:
        if deadline is not None and time.perf_counter() > deadline:
            break
        cand = first_of[id(choice)]
        first = cores.get(choice.signature)
        if first is not None:
            assert attention_step is not None
            measured = measure_attention(
                first, cand, order, target, settings, compile_options, attention_step
            )
        else:
            block = None
            if choice.block is not None and block_step is not None:
                block = (choice.block, choice.density, block_step.vector_bits)
            measured = measure_conv(
                cand, order, target, settings, compile_options, offload, gemm_step, block
            )
        with TuningDB(db_path) as tdb:
            for m in measured:
                record = Record(
                    choice.signature,
                    m.config,
                    m.status,
                    m.seconds,
                    m.baseline_seconds,
                    description=choice.description,
                    detail=m.detail,
                )
                tdb.add(record, host)
        choice.new = True
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    with TuningDB(db_path) as tdb:
        known = tdb.choices(host)
    allowed = _allowed(target, compile_options)
    for choice in out:
        choice.measured = known.get(choice.signature, [])
        choice.algorithm, choice.why = _decision(choice, allowed)
    return out


ATTENTION_TEXT = "xgen_attention (f32)"


def _decision(choice: ConvChoice, allowed: Any) -> tuple[str, str]:
    """What compile() does with the op(s) of ``choice`` given its records, and why: as
    xgen-raise-block-linear (for a block-pruned layer) and then xgen-winograd-convs decide,
    the prior where no record overrides it."""
    if choice.prior == ATTENTION_TEXT:
        use, why = decide_attention(choice.measured)
        return (ATTENTION_TEXT if use else "direct"), why
    block_said = ""
    if choice.block is not None:
        block, block_said = decide_block(choice.measured, choice.block, choice.density, allowed)
        if block or (block is None and choice.prior == _block_text(choice)):
            return _block_text(choice), block_said
        block_said += "; "
    config, why = decide_algorithm(choice.measured, allowed)
    if config is None and not live_records(choice.measured, allowed):
        return choice.dense_prior or choice.prior, block_said + why
    return ("direct" if config is None else _algorithm_text(config)), block_said + why


def _block_text(choice: ConvChoice) -> str:
    if choice.block is None:
        return ""
    return _algorithm_text(block_config(choice.block, choice.density))


def _block_step(target: str, compile_options: dict[str, Any]) -> RaiseBlockOptions | None:
    """The options of the target's xgen-raise-block-linear step in a compile with these
    options, where block-pruned layers are to be measured as the block-sparse kernel: a
    target that generates the kernel (a vector width), ``block_kernels=tuned``, a compile
    that computes f32 contractions (not bf16), and a C compiler here; else None."""
    opts = CompileOptions.from_kwargs(compile_options)
    pipeline = load_pipeline(target)
    resolved = pipeline.with_options(_target_options(pipeline, opts))
    if resolved.option_value("block_kernels") != "tuned" or opts.precision == "bf16":
        return None
    step = next((s for s in resolved.pass_steps(opts.entry) if s.startswith(BLOCK_STEP)), None)
    if step is None:
        return None
    text = step[len(BLOCK_STEP) :].strip().removeprefix("{").removesuffix("}")
    parsed = get_pass(BLOCK_STEP).parse_options(text)
    if not isinstance(parsed, RaiseBlockOptions) or not parsed.vector_bits:
        return None
    return parsed if BcsrKernelOptions().toolchain().available() else None


def _block_structures(
    module: ir.Module, found: list[Candidate], step: RaiseBlockOptions | None
) -> dict[Any, tuple[tuple[int, int], float]]:
    """Each block-pruned linear layer or 1x1 conv among ``found`` whose block-sparse kernel
    is to be measured (``step``: ``_block_step``'s, None: none): its block and compact
    density, rounded as records keep it; layers that keep more than ``MEASURED_MAX_DENSITY``
    are not."""
    if step is None:
        return {}
    out: dict[Any, tuple[tuple[int, int], float]] = {}
    with module.context:
        ev = ConstEval(module.operation)
        for c in found:
            got = block_structure(c.op, ev, step.vector_bits)
            if got is not None and got[1] <= MEASURED_MAX_DENSITY:
                out[c.op] = (got[0], round(got[1], 2))
    return out


def _step_options(target: str, compile_options: dict[str, Any]) -> WinogradOptions | None:
    """The options of the target's xgen-winograd-convs step in a compile with these options
    (None: the target has no such step)."""
    opts = CompileOptions.from_kwargs(compile_options)
    pipeline = load_pipeline(target)
    steps = pipeline.with_options(_target_options(pipeline, opts)).pass_steps(opts.entry)
    step = next((s for s in steps if s.startswith(STEP)), None)
    if step is None:
        return None
    text = step[len(STEP) :].strip().removeprefix("{").removesuffix("}")
    parsed = get_pass(STEP).parse_options(text)
    return parsed if isinstance(parsed, WinogradOptions) else None


def _prior(cand: Candidate, step: WinogradOptions | None) -> str:
    """What compile() does with ``cand`` before any measurement (``unmeasured_prior``): a
    kernel library or the GEMM kernel where the prior sends it there, else the direct conv."""
    if step is None:
        return "direct"
    config, _ = unmeasured_prior(cand.op, step)
    return "direct" if config is None else _algorithm_text(config)


def _flops(cand: Candidate, core: Found | None) -> int:
    if core is None:
        return op_flops(cand.op)
    return op_flops(core.replaced[0]) + op_flops(core.pv)


def _attention_step(target: str, compile_options: dict[str, Any]) -> tuple[str, int] | None:
    """Where the attention cores are to be measured (a target that has the step,
    ``attention_kernels=tuned``, an fp32 compile, a C compiler here): the target's
    xgen-attention-kernels step as ``attention_kernels=true`` sets it, and the target's
    vector width (the kernel's register tile)."""
    precision = str(compile_options.get("precision") or "fp32")
    values = {**(compile_options.get("target_options") or {})}
    if (
        precision != "fp32"
        or load_pipeline(target).with_options(values).option_value("attention_kernels") != "tuned"
    ):
        return None
    forced = load_pipeline(target).with_options({**values, "attention_kernels": "true"})
    step = next((s for s in forced.pass_steps("main") if s.startswith("xgen-attention")), None)
    if step is None or not AttentionKernelOptions().toolchain().available():
        return None
    return step, forced.facts.vector_bits


def _algorithm_text(config: dict[str, Any]) -> str:
    if config.get("algorithm") == BLOCK_ALGORITHM:
        return f"{variant_name(config)} (f32)"
    if config.get("algorithm") == "winograd":
        return f"winograd {variant_name(config)}"
    return f"{library_label(config)} ({config.get('compute')})"


def _allowed(target: str, compile_options: dict[str, Any]) -> Any:
    """Which measured variants a compile with these options weighs (as xgen-winograd-convs
    does under its target options)."""
    return allowed_variants(
        str((compile_options.get("target_options") or {}).get("winograd", "tuned")),
        "tuned" if _offload_backend(target, compile_options) else "none",
        str(compile_options.get("precision") or "fp32"),
        _gemm_option(compile_options),
    )


def _gemm_option(compile_options: dict[str, Any]) -> str:
    return str((compile_options.get("target_options") or {}).get("gemm_kernels", "tuned"))


def _gemm_step(target: str, compile_options: dict[str, Any]) -> str | None:
    """The target's xgen-gemm-kernels step (its options as the target sets them), where each
    linear layer's generated GEMM kernel is to be measured: a target that has the step, an
    fp32 compile, ``gemm_kernels`` not false, and a C compiler here."""
    precision = str(compile_options.get("precision") or "fp32")
    if _gemm_option(compile_options) == "false" or precision != "fp32":
        return None
    values = {**(compile_options.get("target_options") or {})}
    steps = load_pipeline(target).with_options(values).pass_steps("main")
    step = next((s for s in steps if s.startswith("xgen-gemm-kernels")), None)
    if step is None or not GemmKernelOptions().toolchain().available():
        return None
    return step


def _offload_backend(target: str, compile_options: dict[str, Any]) -> str | None:
    """The kernel library to measure each conv's offload to: oneDNN on the host target where
    its plugin can be built, unless the compile options forbid offloading."""
    value = str((compile_options.get("target_options") or {}).get("offload", "tuned"))
    if target != "cpu" or value == "none" or ONEDNN.unavailable() is not None:
        return None
    return ONEDNN.name


def summary(choices: list[ConvChoice]) -> str:
    lines = ["algorithm choices (ms per call of the conv with its epilogue):"]
    for c in choices:
        t = c.times()
        if c.block is not None:  # only this structure's kernel record, not the signature's others
            mine = {variant_name(block_config(c.block, c.density))}
            t = {k: v for k, v in t.items() if not k.startswith(BLOCK_ALGORITHM) or k in mine}
        cells = "  ".join(f"{k} {v:.3f}" if v else f"{k} -" for k, v in t.items())
        what = c.description
        if c.block is not None:
            what += f", {c.block[0]}x{c.block[1]} blocks keeping {c.density:.2f}"
        lines.append(f"  {what:<52} x{c.count}  {cells}  -> {c.algorithm}")
    return "\n".join(lines)


def _bar(on: bool, total: int) -> Any:
    if not on or not total:
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc="measuring algorithm choices", unit="op", file=sys.stderr)


def tune_choices(
    current: Any,
    model: Any,
    example_inputs: Any,
    inputs: Any,
    target: str,
    db_path: Path,
    settings: MeasureSettings,
    deadline: float,
    progress: bool,
    compile_options: dict[str, Any],
) -> tuple[list[ConvChoice], Any]:
    """``tune()``'s step for algorithm choices, before its contraction search: measure the
    model's convs and Linear layers (until ``deadline``); when that changes a layer's
    algorithm, compile the model again and keep it only if it is faster than ``current``
    (the untuned module; interleaved); if not, split the changed choices in halves and check
    each (while the deadline allows, else they stay out), so that one loser does not sink the
    winners; a single choice that loses is marked ``REJECTED_IN_MODEL`` and not applied.
    Returns the choices and the model module to go on from."""

    options = compile_options.get("target_options") or {}
    chooses = (
        options.get("winograd") != "false",
        _offload_backend(target, compile_options) is not None,
        _gemm_step(target, compile_options) is not None,
        _attention_step(target, compile_options) is not None,
        _block_step(target, compile_options) is not None,
    )
    if not any(chooses):
        return [], current  # every choice forbidden by the user (or not on this host)
    args = (model, example_inputs, inputs, target, db_path, settings, compile_options)
    current = tune_split("matmuls", current, *args)
    choices, current = _tune_each(current, *args, deadline, progress)
    current = tune_nhwc_convs(current, *args)  # (the layout first: the others' checks stand on it)
    # (before the library group: each check keeps what won, so the cheaper route goes first)
    current = tune_pointwise_convs(current, *args)
    current = tune_conv_group(current, *args)
    current = tune_split("convs", current, *args)
    current = tune_int8_pattern(current, *args)
    return choices, current


def _tune_each(
    current: Any,
    model: Any,
    example_inputs: Any,
    inputs: Any,
    target: str,
    db_path: Path,
    settings: MeasureSettings,
    compile_options: dict[str, Any],
    deadline: float,
    progress: bool,
) -> tuple[list[ConvChoice], Any]:
    """``tune_choices``' measurement of each op's choices and their checks in the model."""
    from .search import in_model_timing

    xs = inputs if isinstance(inputs, (tuple, list)) else (inputs,)

    before: dict[str, list[Record]] = {}
    with TuningDB(db_path) as tdb:
        host = HostIdentity.current(threads=settings.threads)
        allowed = _allowed(target, compile_options)
        before = tdb.choices(host)
    strong = replace(settings, rounds=max(9, settings.rounds), min_block_s=0.05)
    choices = measure_choices(
        model,
        example_inputs,
        target,
        db=db_path,
        settings=strong,
        deadline=deadline,
        progress=progress,
        tuning_threads=settings.threads,
        **compile_options,
    )
    # choices an earlier tune measured but had no budget left to check in the model: checked
    # now, with the measured ones
    unchecked = _unmark_unchecked(db_path, host, choices, allowed)
    # a choice changes the model where its decision differs from the one before this call
    changed = [
        c
        for c in choices
        if (c.new or c in unchecked)
        and c.algorithm != _decision(replace(c, measured=before.get(c.signature, [])), allowed)[0]
    ]
    if not changed:
        return choices, current
    options = {**compile_options, "tuning_db": db_path, "tuning_threads": settings.threads}
    # the changed choices, checked in the model together; a set that makes the model slower
    # is split in halves (the winners among them are kept), down to single choices, which
    # are rejected; at least one check, then as many as the deadline allows
    queue: list[list[ConvChoice]] = [changed]
    kept: list[ConvChoice] = []
    checks = 0
    while queue:
        group = queue.pop(0)
        if checks and time.perf_counter() > deadline:
            _reject(db_path, host, [c for g in [group, *queue] for c in g], UNCHECKED_IN_MODEL)
            break
        held = [c for c in changed if c not in kept and c not in group]
        with _held_back(db_path, host, held):  # the others' records out of this compile
            candidate = compile_model(model, example_inputs, target, **options)
        checks += 1
        timing = in_model_timing(current, candidate, xs, _timing_cap(candidate))
        if timing.wins(MIN_GAIN):
            current, kept = candidate, kept + group
        elif len(group) > 1:
            queue[:0] = [group[: len(group) // 2], group[len(group) // 2 :]]
        else:
            _reject(db_path, host, group, f"{REJECTED_IN_MODEL} ({_lost(timing)})")
    return choices, current


def tune_conv_group(
    current: Any,
    model: Any,
    example_inputs: Any,
    inputs: Any,
    target: str,
    db_path: Path,
    settings: MeasureSettings,
    compile_options: dict[str, Any],
) -> Any:
    """``tune()``'s check of the model's float library convs as one group
    (``offload_convs``): where not all of them run in the library as each one's measurement
    has it, compile the model with all of them there, time it against ``current`` in the
    model (interleaved), and record the group's verdict (``conv_group_signature``): applied
    where at least ``MIN_GAIN`` faster, else rejected (never where the outputs differ by
    more than ``WRONG_IN_MODEL``). Conv by conv, a standalone module pays the layout changes
    around each library conv that cancel between two of them in the model, and keeps weights
    in cache that the model streams. Skipped where the user set the option or the offload.
    Returns the model module to go on from."""

    options = dict(compile_options.get("target_options") or {})
    if options.get("offload_convs", "tuned") != "tuned" or current.report.tuning is None:
        return current
    if options.get("offload", "tuned") != "tuned" or ONEDNN.unavailable() is not None:
        return current
    group = [c for c in current.report.tuning.choices if c[0].startswith(CONV_GROUP_PREFIX)]
    if len(group) != 1 or not group[0][1].startswith("each"):
        return current  # no library convs, or the group's verdict already recorded
    signature, decision, _ = group[0]
    counted = re.search(r"\((\d+) of (\d+)", decision)
    if counted is not None and counted.group(1) == counted.group(2):
        return current  # each is in the library already
    options["offload_convs"] = "all"
    extra = {"tuning_db": db_path, "tuning_threads": settings.threads, "target_options": options}
    candidate = compile_model(model, example_inputs, target, **{**compile_options, **extra})
    precision = str(compile_options.get("precision") or "fp32")
    record = Record(
        signature,
        conv_group_config(precision),
        "ok",
        None,
        None,
        description=f"{signature}: all in {ONEDNN.name} against {decision}",
    )
    return _group_verdict(current, candidate, inputs, record, db_path, settings.threads)


# Two routes of an int8 model that compute the same integer sums can still round a requantize
# tie apart (a library's f32 epilogue against IREE's); one flipped step of an activation moves
# the outputs by a few of their own steps through the layers after it (pruned ResNet-18, the
# int8 pattern kernels against oneDNN's s8 convs: 7.1e-3 of the output's scale), where a wrong
# kernel is off by O(1) of it.
INT8_WRONG_IN_MODEL = 5e-2


def _group_verdict(
    current: Any,
    candidate: Any,
    inputs: Any,
    record: Record,
    db_path: Path,
    threads: int,
    tolerance: float | None = None,
) -> Any:
    """Check ``candidate`` (the model with one group's other choice) against ``current`` in
    the model and store ``record`` with the verdict: wrong numbers where the outputs differ
    by more than ``WRONG_IN_MODEL`` (never applied, not timed: either way the group computes
    the same sums), else both times (``search.in_model_timing``: paired rounds, more while
    the verdict is within the noise, for up to the candidate's compile time) and
    ``REJECTED_IN_MODEL`` unless faster beyond the noise and by at least ``MIN_GAIN``
    (``tolerance``: another bound on the outputs' difference). Returns the module to go on
    from."""
    from .search import WRONG_IN_MODEL, _relative_error, in_model_timing

    xs = inputs if isinstance(inputs, (tuple, list)) else (inputs,)
    err = _relative_error(candidate, current, xs)
    won = False
    if err > (WRONG_IN_MODEL if tolerance is None else tolerance):
        record.status = "wrong_numbers"
        record.detail = f"relative error {err:.2g} against the model before"
    else:
        timing = in_model_timing(current, candidate, xs, _timing_cap(candidate))
        record.seconds = timing.candidate_ms / 1e3
        record.baseline_seconds = timing.current_ms / 1e3
        won = timing.wins(MIN_GAIN)
        if not won:
            record.detail = f"{REJECTED_IN_MODEL} ({_lost(timing)})"
    with TuningDB(db_path) as tdb:
        tdb.add(record, HostIdentity.current(threads=threads))
    return candidate if won else current


def _timing_cap(candidate: Any) -> float:
    """How long a check may time ``candidate`` while undecided: as long as its compile took
    (timing is cheap beside it), 3 s at least."""
    return max(3.0, sum(candidate.report.top_stage_seconds.values()))


def _lost(timing: Any) -> str:
    """Why a check in the model did not accept: its times, ratio and noise, and which bar it
    missed."""
    said = timing.describe().removeprefix("model ")
    if timing.slower():
        return said
    if timing.ratio * MIN_GAIN > 1 and timing.ratio < 1:
        return f"{said}: less than the {MIN_GAIN}x it needs"
    return f"{said}: within the noise"


def tune_split(
    kind: str,
    current: Any,
    model: Any,
    example_inputs: Any,
    inputs: Any,
    target: str,
    db_path: Path,
    settings: MeasureSettings,
    compile_options: dict[str, Any],
) -> Any:
    """``tune()``'s check of the split of the model's offloaded matmuls (``kind`` "matmuls",
    the ``matmul_split`` option) or convs ("convs", ``conv_split``): compile the model with
    the other direction than the count's (for matmuls the columns in bf16 and int8, the rows
    in fp32; for convs the rows, where the count put some on their channels), time it
    against ``current`` in the model (interleaved), and record the group's verdict
    (``byoc_offload.split_signature``): applied where at least ``MIN_GAIN`` faster, else
    rejected (and never applied where its outputs differ from the count's by
    more than ``WRONG_IN_MODEL``). A standalone dispatch cannot decide this: its weights stay
    in cache from call to call, the model's may not (docs/byoc.md, "Rows or columns").
    Skipped where the option is the user's, where no op would change, or where an earlier
    tune on this host recorded its verdict (a lost check is not repeated at every tune: it
    costs two compiles of the model, MobileBERT's 2 of a 4-minute budget). Returns the model
    module to go on from."""

    option = SPLIT_GROUPS[kind][1]
    options = dict(compile_options.get("target_options") or {})
    if options.get(option, "tuned") != "tuned" or current.report.tuning is None:
        return current
    group = [
        c
        for c in current.report.tuning.choices
        if c[0].startswith(f"{SPLIT_PREFIX} ") and c[0].split()[3] == kind
    ]
    if len(group) != 1 or not group[0][1].startswith("count"):
        return current  # no such ops offloaded, or a direction already recorded
    signature, counted, _ = group[0]
    precision = str(compile_options.get("precision") or "fp32")
    if kind == "convs":  # (channels everywhere lost where the weights were few: not tried)
        if _on_columns(counted) in ("", "0"):
            return current
        other = "rows"
    else:
        other = "rows" if precision == "fp32" else "columns"
    config = split_config(other, kind)
    with TuningDB(db_path) as tdb:  # a verdict already recorded on this host stands
        host = HostIdentity.current(threads=settings.threads)
        if any(r.config == config for r in tdb.records(host.key, signature)):
            return current
    options[option] = other
    settings_options = {"tuning_db": db_path, "tuning_threads": settings.threads}
    candidate = compile_model(
        model,
        example_inputs,
        target,
        **{**compile_options, **settings_options, "target_options": options},
    )
    changed = [c for c in candidate.report.tuning.choices if c[0] == signature]
    if not changed or _on_columns(changed[0][1]) == _on_columns(counted):
        return current
    record = Record(
        signature,
        config,
        "ok",
        None,
        None,
        description=f"{signature}: {other} against {counted}",
    )
    return _group_verdict(current, candidate, inputs, record, db_path, settings.threads)


def tune_int8_pattern(
    current: Any,
    model: Any,
    example_inputs: Any,
    inputs: Any,
    target: str,
    db_path: Path,
    settings: MeasureSettings,
    compile_options: dict[str, Any],
) -> Any:
    """``tune()``'s check of an int8 model's pattern-pruned convs in xgen_mlir's int8
    pattern kernel (``int8_pattern_kernels``): compile the model the other way than the rule
    put them (the dense route where it put them in the kernel, the kernel where not: on a
    CPU with AMX-INT8 tiles), time it against ``current`` in the model (interleaved), and
    record the group's verdict (``int8_pattern_kernels.GROUP_PREFIX``): applied where at
    least ``MIN_GAIN`` faster, else rejected (never where the outputs differ by more than
    ``INT8_WRONG_IN_MODEL``: a requantize's rounding tie may flip between the routes). The
    dense route's speed is the host's library's on the host's units, which no rule knows.
    Skipped where the option is the user's, where the model has no such convs, or where
    this host's verdict is recorded. Returns the model module to go on from."""
    from ..passes.int8_pattern_kernels import GROUP_PREFIX, int8_pattern_config

    found = _unmeasured_group(current, compile_options, "int8_pattern_kernels", GROUP_PREFIX)
    if found is None:
        return current
    signature, decision = found
    other = "dense" if decision.startswith("kernel") else "kernel"
    value = "false" if other == "dense" else "always"
    record = Record(
        signature,
        int8_pattern_config(other),
        "ok",
        None,
        None,
        description=f"{signature}: {other} against {decision}",
    )
    args = (model, example_inputs, inputs, target, db_path, settings, compile_options)
    return _check_other_way(
        current, *args, "int8_pattern_kernels", value, record, INT8_WRONG_IN_MODEL
    )


# what every check of tune() is given after the module to go on from: (model, example_inputs,
# inputs, target, db_path, settings, compile_options)
CheckArgs = tuple[Any, Any, Any, str, Path, MeasureSettings, dict[str, Any]]


def tune_pointwise_convs(
    current: Any,
    model: Any,
    example_inputs: Any,
    inputs: Any,
    target: str,
    db_path: Path,
    settings: MeasureSettings,
    compile_options: dict[str, Any],
) -> Any:
    """``tune()``'s check of the f32 1x1 convs over whole row tiles as xgen_mlir's pointwise
    kernels (``pointwise_convs``, ``pointwise_kernels.every_extras``): compile the model with
    them as kernels, time it against ``current`` (IREE's matmuls, the padding rule's choice)
    in the model (interleaved), and record the group's verdict: applied where at least
    ``MIN_GAIN`` faster, else rejected. Each kernel beats IREE's dispatch alone, but the
    model's time goes both ways by model on one host. Skipped where the option is the
    user's, where the model has no such convs, or where this host's verdict is recorded.
    Returns the model module to go on from."""
    from ..passes.pointwise_kernels import GROUP_PREFIX, pointwise_convs_config

    args: CheckArgs = (model, example_inputs, inputs, target, db_path, settings, compile_options)
    config = pointwise_convs_config("every")
    return _check_unmeasured(current, args, "pointwise_convs", GROUP_PREFIX, config, "kernels")


def tune_nhwc_convs(
    current: Any,
    model: Any,
    example_inputs: Any,
    inputs: Any,
    target: str,
    db_path: Path,
    settings: MeasureSettings,
    compile_options: dict[str, Any],
) -> Any:
    """``tune()``'s check of a model's convs (one without depthwise convs) left NCHW to
    IREE's channels-last rewrite (``nhwc_convs``, ``nhwc_convs._decide_convs``): compile the
    model so, time it against ``current`` (every conv a named NHWC conv, the prior) in the
    model (interleaved), and record the group's verdict: applied where at least ``MIN_GAIN``
    faster, else rejected. The layout decides which of IREE's tiles each conv gets, and the
    model's time went both ways by model on one host. Skipped where the option is the user's,
    where the model has no such convs, or where this host's verdict is recorded. Returns the
    model module to go on from."""
    from ..passes.nhwc_convs import GROUP_PREFIX, nhwc_convs_config

    args: CheckArgs = (model, example_inputs, inputs, target, db_path, settings, compile_options)
    config = nhwc_convs_config("depthwise")
    what = "IREE's channels-last rewrite"
    return _check_unmeasured(current, args, "nhwc_convs", GROUP_PREFIX, config, what)


def _check_unmeasured(
    current: Any,
    args: CheckArgs,
    option: str,
    prefix: str,
    config: dict[str, str],
    what: str,
) -> Any:
    """Where ``current``'s group named ``prefix`` is unmeasured on this host under target
    option ``option`` left ``tuned`` (``_unmeasured_group``), check it the other way,
    ``config["use"]`` (called ``what`` in the record), in the model (``_check_other_way``).
    Returns the model module to go on from."""
    found = _unmeasured_group(current, args[-1], option, prefix)
    if found is None:
        return current
    signature, decision = found
    description = f"{signature}: {what} against {decision}"
    record = Record(signature, config, "ok", None, None, description=description)
    return _check_other_way(current, *args, option, config["use"], record)


def _unmeasured_group(
    current: Any, compile_options: dict[str, Any], option: str, prefix: str
) -> tuple[str, str] | None:
    """The signature and decision of ``current``'s group named ``prefix`` where target option
    ``option`` is left ``tuned`` and the group is unmeasured on this host; else None (the
    option is the user's, the model has no such ops, or a verdict is recorded)."""
    options = compile_options.get("target_options") or {}
    if options.get(option, "tuned") != "tuned" or current.report.tuning is None:
        return None
    group = [c for c in current.report.tuning.choices if c[0].startswith(f"{prefix} ")]
    if len(group) != 1 or not group[0][2].startswith("unmeasured"):
        return None
    return group[0][0], group[0][1]


def _check_other_way(
    current: Any,
    model: Any,
    example_inputs: Any,
    inputs: Any,
    target: str,
    db_path: Path,
    settings: MeasureSettings,
    compile_options: dict[str, Any],
    option: str,
    value: str,
    record: Record,
    tolerance: float | None = None,
) -> Any:
    """Compile the model with target option ``option`` set to ``value``, check it against
    ``current`` in the model and store ``record`` with the verdict (``_group_verdict``)."""
    options = {**(compile_options.get("target_options") or {}), option: value}
    extra = {"tuning_db": db_path, "tuning_threads": settings.threads, "target_options": options}
    candidate = compile_model(model, example_inputs, target, **{**compile_options, **extra})
    return _group_verdict(current, candidate, inputs, record, db_path, settings.threads, tolerance)


def _on_columns(decision: str) -> str:
    """How many of a split decision's matmuls go on columns ("columns (12 of 48 on ...)")."""
    found = re.search(r"\((\d+) of", decision)
    return found.group(1) if found else ""


def _reject(db_path: Path, host: HostIdentity, group: list[ConvChoice], why: str) -> None:
    """Mark every measured record of ``group``'s choices rejected in the model (kept, never
    applied): their ops go back to their priors, which the model they lost to had. A failed
    record keeps its error (it is never applied anyway)."""
    with TuningDB(db_path) as tdb:
        for c in group:
            for r in c.measured:
                if r.status == "ok":
                    tdb.reject(host, c.signature, r.config, why)
            c.algorithm = c.prior
            c.why = (
                "the measured choice not checked in the model: the tune's budget ran out"
                if why == UNCHECKED_IN_MODEL
                else f"the measured choice slower in the model: {why}"
            )


def _unmark_unchecked(
    db_path: Path, host: HostIdentity, choices: list[ConvChoice], allowed: Any
) -> list[ConvChoice]:
    """Clear ``UNCHECKED_IN_MODEL`` from the records of ``choices`` that an earlier tune left
    unchecked (so that the check in the model compiles with them) and decide those choices
    again. Returns them."""
    unchecked = [c for c in choices if any(r.detail == UNCHECKED_IN_MODEL for r in c.measured)]
    with TuningDB(db_path) as tdb:
        for c in unchecked:
            for r in c.measured:
                if r.detail == UNCHECKED_IN_MODEL:
                    tdb.reject(host, c.signature, r.config, "")  # (sets the detail)
            c.measured = [
                r for r in tdb.records(host.key, c.signature) if r.config.get("kind") == ALGORITHM
            ]
            c.algorithm, c.why = _decision(c, allowed)
    return unchecked


@contextlib.contextmanager
def _held_back(db_path: Path, host: HostIdentity, group: list[ConvChoice]) -> Iterator[None]:
    """While the block runs, ``group``'s records are marked rejected, so a compile leaves
    their ops as they were before the tune; their details are restored after (each in its
    own transaction: a crash in between leaves them rejected, which applies nothing)."""
    with TuningDB(db_path) as tdb:  # their details as they are now (some rejected already)
        held = [
            (r.signature, r.config, r.detail)
            for c in group
            for r in tdb.records(host.key, c.signature)
        ]
        for sig, config, _ in held:
            tdb.reject(host, sig, config, f"{REJECTED_IN_MODEL} (held back for a check)")
    try:
        yield
    finally:
        with TuningDB(db_path) as tdb:
            for sig, config, detail in held:
                tdb.reject(host, sig, config, detail)  # (sets the detail back as it was)
