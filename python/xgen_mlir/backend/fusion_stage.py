"""Compile through IREE with xgen_mlir's fusion plan deciding the dispatch regions.

IREE's pipeline is split where dispatch regions are formed: IREE runs up to the end of its
global optimizations (so the plan sees the graph IREE would see: channels-last convs,
propagated transposes, hoisted constants), then its own pre-fusion clean-up
(``iree-dispatch-creation-preprocessing-pipeline``: elementwise fusion, reshape movement);
our planner wraps its groups in ``flow.dispatch.region`` ops (IREE's bindings, bytecode in and
out), and IREE resumes from there (``--compile-from=global-optimization``), forming regions
only for the ops we delegated to it. With ``[fusion] shared_packs`` IREE stops once more, after
dispatch creation, for the duplicate-output merge of ``shared_packs.py``.
"""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass, replace
from pathlib import Path

from ..fusion import FusionPlan, form_dispatch_regions
from ..fusion.pads import FLAG as PAD_FLAG
from ..pipelines import FusionSteps
from ..runtime.inspect import iree_tool
from .host import has_avx512
from .shared_packs import FLAG as SHARED_PACKS_FLAG
from .shared_packs import SharedPacks, merge_duplicate_outputs

DATA_TILING_FLAG = "--iree-opt-data-tiling"


@dataclass
class PlannedCompile:
    vmfb: bytes
    plans: list[FusionPlan]
    seconds: dict[str, float]
    shared_packs: SharedPacks | None = None  # None: the step was off or nothing is data-tiled


class FusionStageError(Exception):
    """One of the split pipeline's steps failed (the caller falls back to plain IREE).

    ``stage``: "before-plan" when IREE failed before the plan existed (the flags are at fault,
    not the plan), "plan" or "after-plan" otherwise."""

    def __init__(self, message: str, stage: str = "after-plan") -> None:
        super().__init__(message)
        self.stage = stage


def _run(cmd: list[str], what: str, stage: str = "after-plan") -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        lines = [ln for ln in proc.stderr.splitlines() if "note:" not in ln][:8]
        raise FusionStageError(f"{what} failed: " + "\n".join(lines), stage)


def compile_with_plan(
    src: Path,
    backends: list[str],
    flags: list[str],
    work: Path,
    steps: FusionSteps | None = None,
) -> PlannedCompile:
    """``steps``: the pipeline's ``[fusion]`` table. The target is this host, so the tile
    rules tuned for AVX-512 (transpose, gemv, matmul tiles) are dropped where it has none."""
    import iree.compiler.ir as iree_ir

    seconds: dict[str, float] = {}
    target = [f"--iree-hal-target-backends={b}" for b in backends]
    global_opt, pre, planned, out = (
        work / "global-opt.mlirbc",
        work / "pre-fusion.mlirbc",
        work / "planned.mlirbc",
        work / "planned.vmfb",
    )
    t = time.perf_counter()
    compile_tool = iree_tool("iree-compile")
    _run(
        [compile_tool, str(src), *target, *flags, "--compile-to=global-optimization",
         "--emit-mlir-bytecode", "-o", str(global_opt)],
        "IREE up to global optimization",
        "before-plan",
    )  # fmt: skip
    seconds["iree_global_opt"] = time.perf_counter() - t
    t = time.perf_counter()
    _run(
        [iree_tool("iree-opt"), str(global_opt),
         "--pass-pipeline=builtin.module(iree-dispatch-creation-preprocessing-pipeline)",
         "--emit-bytecode", "-o", str(pre)],
        "IREE's pre-fusion clean-up",
        "before-plan",
    )  # fmt: skip
    seconds["iree_pre_fusion"] = time.perf_counter() - t
    steps = steps or FusionSteps()
    if not has_avx512():
        steps = replace(steps, transpose_tiles=False, gemv_tiles=False, matmul_tiles=False)
    data_tiling = DATA_TILING_FLAG in flags and steps.data_tiling
    # The per-contraction data-tiling hints are an optimization: if IREE rejects the module
    # with them (a pack fused where its codegen cannot take it), plan again without them.
    attempts = [True, False] if data_tiling else [False]
    for hints in attempts:
        t = time.perf_counter()
        module = iree_ir.Module.parse(pre.read_bytes(), iree_ir.Context())
        plans = form_dispatch_regions(module, steps=replace(steps, data_tiling=hints))
        run_flags = flags
        if hints and not any(t.tiled for p in plans for t in p.tiling):
            # no op carries the hint: IREE would tile them all, so drop the flag instead
            run_flags = [f for f in flags if f != DATA_TILING_FLAG]
        if any(pp.fused for p in plans for pp in p.pad_placements):
            run_flags = [*run_flags, PAD_FLAG]  # the pads left for their depthwise readers
        try:
            module.operation.verify()
        except iree_ir.MLIRError as e:  # a planner bug: never hand IREE broken IR
            msg = f"planned module does not verify: {str(e)[:500]}"
            raise FusionStageError(msg, "plan") from None
        with open(planned, "wb") as f:
            module.operation.write_bytecode(f)
        del module
        plans = [p.detach() for p in plans]
        seconds["plan"] = seconds.get("plan", 0.0) + time.perf_counter() - t
        t = time.perf_counter()
        shared = None
        try:
            if steps.shared_packs and DATA_TILING_FLAG in run_flags:
                shared = _resume_with_shared_packs(compile_tool, planned, target, run_flags, out)
            if shared is None or not shared.fused:
                _run(
                    [compile_tool, str(planned), *target, *run_flags,
                     "--compile-from=global-optimization", "-o", str(out)],
                    "IREE from the planned regions",
                )  # fmt: skip
        except FusionStageError:
            if hints and len(attempts) > 1:
                continue  # retry: same regions, IREE's own all-or-nothing data tiling
            raise
        finally:
            seconds["iree_codegen"] = seconds.get("iree_codegen", 0.0) + time.perf_counter() - t
        break
    return PlannedCompile(out.read_bytes(), plans, seconds, shared)


def _resume_with_shared_packs(
    compile_tool: str, planned: Path, target: list[str], flags: list[str], out: Path
) -> SharedPacks:
    """IREE from the planned regions with multi-reader packs fused into their producers
    (``shared_packs``): up to the end of dispatch creation, duplicate outputs merged, then on.
    When IREE rejects it, the packs stay dispatches of their own (the caller compiles again
    without the flag) and the record says why."""
    import iree.compiler.ir as iree_ir

    created = planned.with_name("dispatches.mlirbc")
    flags = [*flags, SHARED_PACKS_FLAG]
    try:
        _run(
            [compile_tool, str(planned), *target, *flags, "--compile-from=global-optimization",
             "--compile-to=dispatch-creation", "--emit-mlir-bytecode", "-o", str(created)],
            "IREE's dispatch creation with multi-reader packs fused",
        )  # fmt: skip
        module = iree_ir.Module.parse(created.read_bytes(), iree_ir.Context())
        merged = merge_duplicate_outputs(module)
        with open(created, "wb") as f:
            module.operation.write_bytecode(f)
        del module
        _run(
            [compile_tool, str(created), *target, *flags, "--compile-from=dispatch-creation",
             "-o", str(out)],
            "IREE from dispatches with multi-reader packs fused",
        )  # fmt: skip
    except FusionStageError as e:
        return SharedPacks(False, why=str(e).splitlines()[0][:300])
    finally:
        created.unlink(missing_ok=True)
    return SharedPacks(True, merged)
