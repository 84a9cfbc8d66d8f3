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
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from ._mlir import ir
from .analysis.flops import module_flops
from .backend import compile_outputs
from .backend.params import write_irpa
from .diagnostics import check_entry_name
from .errors import UnknownNameError, XGenError
from .frontend import import_model
from .fusion.tunable import TuningRequest
from .passes.dim_bounds import Bounds, add_dim_bound_checks
from .passes.dispatch_passes import shared_packs_record
from .passes.runner import run_steps, snapshot
from .pipelines import load_pipeline
from .runtime import CompiledModule
from .tunedb import HostIdentity, records_for


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
    # Load a .pt2 file as torch.export.load does, running whatever its pickles and shape
    # expressions hold. False: a .pt2 that needs more than plain tensors is refused.
    trust_pickle: bool = False
    # Dynamic input dims, in torch.export's own form: for an nn.Module, passed to
    # torch.export.export (e.g. ({0: torch.export.Dim("batch", min=1, max=64)},), one entry per
    # input); for an ONNX model, the same per-input {dim: Dim or name} makes those dims
    # symbolic (the model's own symbolic dims are kept without it). Bounded dims are checked
    # by the module at call time.
    dynamic_shapes: Any = None

    @classmethod
    def from_kwargs(cls, kwargs: dict[str, Any]) -> CompileOptions:
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(kwargs) - names)
        if unknown:
            raise XGenError(
                f"unknown compile option(s) {unknown}; options are: {', '.join(sorted(names))}"
            )
        return cls(**kwargs)


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
    flops_imported: int = 0  # of the module as imported
    flops_after_rewrites: int = 0  # after our passes (generated kernels count their ops' FLOPs)
    # fusion.tunable.TuningRequest: which contractions got a tuned config, which did not and
    # why, where the configs came from (None: the target has no xgen-apply-tuning step)
    tuning: Any = None


def _tuning_request(opts: CompileOptions, target: str) -> TuningRequest:
    """The tuned configs this compile applies: the best records of this host, when the
    target is this host (records measured here say nothing of another machine)."""
    request = TuningRequest(collect=opts.tuning_collect)
    if opts.tuning_db is False or target != "cpu":
        return request
    db = None if opts.tuning_db in (None, True) else Path(str(opts.tuning_db))
    best, note = records_for(db, HostIdentity.current(threads=opts.tuning_threads))
    request.configs = {sig: r.config for sig, r in best.items()}
    request.source = note
    return request


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
    """
    opts = CompileOptions.from_kwargs(options)
    check_entry_name(opts.entry)
    try:
        pipeline = load_pipeline(target)
    except UnknownNameError as e:
        raise UnknownNameError("target", target, e.known) from None
    pipeline = pipeline.with_options(opts.target_options)
    if example_inputs is not None and not isinstance(example_inputs, (tuple, list)):
        example_inputs = (example_inputs,)
    report = CompileReport()

    t0 = time.perf_counter()
    module, bounds = _import(model, example_inputs, opts)
    if module is model:  # an ir.Module of the caller's: the passes rewrite in place
        module = ir.Module.parse(snapshot(module), module.context)
    report.stage_seconds["import"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    dump_dir = Path(opts.dump_ir) if opts.dump_ir else None
    report.flops_imported = module_flops(module.operation)
    report.rewrites = run_steps(
        module,
        pipeline.pass_steps(opts.entry),
        what=f"pipeline '{pipeline.name}'",
        dump_dir=dump_dir,
        keep_temps=opts.keep_temps,
    )
    report.flops_after_rewrites = module_flops(module.operation)
    if bounds:
        add_dim_bound_checks(module.operation, opts.entry, bounds)
    report.stage_seconds["xgen-passes"] = time.perf_counter() - t0

    tuning = _tuning_request(opts, target)
    t0 = time.perf_counter()
    ext = opts.external_weights
    ext_bytes = None if ext is None or ext is False else (0 if ext is True else int(ext))
    result = compile_outputs(
        module,
        pipeline,
        extra_flags=list(opts.extra_iree_flags),
        dump_executables=Path(opts.dump_executables) if opts.dump_executables else None,
        external_weights=ext_bytes,
        stem="model",
        keep_temps=opts.keep_temps,
        tuning=tuning,
    )
    report.tuning = result.dispatch_records.get("tuning")
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
    return compiled
