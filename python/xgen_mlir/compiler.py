"""``xgen_mlir.compile``: model -> linalg (frontend) -> our pipeline (passes) -> IREE (backend).

The dependency direction is one way: frontend -> passes -> backend -> runtime.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
import weakref
from collections.abc import Sequence
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any

from ._mlir import ir
from .analysis.flops import module_flops
from .backend import compile_outputs
from .backend.cpu_target import CpuTarget, resolve_cpu_target
from .backend.params import write_irpa
from .diagnostics import check_entry_name, warn_fallback
from .errors import BackendCompileError, UnknownNameError, XGenError
from .frontend import import_model
from .fusion.tunable import TuningRequest
from .irutil import find_func
from .passes.byoc_offload import DECISIONS as OFFLOAD_DECISIONS
from .passes.dim_bounds import Bounds, add_dim_bound_checks
from .passes.dispatch_passes import shared_packs_record
from .passes.int8_pattern_kernels import DENSE_BY_CHOICE
from .passes.runner import run_steps, snapshot
from .passes.winograd_convs import CHOICES, TunedChoices
from .pipelines import Pipeline, available_pipelines, load_pipeline
from .runtime import CompiledModule
from .runtime.cpu_features import CPU_KEY, FORMAT_KEY, REFLECTION_KEY
from .runtime.plugins import REFLECTION_KEY as PLUGINS_KEY
from .tunedb import HostIdentity, choice_records_for, device_identity, records_for


@dataclass
class CompileOptions:
    """Everything ``compile()`` accepts as keyword options."""

    entry: str = "main"  # name of the entry function (diagnostics.check_entry_name's rule)
    device: str | None = None  # runtime device for the returned module (default local-task)
    dump_ir: str | Path | None = None  # write the IR after each of our steps here
    dump_executables: str | Path | None = None  # IREE's executable dumps (per dispatch)
    extra_iree_flags: list[str] = field(default_factory=list)  # appended to the target's flags
    verbose: bool = False  # print stage timings to stderr
    # Values for the target's [options] (pipelines/<target>.toml), e.g. {"features": "+neon"}.
    target_options: dict[str, str] = field(default_factory=dict)
    # Weights of at least this many bytes go to a parameter archive (.irpa) beside the module,
    # not into it (True: 0 bytes, i.e. all of them). save_bundle() writes both.
    external_weights: int | bool | None = None
    # Keep a failed compile's scratch folders (the pipeline's input IR, IREE's input) and name
    # them, with the command to rerun, in the error. None: the XGEN_KEEP_TEMPS variable.
    keep_temps: bool | None = None
    # Tuned configs (xgen_mlir.tune) for this host: a database file; None: the default one
    # ($XGEN_TUNING_DB or ~/.cache/xgen_mlir/tuning.db) if it exists; False: none.
    tuning_db: str | Path | bool | None = None
    # Keep each tunable op's standalone module in report.tuning.tasks (what tune() searches).
    tuning_collect: bool = False
    # The thread count the module will run with, for picking records (None: this host's).
    tuning_threads: int | None = None
    # The device the module will run on, as tune()'s runner named it ("qemu",
    # "ssh://user@board"): the records of the identity it measured as apply (no need to
    # reach the device). None: this host's records, and only for the cpu target.
    tuning_device: str | None = None
    # Load a .pt2 file as torch.export.load does, running whatever its pickles and shape
    # expressions hold. False: a .pt2 that needs more than plain tensors is refused.
    trust_pickle: bool = False
    # Dynamic input dims, in torch.export's own form: for an nn.Module, passed to
    # torch.export.export (e.g. ({0: torch.export.Dim("batch", min=1, max=64)},), one entry per
    # input); for an ONNX model, the same per-input {dim: Dim or name} makes those dims
    # symbolic (the model's own symbolic dims are kept without it). Bounded dims are checked
    # by the module at call time.
    dynamic_shapes: Any = None
    # "fp32", or "bf16": conv and matmul operands in bf16, accumulation and everything else
    # in f32 (the target's 'precision' option; docs/precision.md). None: the target's default.
    # "int8": a float model is quantized first (compress.quantize with ``quantization``'s
    # settings; static mode, the default, calibrates on ``calibration``); a quantized ONNX
    # model compiles as it is.
    precision: str | None = None
    calibration: Sequence[Any] | None = None  # samples like example_inputs, for int8 static
    quantization: dict[str, Any] | None = None  # compress.quantize's keywords (mode, observer...)
    # For a reduced precision: also compile in fp32 and give each output's error against it
    # (report.precision_errors), on the example inputs or, without them, random ones.
    precision_check: bool = True

    @classmethod
    def from_kwargs(cls, kwargs: dict[str, Any]) -> CompileOptions:
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(kwargs) - names)
        if unknown:
            raise XGenError(
                f"unknown compile option(s) {unknown}; options are: {', '.join(sorted(names))}"
            )
        # None for an option whose default is an empty dict or list means that default,
        # as for every other option (callers forward ``target_options=None`` and the like).
        defaulted = {f.name for f in fields(cls) if f.default_factory is not MISSING}
        return cls(**{k: v for k, v in kwargs.items() if not (v is None and k in defaulted)})


@dataclass
class CompileReport:
    """What happened during a compile (timings, flags, fallbacks)."""

    stage_seconds: dict[str, float] = field(default_factory=dict)
    iree_flags: list[str] = field(default_factory=list)
    fallback_used: str | None = None
    fusion_plans: list[Any] = field(default_factory=list)  # fusion.FusionPlan per function
    fusion_note: str = ""  # why the dispatch steps were not used, when the target has some
    shared_packs: Any = None  # fusion.shared_packs.SharedPacks, when that step ran or was dropped
    dropped_steps: dict[str, str] = field(default_factory=dict)  # optional dispatch steps IREE
    # rejected (the compile went on without them), with why
    # What our graph rewrites did, per pass: {"xgen-winograd-convs": {"...": 13}, ...}
    rewrites: dict[str, dict[str, int]] = field(default_factory=dict)
    # BYOC: what xgen-byoc-offload did ({"<op> -> onednn": 19, "<op> kept: why": 1})
    offload: dict[str, int] = field(default_factory=dict)
    # the same per op: (source location "file:line:col", what happened), in program order;
    # the locations are what the cpu target's offload_only / offload_never options take
    offload_ops: list[tuple[str, str]] = field(default_factory=list)
    # A dynamic batch compiled as a loop over items at batch 1 (frontend/batch_loop.py):
    # what was done, or why not (empty: no dynamic batch, or the target does not loop)
    batch_loop: str = ""
    flops_imported: int = 0  # of the module as imported
    flops_after_rewrites: int = 0  # after our passes (generated kernels count their ops' FLOPs)
    # fusion.tunable.TuningRequest: which contractions got a tuned config, which did not and
    # why, where the configs came from (None: the target has no xgen-apply-tuning step)
    tuning: Any = None
    cpu_target: CpuTarget | None = None  # llvm-cpu targets: the CPU and features compiled for
    precision: str = "fp32"  # what the module computes contractions in
    precision_note: str = ""  # a fallback from the precision asked for, or why no errors
    # per output, against the fp32 compile: {"output", "rel_l2", "max_abs", "ref_max_abs"}
    precision_errors: list[dict[str, float]] = field(default_factory=list)
    precision_inputs: str = ""  # which inputs the errors were measured on
    # int8: compress.quantize's settings and the imported contractions by kind
    # ({"integer": n, "float": m}); pruned layers whose sparse kernels int8 does not use
    quantization: dict[str, Any] = field(default_factory=dict)
    # IREE could not compile the module with Winograd convs, so they became direct convs
    # (compile's retry): the first attempt's error; empty: no retry
    winograd_fallback: str = ""

    @property
    def top_stage_seconds(self) -> dict[str, float]:
        """The compile's own stages (IREE's inner phases, ``iree:...``, left out)."""
        return {k: v for k, v in self.stage_seconds.items() if ":" not in k}

    def text(self) -> str:
        """The report as a few lines of text."""
        lines = []
        if self.stage_seconds:
            top = self.top_stage_seconds
            lines.append("stages: " + ", ".join(f"{k} {v:.1f}s" for k, v in top.items()))
        if self.fallback_used:
            lines.append(f"IREE flags fallback: {self.fallback_used}")
        if self.winograd_fallback:
            lines.append(f"Winograd off (IREE failed with it): {self.winograd_fallback}")
        if self.cpu_target is not None:
            c = self.cpu_target
            lines.append(f"CPU: {c.cpu or 'generic'} ({c.format}), {len(c.features)} features")
        lines.append(f"precision: {self.precision}")
        if self.precision_note:
            lines.append(f"  {self.precision_note}")
        q = self.quantization
        if q.get("contractions"):
            c = q["contractions"]
            lines.append(
                f"  quantization: {q.get('mode', 'from the model')}"
                + (f", observer {q['observer']}" if q.get("observer") else "")
                + (", per-channel weights" if q.get("per_channel") else "")
                + f"; contractions: {c['integer']} integer (i8 x i8 -> i32), {c['float']} float"
            )
            if q.get("in_int16_kernels"):
                fused = q.get("int16_epilogues", 0)
                lines.append(
                    f"  {q['in_int16_kernels']} integer Linear layer(s) in the exact 16-bit "
                    "multiply-add kernel (integer_contractions=kernel)"
                    + (f", {fused} with the dequantize after it fused" if fused else "")
                )
            if q.get("computed_in_f32"):
                lines.append(
                    f"  {q['computed_in_f32']} integer contraction(s) computed as f32 on the same "
                    "integers, rounded back (integer_contractions: this CPU has no exact int8 dot "
                    "product, or no fast integer kernel takes them)"
                )
        for e in self.precision_errors:
            lines.append(
                f"  output {int(e['output'])}: relative error {e['rel_l2']:.2e} (L2), max abs "
                f"{e['max_abs']:.3g} (max |fp32| {e['ref_max_abs']:.3g}) against the fp32 "
                f"compile, {self.precision_inputs}"
            )
        return "\n".join(lines)

    __str__ = text


def _tuning_host(opts: CompileOptions, target: str) -> HostIdentity | None:
    """Whose records this compile applies: the device ``tuning_device`` names (the identity
    tune() recorded for that runner), else this host for the cpu target; None when records
    measured here would say nothing of the machine the module is for."""
    if opts.tuning_db is False:
        return None
    if opts.tuning_device not in (None, "", "local"):
        assert opts.tuning_device is not None
        return device_identity(_tuning_db(opts), opts.tuning_device, opts.tuning_threads)
    if target != "cpu":
        return None
    return HostIdentity.current(threads=opts.tuning_threads)


def _tuning_db(opts: CompileOptions) -> Path | None:
    return None if opts.tuning_db in (None, True, False) else Path(str(opts.tuning_db))


def _tuning_request(opts: CompileOptions, host: HostIdentity | None) -> TuningRequest:
    """The tuned configs this compile applies: the best records of ``host``
    (``_tuning_host``)."""
    request = TuningRequest(collect=opts.tuning_collect)
    if host is None:
        return request
    best, note = records_for(_tuning_db(opts), host)
    request.configs = {sig: r.config for sig, r in best.items()}
    request.source = note
    return request


def _winograd_choices(
    opts: CompileOptions, pipeline: Pipeline, host: HostIdentity | None
) -> TunedChoices | None:
    """Under ``tuned`` for any of the target's algorithm choices (Winograd, offload, the
    generated GEMM and attention kernels): the choices measured on ``host`` (none when the
    tuning database is off or no host's records apply), for xgen-winograd-convs and
    xgen-attention-kernels."""
    names = (
        "winograd",
        "offload",
        "gemm_kernels",
        "attention_kernels",
        "matmul_split",
        "conv_split",
        "offload_convs",
        "int8_pattern_kernels",
    )
    if "tuned" not in [pipeline.option_value(n) for n in names]:
        return None
    if host is None:
        return TunedChoices(source="no tuning database used")
    records, note = choice_records_for(_tuning_db(opts), host)
    return TunedChoices(records, note)


PRECISIONS = ("fp32", "bf16", "int8")


def _target_options(pipeline: Pipeline, opts: CompileOptions) -> dict[str, str]:
    """``target_options`` with ``precision=`` folded in: it is the target's option of that
    name; a target without one computes in fp32 only."""
    values = dict(opts.target_options)
    if opts.precision is None:
        return values
    if opts.precision not in PRECISIONS:
        raise UnknownNameError("precision", str(opts.precision), list(PRECISIONS))
    if any(o.name == "precision" for o in pipeline.options):
        if values.get("precision", opts.precision) != opts.precision:
            raise XGenError(
                f"precision={opts.precision!r} and target_options precision="
                f"{values['precision']!r} disagree; give one"
            )
        values["precision"] = opts.precision
    elif opts.precision != "fp32":
        able = [n for n in available_pipelines() if load_pipeline(n).option_value("precision")]
        raise XGenError(
            f"target '{pipeline.name}' cannot compile in {opts.precision}: its pipeline "
            f"(pipelines/{pipeline.name}.toml) has no 'precision' option, it computes in fp32 "
            f"only (targets with one: {', '.join(able)})"
        )
    return values


def _cpu_target(pipeline: Pipeline, extra_flags: list[str]) -> CpuTarget | None:
    if "llvm-cpu" not in pipeline.backends:
        return None
    return resolve_cpu_target(tuple([*pipeline.flags, *extra_flags]))


def _meet_needs(
    base: Pipeline, pipeline: Pipeline, values: dict[str, str], cpu: CpuTarget | None
) -> tuple[Pipeline, str]:
    """The pipeline with each option value whose CPU ``needs`` the target lacks set back to
    the option's default (a FallbackWarning each), and what was changed."""
    if cpu is None:
        return pipeline, ""
    unmet = pipeline.unmet_needs(set(cpu.features))
    if not unmet:
        return pipeline, ""
    defaults = {o.name: o.default for o in pipeline.options}
    notes = []
    for name, value, need in unmet:
        values[name] = defaults[name]
        notes.append(
            f"{name}={value} needs one of the CPU features {', '.join(need)}, which the target "
            f"CPU '{cpu.cpu or 'generic'}' lacks; compiled with {name}={defaults[name]}"
        )
        warn_fallback(f"target '{pipeline.name}': {notes[-1]}")
    return base.with_options(values), "; ".join(notes)


def _add_reflection(module: ir.Module, entry: str, values: dict[str, str]) -> None:
    """Add ``values`` to the entry function's reflection (``iree.reflection``): the module
    carries them (``iree-dump-module`` shows them) and ``load()`` reads them."""
    try:
        func = find_func(module.operation, entry)
    except KeyError:
        return
    with module.context:
        attrs = func.attributes
        old = attrs["iree.reflection"] if "iree.reflection" in attrs else None
        entries = {a.name: a.attr for a in ir.DictAttr(old)} if old is not None else {}
        entries.update({k: ir.StringAttr.get(v) for k, v in values.items()})
        attrs["iree.reflection"] = ir.DictAttr.get(entries)


def _record_cpu_target(module: ir.Module, entry: str, cpu: CpuTarget) -> None:
    """The CPU the code is compiled for, in the entry's reflection: ``load()`` checks it
    against the host."""
    features = ",".join(f"+{f}" for f in cpu.features)
    values = {REFLECTION_KEY: features, CPU_KEY: cpu.cpu, FORMAT_KEY: cpu.format}
    _add_reflection(module, entry, values)


def plugins_used(module: ir.Module) -> list[str]:
    """The BYOC backends whose imports the module's kernels call (their executable plugins
    must be loaded wherever it runs)."""
    from .byoc.onednn import BACKENDS
    from .codegen.dispatch import EXECUTABLE_ATTR

    texts = [
        ir.StringAttr(op.attributes[EXECUTABLE_ATTR]).value
        for op in module.body.operations
        if op.operation.name == "func.func" and EXECUTABLE_ATTR in op.operation.attributes
    ]
    return sorted(b.name for b in BACKENDS.values() if any(b.prefix in t for t in texts))


def _record_plugins(module: ir.Module, entry: str, rewrites: Any) -> dict[str, int]:
    """The ops BYOC offload handed to a library ({what: count}, from the pass's counts); the
    backends whose imports the module's kernels call go into the entry's reflection
    (``load()`` reads them: runtime/plugins.py)."""
    used = plugins_used(module)
    if used:
        _add_reflection(module, entry, {PLUGINS_KEY: ",".join(used)})
    return dict((rewrites or {}).get("xgen-byoc-offload", {}))


def _as_arrays(result: Any) -> list[Any]:
    import numpy as np

    outs = result if isinstance(result, (tuple, list)) else (result,)
    arrays = []
    for o in outs:
        if type(o).__module__.startswith("torch"):
            o = o.detach().float().numpy()
        arrays.append(np.asarray(o, dtype=np.float64))
    return arrays


def _precision_errors(
    compiled: CompiledModule,
    model: Any,
    example_inputs: Sequence[Any] | None,
    target: str,
    options: dict[str, Any],
    report: CompileReport,
) -> None:
    """Each output's error against the same model compiled in fp32, on the example inputs
    (random ones without them); a module this host cannot run gets a note instead."""
    import numpy as np

    skip = ("dump_ir", "dump_executables", "calibration", "quantization")
    ref_opts = {k: v for k, v in options.items() if k not in skip}
    ref_opts["target_options"] = {**dict(options.get("target_options", {})), "precision": "fp32"}
    ref_opts.update(precision="fp32", precision_check=False, verbose=False)
    try:
        compiled.check_device()
    except XGenError as e:
        report.precision_note = f"errors against fp32 not measured: {e}"
        return
    reference = compile(model, example_inputs, target, **ref_opts)
    if example_inputs is not None:
        inputs, report.precision_inputs = list(example_inputs), "example inputs"
    else:
        inputs, report.precision_inputs = compiled.random_inputs(), "random inputs (seed 0)"
    got, want = _as_arrays(compiled(*inputs)), _as_arrays(reference(*inputs))
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        norm = float(np.linalg.norm(w))
        diff = float(np.linalg.norm(g - w))
        report.precision_errors.append(
            {
                "output": i,
                "rel_l2": diff / norm if norm else diff,
                "max_abs": float(np.max(np.abs(g - w))) if g.size else 0.0,
                "ref_max_abs": float(np.max(np.abs(w))) if w.size else 0.0,
            }
        )
    if all(e["rel_l2"] == 0 for e in report.precision_errors):
        report.precision_note = (
            "every output equals the fp32 compile's: no contraction was demoted (IREE demotes "
            "named matmul/conv ops only; convs it made channels-last generics and our generated "
            "f32 kernels stay f32, docs/precision.md)"
        )


def _int8_source(
    model: Any, example_inputs: Sequence[Any] | None, opts: CompileOptions, report: CompileReport
) -> Any:
    """What an int8 compile imports: ``model`` quantized by compress.quantize, or ``model``
    itself when it is an ONNX model that is quantized already."""
    from .compress.quantize import is_quantized_onnx, quantization_settings, quantize

    if _is_onnx(model):
        import onnx

        proto = model if isinstance(model, onnx.ModelProto) else onnx.load(str(model))
        if is_quantized_onnx(proto):
            if opts.calibration is not None or opts.quantization:
                raise XGenError(
                    "precision='int8': the ONNX model is quantized already; calibration= and "
                    "quantization= apply to a float model"
                )
            report.quantization = {"mode": "from the model"}
            made = quantization_settings(proto) or {}  # one of compress.quantize's models
            if made.get("pruned_layers"):
                report.quantization["pruned_layers"] = made["pruned_layers"]
            return proto
    if opts.dynamic_shapes is not None:
        raise XGenError(
            "precision='int8' quantizes the model at the example inputs' shapes: "
            "dynamic_shapes is not supported with it (quantize a dynamic-shape ONNX model "
            "with compress.quantize and compile that)"
        )
    settings = dict(opts.quantization or {})
    try:
        proto = quantize(model, example_inputs, calibration=opts.calibration, **settings)
    except TypeError as e:
        raise XGenError(f"quantization={settings!r}: {e} (compress.quantize's keywords)") from None
    report.quantization = quantization_settings(proto) or {}
    return proto


def _pruned_int8_note(report: CompileReport) -> None:
    """What an int8 compile did with a pruned model's layers: their sparse kernels run where
    the layer's contraction was computed in f32 on its integers (xgen-integer-in-float) and
    then raised like an fp32 one, or where xgen-int8-pattern-kernels took its integer conv (on
    VNNI or aarch64's sdot); a pruned layer whose contraction stayed integer otherwise runs
    dense: one warning, and the report says so. Counted by the contractions that stayed
    integer as well as by the kernels raised: sibling layers merged into one contraction (Q, K
    and V) make one kernel, so fewer kernels than pruned layers alone does not mean some
    stayed integer."""
    pruned = report.quantization.get("pruned_layers")
    if not pruned:
        return
    int8_sparse = report.quantization.get("in_int8_pattern_kernels", 0)
    sparse = int8_sparse + report.rewrites.get("xgen-raise-pattern-conv", {}).get("raised", 0)
    sparse += report.rewrites.get("xgen-raise-block-linear", {}).get("raised", 0)
    kinds = report.quantization.get("contractions", {})
    # the 16-bit kernel takes no layer the block-sparse kernel would (xgen-integer-gemm-kernels)
    integer = (
        kinds.get("integer", 0)
        - report.quantization.get("computed_in_f32", 0)
        - report.quantization.get("in_int16_kernels", 0)
        - int8_sparse
    )
    names = f"{', '.join(list(pruned)[:4])}{', ...' if len(pruned) > 4 else ''}"
    if int8_sparse and (integer <= 0 or sparse >= len(pruned)):
        note = (
            f"{len(pruned)} pruned layer(s) ({names}) run in sparse kernels: {int8_sparse} "
            "on their int8 values in dot products (VNNI, sdot: xgen-int8-pattern-kernels), "
            f"{sparse - int8_sparse} computed in f32 on them (a dense-enough layer stays dense)"
        )
    elif integer <= 0 or sparse >= len(pruned):
        note = (
            f"{len(pruned)} pruned layer(s) ({names}) are computed in f32 on their int8 values "
            f"(integer_contractions), where the sparse kernels take them: {sparse} sparse "
            "kernel(s) (merged sibling layers share one; a dense-enough layer stays dense)"
        )
    elif report.rewrites.get("xgen-int8-pattern-kernels", {}).get(DENSE_BY_CHOICE):
        note = (
            f"{len(pruned)} pruned layer(s) ({names}) run as dense integer contractions, as "
            "the option int8_pattern_kernels chose (false; or tuned: the int8 pattern kernel "
            "measured slower in the model on this host, or the rule where unmeasured: "
            "report.tuning.choices)"
        )
    else:
        note = (
            f"{integer} of {kinds.get('integer', 0)} integer contraction(s) stayed integer, "
            f"and the pruned layers among them ({len(pruned)} pruned: {names}) keep their zeros "
            "in int8 but run as dense integer contractions: the sparse kernels take only "
            "contractions computed in f32 (integer_contractions=float) and, on a CPU with "
            "VNNI or aarch64's dot product, pattern-pruned integer convs"
        )
        warn_fallback(f"precision='int8': {note}")
    report.quantization["pruned_note"] = note
    report.precision_note = "; ".join(x for x in (report.precision_note, note) if x)


def _contraction_kinds(module: ir.Module) -> dict[str, int]:
    """The imported module's contractions: integer (quantized or integer-typed operands) and
    float ones."""
    from .irutil import ops_where

    def is_contraction(op: ir.Operation) -> bool:
        n = op.name
        return n.startswith("linalg.") and any(
            k in n for k in ("matmul", "conv_", "matvec", "vecmat", "contract")
        )

    counts = {"integer": 0, "float": 0}
    for op in ops_where(module.operation, is_contraction):
        elem = str(ir.ShapedType(op.operands[0].type).element_type)
        counts["integer" if elem.startswith(("i", "ui")) else "float"] += 1
    return counts


def _import(
    model: Any, example_inputs: Sequence[Any] | None, opts: CompileOptions
) -> tuple[ir.Module, Bounds]:
    """The imported module and the bounds of its dynamic input dims ({(input, dim): (min,
    max)}, only those the module must check)."""
    pt2 = isinstance(model, (str, Path)) and Path(model).suffix == ".pt2"
    if opts.dynamic_shapes is None:
        if pt2:  # a program exported with dynamic shapes carries their bounds
            from .frontend.torch_import import dynamic_dim_bounds, load_pt2

            prog = load_pt2(model, opts.trust_pickle)
            return import_model(prog), dynamic_dim_bounds(prog)
        module = import_model(model, example_inputs, trust_pickle=opts.trust_pickle)
        if _is_exported(model):
            from .frontend.torch_import import dynamic_dim_bounds

            return module, dynamic_dim_bounds(model)
        return module, {}
    if _is_onnx(model):
        from .frontend.onnx_import import import_onnx, onnx_dynamic_dims

        dims, bounds = onnx_dynamic_dims(opts.dynamic_shapes)
        return import_onnx(model, dynamic_dims=dims)[0], bounds
    import torch

    if isinstance(model, torch.nn.Module):
        from .frontend.torch_import import dynamic_dim_bounds, export_program

        if example_inputs is None:
            raise XGenError("dynamic_shapes needs example_inputs to export the nn.Module with")
        prog = export_program(model, example_inputs, opts.dynamic_shapes)
        return import_model(prog), dynamic_dim_bounds(prog)
    raise XGenError(
        f"dynamic_shapes applies to an nn.Module (passed to torch.export.export) or an ONNX "
        f"model; a {type(model).__name__} already has its shapes (export it with "
        "dynamic_shapes, or write the dims as '?' in the MLIR)"
    )


def _batch_loop(
    module: ir.Module, model: Any, example_inputs: Sequence[Any] | None, opts: CompileOptions
) -> tuple[ir.Module, str]:
    """``module`` as a loop over its batch items, each through the model imported at batch
    1 (``frontend/batch_loop.py``), when its dynamic dims are one batch the items never meet
    across; else ``module`` and why not."""
    import torch

    from .frontend.batch_loop import batch_axes, wrap_items

    if opts.dynamic_shapes is None or not isinstance(model, torch.nn.Module):
        return module, ""
    assert example_inputs is not None  # _import refused a dynamic nn.Module without them
    axes = batch_axes(module, "main")
    if isinstance(axes, str):
        return module, f"not a loop over items: {axes}"
    main = find_func(module.operation, "main")
    ftype = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value)
    dynamic_in, dynamic_out = [str(t) for t in ftype.inputs], [str(t) for t in ftype.results]
    items = [
        x.narrow(a, 0, 1) if a is not None and isinstance(x, torch.Tensor) else x
        for x, a in zip(example_inputs, axes.inputs, strict=False)
    ]
    item_module = import_model(model, tuple(items), trust_pickle=opts.trust_pickle)
    wrap_items(item_module, "main", axes, dynamic_in, dynamic_out)
    dims = ", ".join(f"input {i} dim {a}" for i, a in enumerate(axes.inputs) if a is not None)
    return item_module, f"a loop over the batch ({dims}), each item compiled at batch 1"


def _is_exported(model: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(model, torch.export.ExportedProgram)


def _is_onnx(model: Any) -> bool:
    if isinstance(model, (str, Path)) and Path(model).suffix == ".onnx":
        return True
    onnx = sys.modules.get("onnx")
    return onnx is not None and isinstance(model, onnx.ModelProto)


def compile(
    model: Any,
    example_inputs: Sequence[Any] | Any | None = None,
    target: str = "cpu",
    **options: Any,
) -> CompiledModule:
    """Compile ``model`` for ``target`` and return a callable :class:`CompiledModule`.

    ``model``: an ``nn.Module`` (with ``example_inputs``), a ``torch.export`` program, an ONNX
    ``ModelProto``, or a path to a ``.pt2`` / ``.onnx`` / ``.mlir`` / ``.mlirbc`` file, or an
    imported linalg-on-tensors ``ir.Module``, which is left as it was (the passes run on a
    copy, so one import can be compiled with several option sets).

    Where IREE cannot compile a module holding Winograd convs and the caller left the target's
    ``winograd`` option alone, the compile is retried with Winograd off (its transforms are
    what IREE's fusion has failed on: a stack-allocated tile over the limit), with a warning;
    the report's ``winograd_fallback`` says why. That retry comes before the pipeline's
    fallback flag sets, which are tried last with Winograd on; the first error is raised when
    all fail. A module without Winograd convs goes straight through the flag sets.
    """
    retry = _without_winograd(target, options)
    if retry is None:
        return _compile_once(model, example_inputs, target, **options)
    try:
        return _compile_once(model, example_inputs, target, winograd_first=True, **options)
    except BackendCompileError as first:
        if not first.winograd_convs:
            raise
        warn_fallback(
            f"target '{target}': IREE could not compile the module with Winograd convs; "
            "retrying with them as direct convs (winograd=false)"
        )
        try:
            compiled = _compile_once(model, example_inputs, target, **retry)
        except XGenError:
            try:  # the flag sets IREE's failure may need, with the Winograd convs kept
                return _compile_once(
                    model, example_inputs, target, flag_sets=slice(1, None), **options
                )
            except XGenError:
                also = "also failed: Winograd off with every flag set, and the fallback flag sets"
                raise BackendCompileError(f"{first}\n({also})", first.kept) from None
        compiled.report.winograd_fallback = str(first).splitlines()[0]
        return compiled


def _winograd_convs(rewrites: dict[str, dict[str, int]]) -> int:
    """How many convs xgen-winograd-convs turned into Winograd transforms."""
    done = rewrites.get("xgen-winograd-convs", {})
    return sum(n for what, n in done.items() if " as F(" in what)


def _without_winograd(target: str, options: dict[str, Any]) -> dict[str, Any] | None:
    """``options`` with the target's Winograd off, or None where there is nothing to retry:
    the caller chose ``winograd`` (a tuning candidate does), or the target has no such
    option."""
    chosen = dict(options.get("target_options") or {})
    if "winograd" in chosen:
        return None
    try:
        pipeline = load_pipeline(target)
    except XGenError:
        return None
    if all(o.name != "winograd" for o in pipeline.options):
        return None
    return {**options, "target_options": {**chosen, "winograd": "false"}}


def _compile_once(
    model: Any,
    example_inputs: Sequence[Any] | Any | None = None,
    target: str = "cpu",
    *,
    winograd_first: bool = False,
    flag_sets: slice = slice(None),
    **options: Any,
) -> CompiledModule:
    """``compile`` with the options as given. ``winograd_first``: the caller retries without
    Winograd convs, so a module holding some tries only the pipeline's main flags (a failure
    then carries ``winograd_convs``); ``flag_sets``: as in ``backend.iree.compile_vmfb``."""
    opts = CompileOptions.from_kwargs(options)
    check_entry_name(opts.entry)
    try:
        pipeline = load_pipeline(target)
    except UnknownNameError as e:
        raise UnknownNameError("target", target, e.known) from None
    base = pipeline
    values = _target_options(base, opts)
    pipeline = base.with_options(values)
    cpu = _cpu_target(pipeline, list(opts.extra_iree_flags))
    pipeline, precision_note = _meet_needs(base, pipeline, values, cpu)
    if example_inputs is not None and not isinstance(example_inputs, (tuple, list)):
        example_inputs = (example_inputs,)
    report = CompileReport(cpu_target=cpu, precision_note=precision_note)
    report.precision = pipeline.option_value("precision") or "fp32"

    source = model
    if report.precision == "int8":
        t0 = time.perf_counter()
        source = _int8_source(model, example_inputs, opts, report)
        report.stage_seconds["quantize"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    module, bounds = _import(source, example_inputs, opts)
    if module is model:  # an ir.Module of the caller's: the passes rewrite in place
        module = ir.Module.parse(snapshot(module), module.context)
    if pipeline.option_value("batch_loop") == "true":
        module, report.batch_loop = _batch_loop(module, source, example_inputs, opts)
    if report.precision == "int8":
        report.quantization["contractions"] = _contraction_kinds(module)
    report.stage_seconds["import"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    dump_dir = Path(opts.dump_ir) if opts.dump_ir else None
    report.flops_imported = module_flops(module.operation)
    tuning_host = _tuning_host(opts, target)
    choices = _winograd_choices(opts, pipeline, tuning_host)
    token = CHOICES.set(choices)
    ops_token = OFFLOAD_DECISIONS.set(report.offload_ops)
    try:
        report.rewrites = run_steps(
            module,
            pipeline.pass_steps(opts.entry),
            what=f"pipeline '{pipeline.name}'",
            dump_dir=dump_dir,
            keep_temps=opts.keep_temps,
        )
    finally:
        CHOICES.reset(token)
        OFFLOAD_DECISIONS.reset(ops_token)
    report.flops_after_rewrites = module_flops(module.operation)
    if bounds:
        add_dim_bound_checks(module.operation, opts.entry, bounds)
    if cpu is not None:
        _record_cpu_target(module, opts.entry, cpu)
    report.offload = _record_plugins(module, opts.entry, report.rewrites)
    if report.quantization.get("contractions"):
        done = report.rewrites.get("xgen-integer-in-float", {})
        report.quantization["computed_in_f32"] = sum(
            n for k, n in done.items() if k.endswith("-> f32")
        )
        kernels = report.rewrites.get("xgen-integer-gemm-kernels", {})
        report.quantization["in_int16_kernels"] = kernels.get("int16 kernels", 0)
        report.quantization["in_int8_pattern_kernels"] = report.rewrites.get(
            "xgen-int8-pattern-kernels", {}
        ).get("int8 pattern kernels", 0)
        report.quantization["int16_epilogues"] = kernels.get(
            "of them with their dequantize epilogues", 0
        )
        _pruned_int8_note(report)
    report.stage_seconds["xgen-passes"] = time.perf_counter() - t0

    tuning = _tuning_request(opts, tuning_host)
    t0 = time.perf_counter()
    ext = opts.external_weights
    ext_bytes = None if ext is None or ext is False else (0 if ext is True else int(ext))
    winograd_convs = _winograd_convs(report.rewrites)
    if winograd_first and winograd_convs:
        flag_sets = slice(0, 1)
    try:
        result = compile_outputs(
            module,
            pipeline,
            extra_flags=list(opts.extra_iree_flags),
            dump_executables=Path(opts.dump_executables) if opts.dump_executables else None,
            external_weights=ext_bytes,
            stem="model",
            keep_temps=opts.keep_temps,
            tuning=tuning,
            flag_sets=flag_sets,
        )
    except BackendCompileError as e:
        e.winograd_convs = winograd_convs
        raise
    report.tuning = result.dispatch_records.get("tuning")
    if choices is not None and choices.log:  # each conv's algorithm and why
        report.tuning = report.tuning or tuning
        report.tuning.choices = list(choices.log)
    report.stage_seconds["iree-compile"] = time.perf_counter() - t0
    report.iree_flags, report.fallback_used = result.flags, result.fallback_used
    report.fusion_plans, report.fusion_note = result.fusion_plans, result.fusion_note
    report.dropped_steps = result.dropped_steps
    report.shared_packs = shared_packs_record(result.dispatch_records, result.dropped_steps)
    report.stage_seconds.update({f"iree:{k}": v for k, v in result.stage_seconds.items()})
    if opts.verbose:
        timings = ", ".join(f"{k} {v:.1f}s" for k, v in report.stage_seconds.items())
        print(f"xgen_mlir.compile[{target}]: {timings}", file=sys.stderr)

    params, weights_dir = None, None
    if result.weights is not None and result.weights.weights:
        weights_dir = Path(tempfile.mkdtemp(prefix="xgen-w-"))
        try:
            params = write_irpa(result.weights.weights, weights_dir / "weights.irpa")
        except BaseException:
            shutil.rmtree(weights_dir, ignore_errors=True)
            raise
    build_info = {  # for bundles' manifests
        "target_options": dict(pipeline.option_values),
        "iree_flags": result.portable_flags(),
        "arch": pipeline.runtime.arch,
        "emulator": pipeline.runtime.emulator,
    }
    compiled = CompiledModule(
        result.vmfb,
        entry=opts.entry,
        device=opts.device,
        target=target,
        parameters=params,
        devices=pipeline.runtime.devices or None,
        artifacts=result.artifacts,
        report=report,
        build_info=build_info,
    )
    if weights_dir is not None:  # the archive lives as long as the module (save_bundle copies it)
        weakref.finalize(compiled, shutil.rmtree, weights_dir, ignore_errors=True)
    if report.quantization.get("mode") == "from the model":
        note = "no fp32 model to measure errors against: the ONNX model came quantized"
        report.precision_note = "; ".join(x for x in (report.precision_note, note) if x)
    elif report.precision != "fp32" and opts.precision_check:
        t0 = time.perf_counter()
        _precision_errors(compiled, model, example_inputs, target, options, report)
        report.stage_seconds["precision-check"] = time.perf_counter() - t0
    return compiled
