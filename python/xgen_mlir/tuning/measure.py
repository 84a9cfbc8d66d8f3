"""Measure candidate configs of one tunable op on this machine, safely and fairly.

One batch = one standalone module (``fusion.tunable.standalone_module``) compiled with one
function per candidate plus ``base`` (IREE's own config), so IREE compiles once for all of
them. The functions run in a child process (``tuning.child``), so a config that crashes or
hangs IREE's generated code costs that child, not the tuner: the child reports each function
as it finishes, and the one in flight when it dies or runs out of time is recorded as failed
(``runtime_error`` / ``timeout``), the rest rerun. Every candidate's output is compared with
``base``'s on the same random inputs before it is timed (``wrong_numbers`` otherwise). Timing
interleaves all functions round by round, rotating the order (``harness.time_blocks``'
scheme), so a noisy shared machine slows every candidate alike; the time of a candidate is
the median of its rounds, and ``base``'s is recorded beside it.

What is timed is each candidate's dispatches, not its call: IREE writes every dispatch of the
module as a benchmark of its own (``--iree-hal-dump-executable-benchmarks-to``: the
executable as configured, run N times in one command buffer), which is compiled and called
with a batch of N, so the ~50 us an IREE call costs here (submission, waking the workers, the
wait: as much as many of the dispatches compared) is spread over N dispatches. Where a
candidate's dispatches cannot be told apart (a data-tiled one: IREE does not dump its packed
matmul), the whole calls are timed instead. Times of the two kinds differ by the call's cost,
so records are compared by their speedup over ``base`` in the same batch, never by time.

A candidate IREE cannot compile fails the batch; then each is compiled alone with ``base``
and the ones that fail are recorded as ``compile_error``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .._mlir import iree_binding
from .._paths import iree_tool
from ..backend.dispatch_stage import error_lines
from ..fusion.tunable import CONSTANT_ARG, IREE_DEFAULT, ROOT_ATTR, apply_config

# Flags of a model's compile that do not apply to a lone contraction: data tiling (the
# searched ops are the plain ones) and the input preprocessing (already done to this IR).
_DROP_PREFIXES = ("--iree-opt-data-tiling", "--iree-preprocessing-pass-pipeline")


@dataclass
class Measurement:
    config: dict[str, Any]
    status: str  # tunedb.STATUSES
    seconds: float | None = None
    baseline_seconds: float | None = None
    detail: str = ""


@dataclass
class MeasureSettings:
    threads: int = 2
    rounds: int = 5
    min_block_s: float = 0.004  # a timed block of calls lasts at least this long
    compile_timeout_s: float = 300.0
    run_timeout_s: float = 120.0
    tolerance: float = 1e-4  # max |candidate - base| / max |base|, f32 (f16: 100x)
    plugins: tuple[str, ...] = ()  # executable plugins the module's dispatches call (BYOC)


def standalone_flags(model_flags: list[str], data_tiling: bool) -> list[str]:
    kept = [f for f in model_flags if not f.startswith(_DROP_PREFIXES)]
    return [*kept, "--iree-opt-data-tiling" if data_tiling else "--iree-opt-data-tiling=false"]


def _random(shape: list[int], elem: str, rng: np.random.Generator) -> bytes:
    """Raw little-endian bytes of uniform(-1, 1) values of an element type."""
    values = rng.uniform(-1, 1, size=shape).astype(np.float32)
    if elem == "f32":
        return values.tobytes()
    if elem == "f16":
        return values.astype(np.float16).tobytes()
    if elem == "bf16":
        return (values.view(np.uint32) >> 16).astype(np.uint16).tobytes()
    raise ValueError(f"no random constants of {elem}")


def _main(ir: Any, module: Any) -> tuple[Any, Any, list[int]]:
    """A standalone module's ``@main``, its type, and which arguments are the model's
    constants (``xgen.constant``)."""
    main = next(iter(module.body.operations)).operation
    ftype = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value)
    constant: list[int] = []
    if "arg_attrs" in main.attributes:
        attrs = ir.ArrayAttr(main.attributes["arg_attrs"])
        constant = [i for i, d in enumerate(attrs) if CONSTANT_ARG in ir.DictAttr(d)]
    return main, ftype, constant


def batch_module(standalone: str, configs: list[dict[str, Any]], seed: int = 0) -> str:
    """``standalone``'s ``@main`` as ``@base`` (IREE's config) and ``@c0``, ``@c1``, ... (one
    per config), each a wrapper that reads the weights (arguments marked ``xgen.constant``)
    from one immutable global of random values, so IREE treats them as the model's constants
    (and packs them once, at compile time, for a data-tiled candidate)."""
    ir = iree_binding().ir
    names = ["base", *(f"c{i}" for i in range(len(configs)))]
    with ir.Context():
        module = ir.Module.parse(standalone)
        main, ftype, constant = _main(ir, module)
        if "arg_attrs" in main.attributes:
            del main.attributes["arg_attrs"]
        types = [str(t) for t in ftype.inputs]
        shapes = [
            (list(ir.RankedTensorType(t).shape), str(ir.RankedTensorType(t).element_type))
            if isinstance(t, ir.RankedTensorType)
            else ([], str(t))
            for t in ftype.inputs
        ]
        result = str(ftype.results[0])
        for name, config in zip(names, [IREE_DEFAULT, *configs], strict=True):
            fn = main.clone(ir.InsertionPoint(module.body))
            fn.attributes["sym_name"] = ir.StringAttr.get(f"{name}_impl")
            fn.attributes["sym_visibility"] = ir.StringAttr.get("private")
            roots: list[Any] = []

            def visit(op: Any, roots: list[Any] = roots) -> Any:
                if ROOT_ATTR in op.attributes:
                    roots.append(op)
                return ir.WalkResult.ADVANCE

            fn.walk(visit)
            for root in roots:
                apply_config(root, config)
        main.erase()
        text = str(module).rstrip()
    rng = np.random.default_rng(seed)
    lines = []
    for i in constant:
        shape, elem = shapes[i]
        data = _random(shape, elem, rng).hex().upper()
        lines.append(f'  util.global private @xgen_w{i} = dense<"0x{data}"> : {types[i]}')
    params = ", ".join(f"%a{i}: {t}" for i, t in enumerate(types) if i not in constant)
    for name in names:
        body = [f"    %w{i} = util.global.load @xgen_w{i} : {types[i]}" for i in constant]
        operands = ", ".join(f"%w{i}" if i in constant else f"%a{i}" for i in range(len(types)))
        body.append(
            f"    %r = func.call @{name}_impl({operands}) : ({', '.join(types)}) -> {result}"
        )
        body.append(f"    return %r : {result}")
        lines.append(f"  func.func @{name}({params}) -> {result} {{\n" + "\n".join(body) + "\n  }")
    assert text.endswith("}")
    return text[:-1] + "\n".join(lines) + "\n}\n"


DUMPS = "dispatches"


def _compile(text: str, flags: list[str], work: Path, timeout: float) -> tuple[Path | None, str]:
    """The batch module, and each of its dispatches as a benchmark in ``work/dispatches``."""
    src, out, dumps = work / "batch.mlir", work / "batch.vmfb", work / DUMPS
    src.write_text(text)
    shutil.rmtree(dumps, ignore_errors=True)
    try:
        proc = subprocess.run(
            [
                iree_tool("iree-compile"),
                str(src),
                *flags,
                f"--iree-hal-dump-executable-benchmarks-to={dumps}",
                "-o",
                str(out),
            ],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return None, f"iree-compile ran past {timeout:.0f} s"
    if proc.returncode != 0:
        return None, "\n".join(error_lines(proc.stderr, 3))[:500]
    return out, ""


def dispatch_benchmarks(
    work: Path, names: list[str], flags: list[str], timeout: float
) -> dict[str, list[str]] | None:
    """Each function's dispatches as compiled benchmark modules (IREE names a dispatch after
    the function it is in), or None where one has none of its own: IREE shared an identical
    executable between two functions, or a data-tiled candidate (IREE dumps its packs, named
    ``_encoding_N``, but not its packed matmul), or one does not compile."""
    files = sorted((work / DUMPS).glob("*_benchmark.mlir"))
    found: dict[str, list[Path]] = {n: [] for n in names}
    for f in files:
        for n in names:
            if f.name.startswith(f"module_{n}_dispatch_"):
                found[n].append(f)
    if not all(found.values()):
        return None
    target = [f for f in flags if f.startswith(("--iree-hal-target", "--iree-llvmcpu-target"))]
    jobs = [(f, f.with_suffix(".vmfb")) for fs in found.values() for f in fs]
    running: list[tuple[subprocess.Popen[bytes], Path]] = []
    ok = True
    for src, out in jobs:
        cmd = [iree_tool("iree-compile"), str(src), *target, "-o", str(out)]
        running.append((subprocess.Popen(cmd, stderr=subprocess.DEVNULL), out))
        if len(running) >= 2:
            proc, _ = running.pop(0)
            ok &= proc.wait(timeout=timeout) == 0
    for proc, _ in running:
        ok &= proc.wait(timeout=timeout) == 0
    if not ok:
        return None
    return {n: [str(f.with_suffix(".vmfb")) for f in fs] for n, fs in found.items()}


def _random_array(shape: list[int], dtype: np.dtype, rng: np.random.Generator) -> np.ndarray:
    """Uniform(-1, 1) floats, or integers over int8's range (an int8 activation of a quantized
    model: uniform(-1, 1) cast to int8 would be all zeros; a wider integer, e.g. a zero point,
    stays where int32 sums of int8 products cannot overflow)."""
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        low, high = max(int(info.min), -128), min(int(info.max), 127)
        return rng.integers(low, high, size=shape, endpoint=True, dtype=dtype)
    return rng.uniform(-1, 1, size=shape).astype(dtype)


def _inputs(standalone: str, seed: int = 0) -> list[np.ndarray]:
    """Random values for the arguments a batch module's functions take (not the weights)."""
    ir = iree_binding().ir
    from ..irutil import np_dtype

    rng = np.random.default_rng(seed + 1)
    with ir.Context():
        _, ftype, constant = _main(ir, ir.Module.parse(standalone))
        arrays = []
        for i, t in enumerate(ftype.inputs):
            if i in constant:
                continue
            if isinstance(t, ir.RankedTensorType):
                arrays.append(_random_array(list(t.shape), np_dtype(t.element_type), rng))
            else:
                arrays.append(np.asarray(rng.uniform(-1, 1), dtype=np.float32))
    return arrays


def _run_child(
    vmfb: Path,
    inputs: Path,
    fns: list[str],
    settings: MeasureSettings,
    bench: dict[str, list[str]] | None = None,
) -> tuple[dict[str, Any], str | None, str]:
    """Run ``fns`` in a child; returns (per-function results, the function in flight when it
    died or None, why it died)."""
    cmd = [
        sys.executable,
        "-m",
        "xgen_mlir.tuning.child",
        str(vmfb),
        str(inputs),
        json.dumps(fns),
        json.dumps(
            {
                "threads": settings.threads,
                "rounds": settings.rounds,
                "min_block_s": settings.min_block_s,
                "bench": {n: bench[n] for n in fns} if bench else None,
                "plugins": list(settings.plugins),
                "tolerance": settings.tolerance,
            }
        ),
    ]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    results: dict[str, Any] = {}
    current, why = None, ""
    try:
        proc = subprocess.run(
            cmd, capture_output=True, text=True, timeout=settings.run_timeout_s, env=env
        )
        out, code = proc.stdout, proc.returncode
        why = f"exit code {code}: " + (proc.stderr.strip().splitlines() or [""])[-1][:200]
    except subprocess.TimeoutExpired as e:
        raw = e.stdout or b""
        out = raw.decode() if isinstance(raw, bytes) else raw
        code, why = -1, f"ran past {settings.run_timeout_s:.0f} s"
    for line in out.splitlines():
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if "start" in msg:
            current = msg["start"]
        elif "done" in msg:
            results[msg["done"]] = msg
            current = None
        elif "times" in msg:
            results["times"] = msg["times"]
    if code == 0:
        return results, None, ""
    return results, current, why


def measure_batch(
    standalone: str,
    configs: list[dict[str, Any]],
    model_flags: list[str],
    settings: MeasureSettings | None = None,
    elem_bits: int = 32,
    runner: Any = None,
) -> list[Measurement]:
    """Compile, check and time ``configs`` against IREE's own config (see the module doc).
    ``runner`` (``tuning.runners``): where the batch runs; None: this machine."""
    settings = settings or MeasureSettings()
    run = _run if runner is None else runner.run

    def flags(subset: list[dict[str, Any]]) -> list[str]:
        return standalone_flags(model_flags, any(c["kind"] == "data-tiled" for c in subset))

    results: dict[int, Measurement] = {}
    with tempfile.TemporaryDirectory(prefix="xgen-tune-") as tmp:
        work = Path(tmp)
        vmfb, err = _compile(
            batch_module(standalone, configs), flags(configs), work, settings.compile_timeout_s
        )
        runnable = list(range(len(configs)))
        if vmfb is None:  # find the candidates IREE rejects, one by one
            base_only, base_err = _compile(
                batch_module(standalone, []), flags([]), work, settings.compile_timeout_s
            )
            if base_only is None:
                raise RuntimeError(f"IREE cannot compile the op with its own config: {base_err}")
            runnable = []
            for i, config in enumerate(configs):
                one, one_err = _compile(
                    batch_module(standalone, [config]),
                    flags([config]),
                    work,
                    settings.compile_timeout_s,
                )
                if one is None:
                    results[i] = Measurement(config, "compile_error", detail=one_err)
                else:
                    runnable.append(i)
            if runnable:
                kept = [configs[i] for i in runnable]
                vmfb, err = _compile(
                    batch_module(standalone, kept),
                    flags(kept),
                    work,
                    settings.compile_timeout_s,
                )
                if vmfb is None:
                    raise RuntimeError(f"IREE rejected candidates it compiled alone: {err}")
        if runnable and vmfb is not None:
            results.update(
                run(vmfb, standalone, configs, runnable, settings, elem_bits, work, model_flags)
            )
    return [results[i] for i in range(len(configs))]


def _run(
    vmfb: Path,
    standalone: str,
    configs: list[dict[str, Any]],
    runnable: list[int],
    settings: MeasureSettings,
    elem_bits: int,
    work: Path,
    model_flags: list[str],
) -> dict[int, Measurement]:
    """Numerics, then timing, in children; a function that kills its child is recorded and
    the child restarted without it. ``runnable[j]`` is the config of function ``c{j}``
    in the module (the module may hold only the runnable ones, in order)."""
    inputs = work / "inputs.npz"
    np.savez(inputs, *_inputs(standalone))
    names = {f"c{j}": i for j, i in enumerate(runnable)}
    out: dict[int, Measurement] = {}
    tol = settings.tolerance * (100 if elem_bits < 32 else 1)
    pending = list(names)
    bench = dispatch_benchmarks(work, ["base", *pending], model_flags, settings.compile_timeout_s)
    while pending:
        res, dead, why = _run_child(vmfb, inputs, ["base", *pending], settings, bench)
        if dead == "base":
            raise RuntimeError(f"IREE's own config failed to run: {why}")
        for name in list(pending):
            if name in res:
                err = res[name]["error"]
                if err is None or not np.isfinite(err) or err > tol:
                    i = names[name]
                    out[i] = Measurement(
                        configs[i], "wrong_numbers", detail=f"relative error {err} > {tol}"
                    )
                    pending.remove(name)
        if dead is not None:
            i = names[dead]
            status = "timeout" if "ran past" in why else "runtime_error"
            out[i] = Measurement(configs[i], status, detail=why)
            pending.remove(dead)
            continue
        if dead is None and why:
            raise RuntimeError(f"the measuring process failed: {why}")
        times = res.get("times", {})
        base = times.get("base")
        for name in pending:
            i = names[name]
            out[i] = Measurement(configs[i], "ok", times.get(name), base)
        break
    return out
