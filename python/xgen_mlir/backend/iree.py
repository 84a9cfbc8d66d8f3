"""Hand-off to IREE: bytecode of our linalg module -> a ``.vmfb`` for the target.

IREE has its own MLIR copy, so the module crosses as MLIR bytecode in a temp file. The
target's flags come from its pipeline file; if IREE rejects the module with them, the
pipeline's fallbacks are tried in order (each drops flags known to break some models), and
the one that worked is recorded. IREE's diagnostics are kept, trimmed, in the error, and
the scratch folder with IREE's input is removed, failed or not, unless the user asked to keep
it (``keep_temps``): then the error names it and the ``iree-compile`` command to rerun.
"""

from __future__ import annotations

import platform
import re
import shlex
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._mlir import ir, iree_binding
from .._paths import iree_tool
from ..diagnostics import format_location, warn_fallback
from ..errors import BackendCompileError, XGenError
from ..fileio import KEEP_TEMPS_HOW
from ..fileio import keep_temps as temps_kept
from ..pipelines import Pipeline
from .dispatch_stage import DispatchStageError, compile_with_dispatch_steps, error_lines
from .extern_kernels import materialize
from .params import Externalized, externalize_weights


@dataclass
class BackendResult:
    vmfb: bytes  # the compiled output (C source text as bytes for output_format="vm-c")
    flags: list[str]
    fallback_used: str | None = None
    seconds: float = 0.0
    attempts: list[str] = field(default_factory=list)
    weights: Externalized | None = None  # set when large weights went to a parameter archive
    fusion_plans: list[Any] = field(default_factory=list)  # xgen_mlir's plan, when it was used
    fusion_note: str = ""  # why the dispatch steps were not used, when they were not
    stage_seconds: dict[str, float] = field(default_factory=dict)
    artifacts: dict[str, bytes] = field(default_factory=dict)  # bare metal: model.o/.h, C module
    dispatch_records: dict[str, Any] = field(default_factory=dict)  # DispatchState.records
    dropped_steps: dict[str, str] = field(default_factory=dict)  # optional step -> why dropped

    def portable_flags(self) -> list[str]:
        """The flags with the scratch folder of a static library's path left out."""
        return [re.sub(r"=.*/model\.o$", "=model.o", f) for f in self.flags]


def _trim(text: str, limit: int = 40) -> str:
    text = "\n".join(ln for ln in text.splitlines() if "Invoked with" not in ln)
    lines = error_lines(text, limit=1 << 30)
    return "\n".join(lines[:limit]) + (
        f"\n... ({len(lines) - limit} more lines)" if len(lines) > limit else ""
    )


def _walk(op: Any) -> Any:
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                yield inner.operation
                yield from _walk(inner.operation)


def _f64_note(module: ir.Module) -> str:
    """For an error on a module that holds float64 values: where they are, and what to do.
    IREE demotes f64 to f32 before codegen (``--iree-input-demote-f64-to-f32``, on by default),
    and that demotion fails on f64 weights, with an error that does not mention f64."""
    inputs, ops, first = [], 0, ""
    for op in module.body.operations:
        op = op.operation
        if op.name == "func.func" and "sym_visibility" not in op.attributes:
            name = ir.StringAttr(op.attributes["sym_name"]).value
            fn = ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value)
            inputs += [
                f"@{name} input {i}: {t}" for i, t in enumerate(fn.inputs) if "f64" in str(t)
            ]
    for op in _walk(module.operation):
        if any("f64" in str(r.type) for r in op.results):
            ops += 1
            loc = format_location(op.location)
            if not first and "unknown" not in loc:  # the first one a user can find
                first = f", the first with a location: {op.name} at {loc}"
    if not inputs and not ops:
        return ""
    where = "; ".join(inputs[:3]) + (f" ... {len(inputs) - 3} more" if len(inputs) > 3 else "")
    return (
        f"\nThe model computes in float64 ({where or 'no f64 inputs'}; {ops} op(s) make f64 "
        f"values{first}). IREE demotes f64 to f32 "
        "(--iree-input-demote-f64-to-f32, on by default), which fails on f64 weights: convert "
        "the model and its inputs to float32 (model.float()), or on llvm-cpu targets keep f64 "
        "with extra_iree_flags=['--iree-input-demote-f64-to-f32=false']."
    )


def iree_flags(pipeline: Pipeline, extra: list[str] | None = None) -> list[str]:
    return list(pipeline.flags) + list(extra or [])


# Vulkan profiles without 16-bit storage buffers: IREE 3.13 then reads an f16/bf16 buffer as
# if it held 32-bit values and returns wrong numbers (an fp16 MLP gave all zeros on llvmpipe).
_NO_16BIT_STORAGE = ("vp_android_baseline_2022",)
_STORAGE_16BIT = (
    "--iree-vulkan-target-features=spirv:v1.3,cap:Shader,cap:Float16,cap:Int16,"
    "cap:StorageBuffer16BitAccess,ext:SPV_KHR_16bit_storage"
)
_FLOAT16 = re.compile(r"\bb?f16\b")


def _check_16bit_storage(module: ir.Module, pipeline: Pipeline, flags: list[str]) -> None:
    """Refuse an f16/bf16 model for a Vulkan profile without 16-bit storage, unless the flags
    declare the device's 16-bit features: IREE would build it and return wrong numbers."""
    if "vulkan-spirv" not in pipeline.backends:
        return
    profiles = [f.split("=", 1)[1] for f in flags if f.startswith("--iree-vulkan-target=")]
    features = [f for f in flags if f.startswith("--iree-vulkan-target-features=")]
    if not profiles or profiles[-1] not in _NO_16BIT_STORAGE or features:
        return
    found: list[str] = []

    def visit(op: Any) -> Any:
        if not found and any(_FLOAT16.search(str(r.type)) for r in op.results):
            found.append(f"{op.name} at {op.location}")
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    if found:
        raise BackendCompileError(
            f"this model computes in f16/bf16 (first: {found[0]}), and the Vulkan profile "
            f"'{profiles[-1]}' has no 16-bit storage: IREE would return wrong numbers. For a "
            "device with 16-bit storage (llvmpipe, most desktop GPUs) pass "
            f"extra_iree_flags=['{_STORAGE_16BIT}'] (bf16 also "
            "'--iree-flow-inline-constants-max-byte-length=0'), or run the model in float32."
        )


# LLVM's x86 backend in IREE's build crashes ("Do not know how to split this operator's
# operand") on the data-tiled bf16 matmul kernels where the target CPU has no native bf16
_BF16_CONTRACTIONS = ("linalg.matmul", "linalg.batch_matmul", "linalg.conv", "linalg.depthwise")


def _without_bf16_data_tiling(module: ir.Module, flags: list[str]) -> list[str]:
    """``flags`` without data tiling where they compile bf16 contractions (a model in bf16)
    for this host's x86 CPU and it has no native bf16: IREE's data-tiled bf16 kernels crash
    LLVM's instruction selection there, and each of the pipeline's flag sets that keeps data
    tiling failed in turn (MobileNetV2 in bf16: 151 s to reach the last one; without data
    tiling from the start, one compile), so it is dropped at once, with a warning."""
    from ..target import NATIVE_BF16_FLAGS, has_any

    if "--iree-opt-data-tiling" not in flags or "--iree-llvmcpu-target-cpu=host" not in flags:
        return flags
    if platform.machine() not in ("x86_64", "AMD64") or has_any(NATIVE_BF16_FLAGS):
        return flags
    found: list[str] = []

    def visit(op: Any) -> Any:
        if op.name.startswith(_BF16_CONTRACTIONS) and any(
            "bf16" in str(v.type) for v in op.operands
        ):
            found.append(op.name)
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    if not found:
        return flags
    warn_fallback(
        "bf16 contractions on a CPU without native bf16 (no AVX512-BF16 or AMX-BF16): IREE's "
        "data-tiled bf16 kernels crash LLVM's x86 backend here, so the model is compiled "
        "without data tiling"
    )
    return [f for f in flags if f != "--iree-opt-data-tiling"]


def _required_note(pipeline: Pipeline, required: list[str], why: str) -> str:
    return (
        f"target '{pipeline.name}' gives correct numbers only with its dispatch step(s) "
        f"{', '.join(required)} (pipelines/{pipeline.name}.toml says why), which could not run "
        f"here, so the module is refused rather than built without them:\n{why}"
    )


def _warn_fallback(why: str | None, pipeline: Pipeline) -> None:
    if why is not None:
        warn_fallback(
            f"IREE rejected the module with the '{pipeline.name}' flags; fell back: {why}"
        )


def compile_outputs(
    module: ir.Module,
    pipeline: Pipeline,
    *,
    extra_flags: list[str] | None = None,
    dump_executables: Path | None = None,
    external_weights: int | None = None,
    stem: str = "model",
    keep_temps: bool | None = None,
    tuning: Any = None,
    flag_sets: slice = slice(None),
) -> BackendResult:
    """``compile_vmfb`` plus the outputs the pipeline's ``[iree] outputs`` ask for besides the
    module: a static library (``<stem>.o`` + ``<stem>.h``) and the VM program as C source
    (``<stem>_module.c``), in ``result.artifacts``."""
    extra = list(extra_flags or [])
    with tempfile.TemporaryDirectory(prefix="xgen-out-") as out_dir:
        if "static-library" in pipeline.outputs:  # bare metal: object + header beside the module
            extra.append(f"--iree-llvmcpu-static-library-output-path={out_dir}/{stem}.o")
        result = compile_vmfb(
            module,
            pipeline,
            extra_flags=extra,
            dump_executables=dump_executables,
            external_weights=external_weights,
            stem=stem,
            keep_temps=keep_temps,
            tuning=tuning,
            flag_sets=flag_sets,
        )
        if "vm-c" in pipeline.outputs:  # the VM program as C source (no bytecode interpreter)
            c_module = compile_vmfb(
                module,
                pipeline,
                extra_flags=[*extra, "--output-format=vm-c"],
                external_weights=external_weights,
                stem=stem,
                keep_temps=keep_temps,
            )
            result.artifacts[f"{stem}_module.c"] = c_module.vmfb
        for name in (f"{stem}.o", f"{stem}.h"):
            if (Path(out_dir) / name).is_file():
                result.artifacts[name] = (Path(out_dir) / name).read_bytes()
    return result


def compile_vmfb(
    module: ir.Module,
    pipeline: Pipeline,
    *,
    extra_flags: list[str] | None = None,
    dump_executables: Path | None = None,
    work_dir: Path | None = None,
    external_weights: int | None = None,
    stem: str = "input",
    keep_temps: bool | None = None,
    tuning: Any = None,
    flag_sets: slice = slice(None),
) -> BackendResult:
    """Compile ``module`` with IREE for ``pipeline``'s target, with fallbacks.

    ``external_weights``: move ``dense_resource`` weights of at least this many bytes into a
    parameter archive (``result.weights``) instead of the module. ``stem`` names IREE's input
    file, which IREE uses to name static libraries (``<stem>_linked_library_query``).
    The scratch folder holding IREE's input is removed unless it is the caller's ``work_dir``
    or the compile failed and ``keep_temps`` (None: ``XGEN_KEEP_TEMPS``) asks to keep it.
    ``tuning``: a ``fusion.tunable.TuningRequest`` for the ``xgen-apply-tuning`` step.
    ``flag_sets``: which of [the pipeline's flags, its fallbacks...] to try, in order (a caller
    with a cheaper remedy of its own tries that before the fallback flag sets).
    """
    import iree.compiler as ic

    base = iree_flags(pipeline, extra_flags)
    _check_16bit_storage(module, pipeline, base)
    base = _without_bf16_data_tiling(module, base)
    if dump_executables:
        Path(dump_executables).mkdir(parents=True, exist_ok=True)
        base.append(f"--iree-hal-dump-executable-files-to={dump_executables}")
    candidates: list[tuple[str | None, list[str]]] = [(None, base)]
    candidates += [(fb.why, fb.apply(base)) for fb in pipeline.fallbacks]
    candidates = candidates[flag_sets]
    if not candidates:
        raise BackendCompileError(f"target '{pipeline.name}': no IREE flag sets left to try")
    tmp = Path(work_dir or tempfile.mkdtemp(prefix="xgen-iree-"))
    tmp.mkdir(parents=True, exist_ok=True)
    owned = work_dir is None  # our scratch folder
    keep = False  # set when a failed compile's folder is kept for the user
    try:
        weights = None
        src = tmp / f"{stem}.mlirbc"
        if external_weights is None:
            # generated kernels are swapped in through IREE's own bindings (still bytecode)
            if not materialize(module, src):
                with open(src, "wb") as f:
                    module.operation.write_bytecode(f)
        else:  # textual hand-off: the weight rewrite uses IREE ops torch-mlir cannot parse
            if materialize(module, src):
                iree_ir = iree_binding().ir

                text = str(iree_ir.Module.parse(src.read_bytes(), iree_ir.Context()))
            else:
                text = str(module)
            weights = externalize_weights(text, min_bytes=external_weights)
            text, weights.text = weights.text, ""  # keep only the bytes
            src = tmp / f"{stem}.mlir"
            src.write_text(text)
        attempts: list[str] = []
        start = time.perf_counter()
        fusion_note = ""
        stages = pipeline.dispatch_stages()
        can_stage = weights is None and pipeline.outputs == ("vmfb",)
        required = [s.pass_text for _, steps in stages for s in steps if s.required]
        if stages and not can_stage:
            fusion_note = "dispatch steps not used: external weights / non-vmfb outputs"
            if required:
                raise BackendCompileError(_required_note(pipeline, required, fusion_note))
        for why, flags in candidates:
            plan_error: DispatchStageError | None = None
            if stages and can_stage:
                # Stage with each flag set in turn: a model that needs a fallback flag set (an
                # IREE bug on the main flags) still gets the steps on the fallback's flags.
                try:
                    staged = compile_with_dispatch_steps(
                        src, list(pipeline.backends), flags, tmp, stages, keep_temps, tuning
                    )
                    _warn_fallback(why, pipeline)
                    return BackendResult(
                        vmfb=staged.vmfb,
                        flags=flags,
                        fallback_used=why,
                        seconds=time.perf_counter() - start,
                        attempts=attempts,
                        weights=weights,
                        fusion_plans=staged.plans,
                        stage_seconds=staged.seconds,
                        dispatch_records=staged.records,
                        dropped_steps=staged.dropped,
                    )
                except DispatchStageError as e:
                    attempts.append(str(e)[:2000])
                    if e.stage == "before-steps":
                        continue  # these flags fail without any step: try the next flag set
                    plan_error = e
            try:
                vmfb = ic.compile_file(
                    str(src), target_backends=list(pipeline.backends), extra_args=flags
                )
            except ic.CompilerToolError as e:
                attempts.append(_trim(e.stderr if hasattr(e, "stderr") and e.stderr else str(e)))
                plan_error = None  # the flags fail with or without the plan: not the plan's fault
                continue
            if plan_error is not None and required:  # no fallback: the numbers need them
                raise BackendCompileError(_required_note(pipeline, required, str(plan_error)))
            if plan_error is not None:  # IREE takes these flags, but not with our regions
                fusion_note = f"dispatch steps not used: {plan_error}"
                warn_fallback(
                    "xgen_mlir's dispatch steps were rejected; IREE forms the dispatches itself "
                    f"({plan_error})"
                )
            _warn_fallback(why, pipeline)
            return BackendResult(
                vmfb=vmfb,
                flags=flags,
                fallback_used=why,
                seconds=time.perf_counter() - start,
                attempts=attempts,
                weights=weights,
                fusion_note=fusion_note,
            )
        message = (
            f"IREE could not compile the module for target '{pipeline.name}' "
            f"(tried {len(candidates)} flag set{'s' if len(candidates) > 1 else ''}).\n"
            f"First attempt's diagnostics:\n{attempts[0]}{_f64_note(module)}"
        )
        keep = not owned or temps_kept(keep_temps)
        if not keep:
            raise BackendCompileError(
                f"{message}\nIREE's input was not kept; to keep it, {KEEP_TEMPS_HOW}"
            )
        try:
            tool = iree_tool("iree-compile")
        except XGenError:
            tool = "iree-compile"
        targets = [f"--iree-hal-target-backends={b}" for b in pipeline.backends]
        cmd = shlex.join([tool, str(src), *targets, *base, "-o", str(tmp / "out.vmfb")])
        raise BackendCompileError(
            f"{message}\nIREE's input is kept at {src}; reproduce with:\n  {cmd}", tmp
        )
    finally:
        if owned and not keep:
            shutil.rmtree(tmp, ignore_errors=True)
