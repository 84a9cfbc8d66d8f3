"""The measuring process: ``python -m xgen_mlir.tuning.child VMFB INPUTS.npz FNS SETTINGS``.

Runs in a process of its own so that generated code that crashes or hangs takes only this
process down (``tuning.measure``). Prints one JSON line per event on stdout: ``{"start": fn}``
before a function's first call, ``{"done": fn, "error": e}`` after it (``e``: its output's
largest difference from ``base``'s, relative to ``base``'s largest magnitude), and at the end
``{"times": {fn: seconds}}``, the median over interleaved rounds of each function that
matched ``base``, less the median time of ``xgen_overhead`` (a call with nothing in it), timed
in the same rounds.
"""

from __future__ import annotations

import json
import statistics
import sys
import time

import numpy as np

OVERHEAD = "xgen_overhead"  # tuning.measure.OVERHEAD_FN


def _relative_error(out: np.ndarray, ref: np.ndarray) -> float:
    if out.shape != ref.shape:
        return float("inf")
    if not np.all(np.isfinite(out) == np.isfinite(ref)):
        return float("inf")
    finite = np.isfinite(ref)
    scale = float(np.max(np.abs(ref[finite]))) if finite.any() else 0.0
    diff = float(np.max(np.abs(out[finite].astype(np.float64) - ref[finite]))) if scale else 0.0
    return diff / scale if scale else diff


def main(argv: list[str]) -> int:
    import iree.runtime as rt

    vmfb, inputs_path, fns_json, settings_json = argv
    fns = json.loads(fns_json)
    settings = json.loads(settings_json)
    rt.flags.parse_flags(f"--task_topology_max_group_count={int(settings['threads'])}")
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
        out = np.asarray(funcs[name](*device_args).to_host())
        if name == "base":
            ref = out
            err = 0.0
        else:
            assert ref is not None
            err = _relative_error(out, ref)
        print(json.dumps({"done": name, "error": err}), flush=True)
        if np.isfinite(err) and err <= 1e-2:
            good.append(name)

    # Block size: enough calls that a block lasts min_block_s with the slowest function.
    slowest = 0.0
    for name in good:
        t0 = time.perf_counter()
        funcs[name](*device_args)
        slowest = max(slowest, time.perf_counter() - t0)
    block = max(1, int(settings["min_block_s"] / max(slowest, 1e-6)))
    timed = [*good, OVERHEAD]
    call_args = {n: device_args for n in good}
    call_args[OVERHEAD] = [rt.asdevicearray(config.device, np.ones(4, np.float32))]
    funcs[OVERHEAD] = ctx.modules[module.name][OVERHEAD]
    samples: dict[str, list[float]] = {n: [] for n in timed}
    rounds = int(settings["rounds"])
    for r in range(rounds):
        order = timed[r % len(timed) :] + timed[: r % len(timed)]
        for name in order:
            fn, fn_args = funcs[name], call_args[name]
            t0 = time.perf_counter()
            for _ in range(block):
                fn(*fn_args)
            samples[name].append((time.perf_counter() - t0) / block)
    overhead = statistics.median(samples.pop(OVERHEAD))
    times = {n: max(statistics.median(s) - overhead, 1e-7) for n, s in samples.items()}
    print(json.dumps({"times": times}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
