"""Per-dispatch time of an IREE llvm-cpu module, grouped by op kind.

Compiles a model (a name from bench_models: resnet18, mobilenet_v2, bert_base, gpt2_small;
or any .mlir / .mlirbc linalg-on-tensors file; or an existing .vmfb) with a flag set, runs it
under iree-benchmark-module with IREE's HAL-native host profiling
(``--device_profiling_mode=host-execution``: one event per dispatch per call, wall time and
the sum of its workgroup ("tile") times), decodes the bundle with ``iree-profile``, and prints

* every runtime dispatch of the entry function in execution order (median over the calls),
* a table per op kind (count, ms, share), and
* the end-to-end time without profiling, the sum of dispatch times and the gap
  (per-call span minus busy time = scheduling/barrier overhead between dispatches).

    python benchmarks/profile_dispatches.py mobilenet_v2 --flags best
    python benchmarks/profile_dispatches.py /tmp/m.mlirbc --flags best \\
        --extra=--iree-dispatch-creation-enable-aggressive-fusion --json out.json
    python benchmarks/profile_dispatches.py m.vmfb --device local-sync

Dispatch sites in the disassembly are not runtime dispatches: IREE records the entry's
command buffer once in an ``__init``-like function (memoization), and data tiling adds a
second ``__init`` that packs the weights once at load (MobileNetV2 with the "best" flags:
154 sites = 66 per call + 88 at load). The per-call numbers come from the profile only.
Op kinds come from the dispatch name IREE gives each executable plus a look at its source
(depthwise vs dense conv vs pooling, stride, fused encodings); for a .vmfb input there is no
source, so strides read "s?". On a shared 2-core machine, run it when the machine is idle
and compare local-sync (one core, stable) before trusting small local-task differences.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from xgen_mlir.runtime.waiting import yielding_to_workers

sys.path.insert(0, str(Path(__file__).parent))
from harness import write_results

FLAG_SETS = {
    "none": [],
    "defaults": ["--iree-llvmcpu-target-cpu=host"],
    "best": [  # STACK.md item 9: "plain IREE" in our benchmarks
        "--iree-llvmcpu-target-cpu=host",
        "--iree-opt-data-tiling",
        "--iree-preprocessing-pass-pipeline=builtin.module(util.func("
        "iree-preprocessing-convert-conv-to-channels-last))",
    ],
}


def tool(name: str) -> str:
    """Path of an IREE CLI: next to this Python first, then PATH."""
    here = Path(sys.executable).parent / name
    if here.exists():
        return str(here)
    found = shutil.which(name)
    if not found:
        raise SystemExit(f"{name} not found (activate the venv with iree-base-compiler/runtime)")
    return found


def model_to_mlirbc(name: str, out: Path) -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    from bench_models import build
    from xgen_mlir.frontend import import_model
    from xgen_mlir.passes.runner import snapshot

    model, inputs = build(name)
    out.write_bytes(snapshot(import_model(model, inputs)))


def compile_vmfb(src: Path, flags: list[str], work: Path) -> Path:
    vmfb = work / "module.vmfb"
    dump = f"--iree-hal-dump-executable-sources-to={work / 'sources'}"
    cmd = [
        tool("iree-compile"),
        str(src),
        "--iree-hal-target-backends=llvm-cpu",
        *flags,
        dump,
        "-o",
        str(vmfb),
    ]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        raise SystemExit(f"iree-compile failed:\n{r.stderr[-4000:]}")
    return vmfb


def entry_reflection(vmfb: Path, entry: str) -> dict[str, str]:
    """The reflection attributes of the module's ``entry`` function."""
    import iree.runtime as rt

    vm = rt.VmModule.copy_buffer(rt.VmInstance(), vmfb.read_bytes())
    return dict(vm.lookup_function(entry).reflection)


def entry_signature(vmfb: Path, entry: str) -> list[tuple[tuple[int, ...], str]]:
    """Input shapes/dtypes of ``entry`` from the module's ABI reflection."""
    decl = entry_reflection(vmfb, entry).get("iree.abi.declaration", "")
    args = decl.split("->")[0]
    out = []
    for shape, dt in re.findall(r"tensor<((?:[0-9?]+x)*)([a-z]+[0-9]*)>", args):
        out.append((tuple(int(d) for d in shape.split("x") if d), dt))
    return out


def module_plugins(vmfb: Path, entry: str) -> list[str]:
    """The executable plugins a module compiled by xgen_mlir calls (BYOC offload), from its
    reflection, found or built as ``load()`` does: without them IREE cannot load it."""
    from xgen_mlir.runtime.plugins import REFLECTION_KEY, plugin_paths

    names = entry_reflection(vmfb, entry).get(REFLECTION_KEY, "")
    return plugin_paths(names, None, str(vmfb)) if names else []


def dispatch_count(vmfb: Path) -> dict[str, int]:
    """Recorded ``hal.command_buffer.dispatch`` sites per VM function of the module. IREE
    memoizes command buffers: the entry's buffer is recorded in an ``__init``-like function,
    and data tiling adds another ``__init`` that packs the weights once at load time, so
    functions are keyed ``name#k`` in the order they appear."""
    dis = subprocess.run(
        [tool("iree-dump-module"), "--output=disassembly", str(vmfb)],
        capture_output=True,
        text=True,
    ).stdout
    counts: dict[str, int] = {}
    seen: dict[str, int] = defaultdict(int)
    fn = "?"
    for line in dis.splitlines():
        m = re.match(r"\s*vm\.func @([\w$.-]+)", line)
        if m:
            seen[m.group(1)] += 1
            fn = f"{m.group(1)}#{seen[m.group(1)]}"
        elif "vm.call.variadic @hal.command_buffer.dispatch" in line:
            counts[fn] = counts.get(fn, 0) + 1
    return counts


# ---- op kinds ------------------------------------------------------------------------------
def load_sources(src_dir: Path) -> dict[str, str]:
    """export symbol -> text of the executable that defines it."""
    out: dict[str, str] = {}
    if not src_dir.is_dir():
        return out
    for f in src_dir.glob("*.mlir"):
        text = f.read_text(errors="replace")
        for sym in re.findall(r"hal\.executable\.export public @([\w$.-]+)", text):
            out[sym] = text
    return out


def _stride2(src: str) -> bool:
    return bool(re.search(r"strides = dense<2>|d\d+ \* 2 \+ d\d+", src))


def classify(key: str, src: str) -> str:
    """A coarse op kind from IREE's dispatch name (``<fn>_dispatch_<n>_<op>_<dims>_<type>``)
    and the executable's source."""
    m = re.search(r"dispatch_\d+_(.*)$", key) or re.search(r"_encoding_\d+_(.*)$", key)
    tail = m.group(1) if m else key
    op = re.match(r"[a-z_]+?(?=_\d|_f\d|_i\d|$)", tail)
    op_name = op.group(0) if op else tail
    dims = re.search(r"_((?:\d+x)+\d+)_", "_" + tail + "_")
    nd = len(dims.group(1).split("x")) if dims else 0
    s2 = _stride2(src)
    if "encode" in tail or "set_encoding" in tail:
        return "encoding (pack activations)"
    if "unset_encoding" in tail or "decode" in tail or op_name.startswith("unpack"):
        return "unpack / unset_encoding"
    if op_name.startswith("pack"):
        return "pack"
    if op_name == "transpose":
        return "transpose"
    if op_name.startswith("conv") and src and "arith.mulf" not in src:
        # IREE names windowed reductions "conv" too: a max/sum pool has no multiply
        kind = "max" if "arith.maximumf" in src else "sum/avg"
        return f"pooling ({kind}){' s2' if s2 else ''}"
    if op_name.startswith("conv") or "depthwise" in src:
        # a depthwise conv's name has 5 dims (oh, ow, c, kh, kw), 6 with a unit batch first
        # (xgen-depthwise-tiles re-batches it); a dense conv's has 6 (oh, ow, f, kh, kw, c)
        batched = nd == 6 and dims is not None and dims.group(1).startswith("1x")
        dw = "depthwise_conv" in src or ("conv_" in tail and (nd == 5 or batched))
        if dw:
            k = dims.group(1).split("x")[-2:] if dims else ["?", "?"]
            stride = "?" if not src else (2 if s2 else 1)
            return f"depthwise conv {k[0]}x{k[1]} s{stride}"
        return f"conv (dense){' s2' if s2 else ''}"
    if op_name in (
        "matmul_like",
        "matmul",
        "mmt4d",
        "batch_matmul",
        "batch_mmt4d",
        "matmul_transpose_b",
        "contract",
    ):
        if dims and dims.group(1).split("x")[0] == "1" and nd == 3:
            return "fc / gemv (M=1)"
        return "matmul (1x1 conv, fc, linear)"
    if op_name.startswith("pooling") or (op_name == "reduction" and "pool" in src):
        return "pooling"
    if op_name == "reduction":
        return "reduction (e.g. global avg pool)"
    if op_name in ("softmax",):
        return "softmax"
    if op_name.startswith("elementwise") or op_name == "generic":
        return "elementwise"
    if "pad" in op_name or "slow_memcpy" in op_name or "fill" in op_name:
        return "pad / copy / fill"
    return op_name or "other"


# ---- running -------------------------------------------------------------------------------
def bench_cmd(
    vmfb: Path, entry: str, device: str, inputs: list[str], threads: int, plugins: list[str]
) -> list[str]:
    cmd = [
        tool("iree-benchmark-module"),
        *[f"--executable_plugin={p}" for p in plugins],
        f"--module={vmfb}",
        f"--device={device}",
        f"--function={entry}",
        *[f"--input={i}" for i in inputs],
    ]
    if device == "local-task" and threads:
        cmd.append(f"--task_topology_max_group_count={threads}")
    return cmd


def end_to_end_ms(
    vmfb: Path,
    entry: str,
    device: str,
    arrays: list[np.ndarray],
    threads: int,
    calls: int,
    plugins: list[str],
) -> dict[str, float]:
    """In-process latency through iree.runtime (how xgen_mlir runs modules): median and p10
    over ``calls`` timed calls after warm-up, the caller waiting as CompiledModule's does
    (runtime/waiting.py). iree-benchmark-module waits the ordinary way, so its per-call time
    includes the stalls that module describes (~1 ms per call on MobileNetV2 here)."""
    import iree.runtime as rt

    flags = [f"--task_topology_max_group_count={threads}"] if device == "local-task" else []
    flags += [f"--executable_plugin={p}" for p in plugins]
    if flags:
        rt.flags.parse_flags(*flags)
    cfg = rt.Config(device)
    vm = rt.VmModule.copy_buffer(cfg.vm_instance, vmfb.read_bytes())
    ctx = rt.SystemContext(vm_modules=[vm], config=cfg)
    fn = ctx.modules[vm.name][entry]
    for _ in range(5):
        fn(*arrays)
    ts = []
    for _ in range(calls):
        t0 = time.perf_counter()
        with yielding_to_workers(device == "local-task"):  # as CompiledModule waits
            out = fn(*arrays)
        (out[0] if isinstance(out, (list, tuple)) else out).to_host()
        ts.append((time.perf_counter() - t0) * 1e3)
    ts.sort()
    return {"median_ms": statistics.median(ts), "p10_ms": ts[len(ts) // 10], "calls": calls}


def _as_batch_thread() -> None:
    """In the profiled child: SCHED_BATCH, so its waiting caller never preempts a worker.

    Without it, iree-benchmark-module's caller stalls the workers as runtime/waiting.py
    describes, and those stalls land inside dispatches: MobileNetV2's first dispatches
    showed two-thread wall times equal to one-thread ones (2x worker time), and the whole
    call took 6.5-7.9 ms against 5.6 under SCHED_BATCH. Its workers inherit the policy;
    they wait for nothing else on the machine, so it changes nothing for them."""
    with contextlib.suppress(AttributeError, OSError):
        os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))


def profile_events(cmd: list[str], iters: int, work: Path) -> list[dict]:
    prof = work / "run.ireeprof"
    r = subprocess.run(
        cmd
        + [
            "--benchmark_repetitions=1",
            f"--benchmark_min_time={iters}x",
            "--device_profiling_mode=host-execution",
            f"--device_profiling_output={prof}",
        ],
        capture_output=True,
        text=True,
        preexec_fn=_as_batch_thread,
    )
    if r.returncode:
        raise SystemExit(f"iree-benchmark-module failed:\n{r.stderr[-3000:]}")
    dump = subprocess.run(
        [tool("iree-profile"), "dispatch", "--format=jsonl", "--dispatch_events", str(prof)],
        capture_output=True,
        text=True,
    )
    events = []
    for line in dump.stdout.splitlines():
        if '"host_dispatch_event"' in line:
            events.append(json.loads(line))
    if not events:
        raise SystemExit(f"no dispatch events in {prof}:\n{dump.stderr[-2000:]}")
    return events


def aggregate(events: list[dict], sources: dict[str, str]) -> dict:
    """Per call position (command buffer index): median wall and worker time over calls."""
    by_sub: dict[int, list[dict]] = defaultdict(list)
    for e in events:
        by_sub[e["submission_id"]].append(e)
    # Calls = submissions with the full dispatch list (the first may be a warm-up/initializer).
    n_full = max(len(v) for v in by_sub.values())
    calls = [
        sorted(v, key=lambda e: e["command_index"]) for v in by_sub.values() if len(v) == n_full
    ]
    n_calls = len(calls)
    # Other submissions: a host-side loop (one per iteration, e.g. torch-mlir's RNN loops) or
    # an initializer. Per call on average, by dispatch, so they are not silently left out.
    others: dict[str, list[dict]] = defaultdict(list)
    for v in by_sub.values():
        if len(v) != n_full:
            for e in v:
                others[e["key"]].append(e)
    other_rows = sorted(
        (
            {
                "key": key,
                "kind": classify(key, sources.get(key, "")),
                "per_call": len(evs) / n_calls,
                "ms": sum(e["duration_ns"] for e in evs) / 1e6 / n_calls,
            }
            for key, evs in others.items()
        ),
        key=lambda r: -r["ms"],
    )
    calls = calls[1:] if len(calls) > 3 else calls  # drop the first (cold) call
    rows = []
    for pos in range(n_full):
        evs = [c[pos] for c in calls]
        key = evs[0]["key"]
        src = sources.get(key, "")
        rows.append(
            {
                "pos": pos,
                "key": key,
                "kind": classify(key, src),
                "fused_encoding": "set_encoding" in src and "encode" not in key,
                "workgroups": evs[0]["workgroup_count"],
                "ms": statistics.median(e["duration_ns"] for e in evs) / 1e6,
                "worker_ms": statistics.median(e["tile_duration_sum_ns"] for e in evs) / 1e6,
            }
        )
    spans = [(c[-1]["end_host_time_ns"] - c[0]["start_host_time_ns"]) / 1e6 for c in calls]
    busy = [sum(e["duration_ns"] for e in c) / 1e6 for c in calls]
    return {
        "rows": rows,
        "other_submissions": other_rows,
        "calls_profiled": len(calls),
        "span_ms": statistics.median(spans),
        "busy_ms": statistics.median(busy),
    }


def by_kind(rows: list[dict]) -> list[dict]:
    acc: dict[str, dict] = {}
    for r in rows:
        k = acc.setdefault(r["kind"], {"kind": r["kind"], "count": 0, "ms": 0.0, "worker_ms": 0.0})
        k["count"] += 1
        k["ms"] += r["ms"]
        k["worker_ms"] += r["worker_ms"]
    total = sum(k["ms"] for k in acc.values()) or 1.0
    for k in acc.values():
        k["share"] = k["ms"] / total
    return sorted(acc.values(), key=lambda k: -k["ms"])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("model", help="model name, .mlir/.mlirbc file, or .vmfb")
    p.add_argument("--flags", default="best", choices=sorted(FLAG_SETS))
    p.add_argument(
        "--extra",
        action="append",
        default=[],
        help="extra iree-compile flag (repeatable; use --extra=--flag=value)",
    )
    p.add_argument("--entry", default="main")
    p.add_argument("--device", default="local-task", choices=["local-task", "local-sync"])
    p.add_argument("--threads", type=int, default=2, help="local-task worker count")
    p.add_argument("--iters", type=int, default=30, help="profiled calls")
    p.add_argument("--calls", type=int, default=100, help="end-to-end timed calls (in-process)")
    p.add_argument("--work", default=None, help="keep vmfb, sources and profile here")
    p.add_argument("--json", default=None, help="write the results here")
    p.add_argument("--top", type=int, default=0, help="print only the N slowest dispatches")
    p.add_argument("--sources", action="store_true", help="print source file per dispatch")
    p.add_argument(
        "--plugin",
        action="append",
        default=[],
        help="executable plugin the module calls (repeatable; default: those named in the "
        "module's reflection by xgen_mlir, e.g. the oneDNN plugin)",
    )
    a = p.parse_args(argv)

    work = Path(a.work) if a.work else Path(tempfile.mkdtemp(prefix="xgen-prof-"))
    work.mkdir(parents=True, exist_ok=True)
    flags = FLAG_SETS[a.flags] + a.extra
    src = Path(a.model)
    if src.suffix == ".vmfb":
        vmfb, flags = src, []
    else:
        if src.suffix not in (".mlir", ".mlirbc"):
            src = work / "model.mlirbc"
            print(f"importing {a.model} ...", file=sys.stderr)
            model_to_mlirbc(a.model, src)
        print(f"compiling with {' '.join(flags)} ...", file=sys.stderr)
        vmfb = compile_vmfb(src, flags, work)
    sources = load_sources(work / "sources")
    counts = dispatch_count(vmfb)

    rng = np.random.default_rng(0)
    inputs, arrays = [], []
    for i, (shape, dt) in enumerate(entry_signature(vmfb, a.entry)):
        npy = work / f"input{i}.npy"
        if dt.startswith("f"):
            arr = rng.standard_normal(shape).astype({"f32": np.float32, "f16": np.float16}[dt])
        else:
            arr = rng.integers(0, 100, shape).astype(np.dtype(dt.replace("i", "int")))
        np.save(npy, arr)
        arrays.append(arr)
        inputs.append(f"@{npy}")
    a.plugin = a.plugin or module_plugins(vmfb, a.entry)
    cmd = bench_cmd(vmfb, a.entry, a.device, inputs, a.threads, a.plugin)
    agg = aggregate(profile_events(cmd, a.iters, work), sources)
    e2e = end_to_end_ms(vmfb, a.entry, a.device, arrays, a.threads, a.calls, a.plugin)
    rows, kinds = agg["rows"], by_kind(agg["rows"])

    print(
        f"\n{vmfb}  device={a.device}{f' threads={a.threads}' if a.device == 'local-task' else ''}"
    )
    print(f"dispatch sites in the module: {counts}  (runtime dispatches per call: {len(rows)})")
    show = sorted(rows, key=lambda r: -r["ms"])[: a.top] if a.top else rows
    print(f"\n{'#':>3} {'ms':>7} {'worker':>7} {'wg':>5}  kind / dispatch")
    for r in show:
        enc = " +enc" if r["fused_encoding"] else ""
        print(
            f"{r['pos']:>3} {r['ms']:7.3f} {r['worker_ms']:7.3f} {r['workgroups'][0]:>5}  "
            f"{r['kind']:<30} {r['key']}{enc}"
        )
        if a.sources:
            print(f"      {work / 'sources'}  (@{r['key']})")
    print(f"\n{'op kind':<34}{'count':>6}{'ms':>9}{'share':>8}{'worker ms':>11}")
    for k in kinds:
        print(
            f"{k['kind']:<34}{k['count']:>6}{k['ms']:9.3f}{k['share']:8.1%}{k['worker_ms']:11.3f}"
        )
    print(f"{'total (sum of dispatch wall times)':<34}{len(rows):>6}{agg['busy_ms']:9.3f}")
    other = agg["other_submissions"]
    if other:
        total = sum(r["ms"] for r in other)
        n = sum(r["per_call"] for r in other)
        print(
            f"\nOUTSIDE the rows above: {n:.0f} dispatches per call in other submissions (a "
            f"host-side loop, initializers), {total:.3f} ms per call:"
        )
        for r in other[: a.top or len(other)]:
            print(f"  {r['ms']:8.3f} ms  x{r['per_call']:<6.1f} {r['kind']:<30} {r['key']}")
    gap = agg["span_ms"] - agg["busy_ms"]
    print(
        f"\nend to end, in-process, no profiling: median {e2e['median_ms']:.3f} ms "
        f"(p10 {e2e['p10_ms']:.3f}, {e2e['calls']} calls)"
    )
    print(
        f"profiled call span {agg['span_ms']:.3f} ms = busy {agg['busy_ms']:.3f} + gaps "
        f"{gap:.3f} ms ({1e3 * gap / max(1, len(rows)):.1f} us per dispatch)"
    )

    result = {
        "model": a.model,
        "flags": flags,
        "device": a.device,
        "threads": a.threads,
        "end_to_end_ms": e2e,
        "dispatch_sites": counts,
        **agg,
        "kinds": kinds,
        "vmfb": str(vmfb),
    }
    out = Path(a.json) if a.json else work / "profile.json"
    write_results(out, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
