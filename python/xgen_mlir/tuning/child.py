"""The measuring process: ``python -m xgen_mlir.tuning.child VMFB INPUTS.npz FNS SETTINGS``.

Runs in a process of its own so that generated code that crashes or hangs takes only this
process down (``tuning.measure``). Prints one JSON line per event on stdout: ``{"start": fn}``
before a function's first call, ``{"done": fn, "error": e}`` after it (``e``: its output's
largest difference from ``base``'s, relative to ``base``'s largest magnitude), and at the end
``{"times": {fn: seconds}}``, the median over interleaved rounds of each function that
matched ``base``: of its dispatches' benchmarks (``settings["bench"]``: per function, the
compiled benchmark modules of its dispatches, each called with a batch of N dispatches), or
else of whole calls.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np


def _relative_error(out: np.ndarray, ref: np.ndarray) -> float:
    if out.shape != ref.shape:
        return float("inf")
    if not np.all(np.isfinite(out) == np.isfinite(ref)):
        return float("inf")
    finite = np.isfinite(ref)
    scale = float(np.max(np.abs(ref[finite]))) if finite.any() else 0.0
    diff = float(np.max(np.abs(out[finite].astype(np.float64) - ref[finite]))) if scale else 0.0
    return diff / scale if scale else diff


def _batch(call: Any, min_block_s: float) -> int:
    """How many repetitions make a timed block last ``min_block_s``."""
    t0 = time.perf_counter()
    call(1)
    return max(1, int(min_block_s / max(time.perf_counter() - t0, 1e-6)))


def _timers(
    names: list[str],
    funcs: dict[str, Any],
    args: list[Any],
    bench: dict[str, list[str]] | None,
    rt: Any,
    config: Any,
    min_block_s: float,
) -> dict[str, Callable[[], float]]:
    """Per function, a callable that times it once (seconds): the sum over its dispatches of
    one benchmark call with a batch of N, divided by N; or whole calls without ``bench``."""
    timers: dict[str, Callable[[], float]] = {}
    if bench:
        for name in names:
            parts = []
            for path in bench[name]:
                with open(path, "rb") as f:
                    module = rt.VmModule.copy_buffer(config.vm_instance, f.read())
                ctx = rt.SystemContext(vm_modules=[module], config=config)
                fns = [n for n in module.function_names if not n.startswith("__")]
                fn = ctx.modules[module.name][fns[0]]
                fn(1)
                n = _batch(fn, min_block_s)
                parts.append((fn, n, ctx))
            timers[name] = partial(_time_dispatches, parts)
        return timers
    for name in names:
        fn = funcs[name]
        fn(*args)
        n = _batch(lambda k, fn=fn: [fn(*args) for _ in range(k)], min_block_s)
        timers[name] = partial(_time_calls, fn, args, n)
    return timers


def _time_dispatches(parts: list[tuple[Any, int, Any]]) -> float:
    total = 0.0
    for fn, n, _ in parts:
        t0 = time.perf_counter()
        fn(n)
        total += (time.perf_counter() - t0) / n
    return total


def _time_calls(fn: Any, args: list[Any], n: int) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        fn(*args)
    return (time.perf_counter() - t0) / n


def main(argv: list[str]) -> int:
    import iree.runtime as rt

    vmfb, inputs_path, fns_json, settings_json = argv
    fns = json.loads(fns_json)
    settings = json.loads(settings_json)
    rt.flags.parse_flags(f"--task_topology_max_group_count={int(settings['threads'])}")
    for plugin in settings.get("plugins") or []:  # a fresh process: before its first device
        rt.flags.parse_flags(f"--executable_plugin={plugin}")
    config = rt.Config("local-task")
    with open(vmfb, "rb") as f:
        module = rt.VmModule.copy_buffer(config.vm_instance, f.read())
    ctx = rt.SystemContext(vm_modules=[module], config=config)
    funcs = {name: ctx.modules[module.name][name] for name in fns}
    data = np.load(inputs_path)
    args = [data[f"arr_{i}"] for i in range(len(data.files))]
    device_args = [rt.asdevicearray(config.device, a) for a in args]

    ref = None
    good = []
    for name in fns:
        print(json.dumps({"start": name}), flush=True)
        # Each function's checked call gets inputs of its own, and its output is copied out:
        # IREE may compute a result in an argument's buffer (a matmul that accumulates into
        # its init argument, as a cut-out Linear with a bias does). With shared inputs each
        # config after ``base`` added to the previous one's sum (measured: errors of 1, 2, 3,
        # 4 times the output, in measurement order), and an output read in place could be
        # the same memory as ``base``'s, so that a wrong config matched. Timed calls may
        # reuse the inputs.
        fresh = [rt.asdevicearray(config.device, a.copy()) for a in args]
        out = np.array(funcs[name](*fresh).to_host())
        if name == "base":
            ref = out
            err = 0.0
        else:
            assert ref is not None
            err = _relative_error(out, ref)
        print(json.dumps({"done": name, "error": err}), flush=True)
        if np.isfinite(err) and err <= max(1e-2, float(settings.get("tolerance", 0.0))):
            good.append(name)

    timers = _timers(
        good, funcs, device_args, settings.get("bench"), rt, config, settings["min_block_s"]
    )
    samples: dict[str, list[float]] = {n: [] for n in good}
    rounds = int(settings["rounds"])
    for r in range(rounds):
        order = good[r % len(good) :] + good[: r % len(good)]
        for name in order:
            samples[name].append(timers[name]())
    times = {n: statistics.median(s) for n, s in samples.items()}
    print(json.dumps({"times": times}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
