"""Several models on one 2-core machine at once (issue 30): the xgen_mlir scheduler against
naive Python threads over the same compiled modules and ONNX Runtime sessions in threads.

Workload (the issue's): MobileNetV2 at 30 requests/s with the highest priority and a 33 ms
deadline (one period), ResNet-18 at 10/s with a 100 ms deadline, BERT-base (seq 128) as
background batch work: one request always outstanding, no deadline. Arrivals are periodic (open
loop; ``--arrivals poisson`` for Poisson streams of the same rates): a late system builds a
queue, it does not slow the arrivals. Latency is arrival to
result. "xgen-edf-drop" is EDF with drop_late=True: a request whose deadline passed before it
started is not run (counted as a miss, and in "failed"). Variants name their
changes after the policy: "-nice19" runs the lowest band at nice 19 instead of SCHED_IDLE
(Scheduler(idle_band=False)), "-unpinned" leaves the workers unpinned (pin=False), and
"-nice19-unpinned" is the scheduler as it was before either. The baseline "alone" is MobileNetV2 at
30/s with nothing else, through the same scheduler. Every system gets the same arrival times;
each runs for --duration seconds, then finishes what it was given.

With ``--auto-model resnet18`` and a Vulkan device here, that model also gets a Vulkan build and
``xgen-edf-auto`` (or any ``xgen-<policy>-auto`` named in --systems) runs the mix with it placed
``auto`` (each request on the CPU or the GPU by estimated finish time, docs/scheduler.md); the
script prints the Vulkan device it used. On Mesa's llvmpipe it runs, but slowly and to little
purpose: the "GPU" shares the CPU's cores, and the first call of a Vulkan module there builds
every pipeline (measured on the loaded 2-core host: 427 s for MobileNetV2, then about 8 s a
call), so each auto system's warm-up takes minutes and auto then keeps the model on the CPU.
For a machine without IREE's compiler, fill a cache here and copy it over: the run needs only
the cache (modules, ONNX files, inputs and PyTorch's outputs).

    .venv/bin/python benchmarks/bench_coschedule.py --duration 25 [--cache DIR] [--systems ...]
    .venv/bin/python benchmarks/bench_coschedule.py --cache DIR --auto-model resnet18 \
        --prepare-only
    python benchmarks/bench_coschedule.py --cache DIR --auto-model resnet18 \
        --systems alone xgen-edf xgen-edf-auto
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import queue
import sys
import threading
import time
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).parent))
import xgen_mlir
from harness import write_results
from xgen_mlir.runtime.scheduler import Scheduler, TaskGraph
from xgen_mlir.runtime.scheduling.observe import percentile

MODELS = {  # name: (priority, rate per s or None for background, relative deadline s)
    "mobilenet_v2": (2, 30.0, 0.033),
    "resnet18": (1, 10.0, 0.100),
    "bert_base": (0, None, None),
}


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def prepare(
    cache: Path, auto_model: str | None = None, vulkan_gpu: str | None = None
) -> dict[str, dict[str, Any]]:
    """Compile each model once (cached .vmfb; ``auto_model`` also for Vulkan), export it to
    ONNX, and keep its inputs and PyTorch's output: a complete cache needs no compiler."""
    from bench_models import build, export_onnx

    cache.mkdir(parents=True, exist_ok=True)
    out = {}
    for name in MODELS:
        vmfb, onnx_path = cache / f"{name}.vmfb", cache / f"{name}.onnx"
        vk = cache / f"{name}.vulkan-{vulkan_gpu or 'baseline'}.vmfb"
        io = cache / f"{name}.io.npz"
        needed = [vmfb, onnx_path, io] + ([vk] if name == auto_model else [])
        if not all(p.exists() for p in needed):
            model, inputs = build(name)
            if not vmfb.exists():
                log(f"{name}: compiling with xgen_mlir (cpu)")
                xgen_mlir.compile(model, inputs).save(vmfb)
            if name == auto_model and not vk.exists():
                log(f"{name}: compiling with xgen_mlir (vulkan, gpu={vulkan_gpu or 'default'})")
                options = {"gpu": vulkan_gpu} if vulkan_gpu else {}
                xgen_mlir.compile(model, inputs, target="vulkan", target_options=options).save(vk)
            if not onnx_path.exists():
                log(f"{name}: exporting ONNX")
                path, _ = export_onnx(model, inputs)
                onnx_path.write_bytes(path.read_bytes())
            with torch.no_grad():
                ref = model(*inputs)
            arrays = {f"input{i}": t.numpy() for i, t in enumerate(inputs)}
            if isinstance(ref, torch.Tensor):
                arrays["ref"] = ref.numpy()
            np.savez(io, **arrays)
        with np.load(io) as z:
            n = sum(k.startswith("input") for k in z.files)
            out[name] = {
                "vmfb": vmfb,
                "vulkan_vmfb": vk if name == auto_model else None,
                "onnx": onnx_path,
                "inputs": [z[f"input{i}"] for i in range(n)],
                "ref": z["ref"] if "ref" in z.files else None,
            }
    return out


def vulkan_device() -> str | None:
    """The name of the Vulkan device IREE uses here (None: none)."""
    from xgen_mlir.runtime.targets import vulkan_device_names

    names = vulkan_device_names()
    return names[0] if names else None


class Collector:
    """Arrival and completion times of every request, per model."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.rows: dict[str, list[tuple[float, float | None, bool]]] = {m: [] for m in MODELS}

    def track(self, model: str, fut: Future, arrival: float) -> None:
        def done(f: Future) -> None:
            t = time.perf_counter()
            with self.lock:
                self.rows[model].append((arrival, t, f.exception() is None))

        fut.add_done_callback(done)

    def summary(self, t0: float, duration: float) -> dict[str, Any]:
        out = {}
        for model, rows in self.rows.items():
            if not rows:
                continue
            lat = [(f - a) for a, f, ok in rows if ok and f is not None]
            rel = MODELS[model][2]
            within = [f for a, f, ok in rows if ok and f is not None and f - t0 <= duration]
            out[model] = {
                "completed": len(lat),
                "failed": sum(not ok for _, _, ok in rows),
                "completed_within_duration": len(within),
                "p50_ms": _ms(percentile(lat, 50)),
                "p99_ms": _ms(percentile(lat, 99)),
                "max_ms": _ms(max(lat) if lat else None),
                # requests not run (drop_late) count as misses
                "deadline_misses": None
                if rel is None
                else sum(x > rel for x in lat) + sum(not ok for _, _, ok in rows),
            }
        return out


def _ms(v: float | None) -> float | None:
    return None if v is None else round(v * 1e3, 2)


class ThreadSystem:
    """One Python thread per model calling ``call[model](inputs)`` for its queued requests in
    arrival order: the naive way (xgen_mlir modules) and ONNX Runtime sessions."""

    def __init__(self, calls: dict[str, Any]) -> None:
        self.calls = calls
        self.queues: dict[str, queue.Queue] = {m: queue.Queue() for m in calls}
        self.threads = [threading.Thread(target=self._serve, args=(m,), daemon=True) for m in calls]
        for t in self.threads:
            t.start()

    def _serve(self, model: str) -> None:
        while True:
            item = self.queues[model].get()
            if item is None:
                return
            fut, inputs = item
            fut.set_running_or_notify_cancel()
            try:
                fut.set_result(self.calls[model](inputs))
            except Exception as e:
                fut.set_exception(e)

    def submit(self, model: str, inputs: list[np.ndarray]) -> Future:
        fut: Future = Future()
        self.queues[model].put((fut, inputs))
        return fut

    def close(self) -> None:
        for q in self.queues.values():
            q.put(None)
        for t in self.threads:
            t.join()


class SchedSystem:
    def __init__(
        self,
        policy: str,
        data: dict[str, Any],
        models: list[str],
        drop_late: bool = False,
        auto: str | None = None,
        idle_band: bool = True,
        pin: bool = True,
    ) -> None:
        self.sched = Scheduler(policy, drop_late=drop_late, idle_band=idle_band, pin=pin)
        for name in models:
            prio, _, deadline = MODELS[name]
            source: Any = data[name]["vmfb"]
            if name == auto:  # a CPU and a Vulkan build: the scheduler places each request
                source = [data[name]["vmfb"], data[name]["vulkan_vmfb"]]
            self.sched.add_model(name, source, priority=prio, deadline=deadline)
        log(f"scheduler ({policy}): warming up every executor and context")
        self.sched.warm_up()
        if auto:
            est = self.sched.estimates()[auto]
            log(
                f"{auto}: placement auto, first estimates "
                + ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in est.items())
            )
            # Check the numbers on each device through the scheduler's own (warm) contexts:
            # steer one request to each by the estimates, then put the measured ones back.
            for lane in est:
                for other in est:
                    self.sched.set_estimate(auto, other, 0.0 if other == lane else 1e6)
                call = {auto: (lambda xs: self.submit(auto, xs).result())}
                check_outputs(data, call, f"scheduler ({policy}) on {lane}")
            for lane, v in est.items():
                self.sched.set_estimate(auto, lane, v)
        calls = {m: (lambda xs, m=m: self.submit(m, xs).result()) for m in models}
        check_outputs(data, calls, f"scheduler ({policy})")

    def submit(self, model: str, inputs: list[np.ndarray]) -> Future:
        return self.sched.submit(model, *inputs)

    def close(self) -> None:
        self.sched.shutdown(wait=True)


def arrival_offsets(model: str, rate: float, duration: float, kind: str) -> list[float]:
    """Seconds after the start at which ``model``'s requests arrive: every ``1/rate`` (all
    streams start together, so every third MobileNetV2 request meets a ResNet-18 one), or a
    Poisson stream of that rate, seeded per model (every system gets the same times)."""
    if kind == "periodic":
        return [k / rate for k in range(int(np.ceil(duration * rate))) if k / rate < duration]
    rng = np.random.default_rng(sum(map(ord, model)))
    gaps = rng.exponential(1.0 / rate, size=int(duration * rate * 3) + 10)
    times = np.cumsum(gaps)
    return [float(t) for t in times if t < duration]


def run_workload(
    system: Any,
    data: dict[str, Any],
    models: list[str],
    duration: float,
    label: str,
    arrivals: str = "periodic",
) -> dict[str, Any]:
    coll = Collector()
    load_before = round(os.getloadavg()[0], 2)  # other jobs on the shared host show here
    t0 = time.perf_counter()
    stop = threading.Event()
    pending: list[Future] = []
    plock = threading.Lock()

    def submit(model: str, arrival: float) -> Future:
        fut = system.submit(model, data[model]["inputs"])
        coll.track(model, fut, arrival)
        with plock:
            pending.append(fut)
        return fut

    def periodic(model: str, rate: float) -> None:
        for offset in arrival_offsets(model, rate, duration, arrivals):
            arrival = t0 + offset
            delay = arrival - time.perf_counter()
            if delay > 0 and stop.wait(delay):
                return
            submit(model, arrival)

    def background(model: str) -> None:
        def again(_: Future | None = None) -> None:
            now = time.perf_counter()
            if now - t0 < duration:
                submit(model, now).add_done_callback(again)

        again()

    gens = []
    for m in models:
        rate = MODELS[m][1]
        if rate is None:
            background(m)
        else:
            gens.append(threading.Thread(target=periodic, args=(m, rate), daemon=True))
    for g in gens:
        g.start()
    for _ in tqdm(range(int(duration)), desc=label, leave=False):
        time.sleep(1)
    for g in gens:
        g.join()
    # Everything submitted resolves (BERT's last request included).
    while True:
        with plock:
            todo = [f for f in pending if not f.done()]
        if not todo:
            break
        todo[0].exception(timeout=120)
    elapsed = time.perf_counter() - t0
    out = {
        "duration_s": duration,
        "elapsed_s": round(elapsed, 2),
        "host_load_1min": [load_before, round(os.getloadavg()[0], 2)],
        "models": coll.summary(t0, duration),
    }
    done = sum(v["completed_within_duration"] for v in out["models"].values())
    out["throughput_per_s"] = round(done / duration, 2)
    return out


def run_dag(
    data: dict[str, Any], duration: float, rate: float, deadline: float, timeline_dir: str | None
) -> dict[str, Any]:
    """The closed task graph: MobileNetV2 (the "detector") then ResNet-18 on two "crops" (the
    frame itself: no real detector here) per frame at ``rate`` frames/s, one end-to-end
    deadline, EDF, with BERT-base as background work."""
    sys_ = SchedSystem("edf", data, list(MODELS))
    sched = sys_.sched
    frame = data["resnet18"]["inputs"][0]
    graph = TaskGraph(sched, "frame", deadline=deadline)
    graph.node("detect", "mobilenet_v2")
    graph.node("classify", "resnet18", after=["detect"], inputs=lambda detect: [(frame,)] * 2)
    t0 = time.perf_counter()
    futs = []

    def again(_: Future | None = None) -> None:
        if time.perf_counter() - t0 < duration:
            sys_.submit("bert_base", data["bert_base"]["inputs"]).add_done_callback(again)

    again()
    for k in tqdm(range(int(duration * rate)), desc="xgen-dag", leave=False):
        delay = t0 + k / rate - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        futs.append(graph.submit(*data["mobilenet_v2"]["inputs"]))
    for f in futs:
        f.exception(timeout=120)
    st = sched.stats()
    if timeline_dir:
        out = Path(timeline_dir) / "timeline-xgen-dag.html"
        sched.write_timeline(out, title=f"task graph at {rate}/s, {deadline * 1e3:.0f} ms deadline")
        log(f"wrote {out}")
    sys_.close()
    return {
        "host_load_1min": round(os.getloadavg()[0], 2),
        "rate_per_s": rate,
        "deadline_ms": deadline * 1e3,
        "graph": st["graphs"]["frame"],
        "bert_base_completed": st["models"]["bert_base"]["completed"],
    }


def check_outputs(data: dict[str, Any], calls: dict[str, Any], label: str) -> None:
    for name, d in data.items():
        if d["ref"] is None or name not in calls:
            continue
        got = np.asarray(calls[name](d["inputs"]))
        err = float(np.max(np.abs(got - d["ref"])) / (np.max(np.abs(d["ref"])) + 1e-12))
        log(f"{label} {name}: relative max error vs PyTorch {err:.2e}")
        if err > 1e-3:
            raise SystemExit(f"{label} {name}: wrong numbers (relative error {err:.2e})")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--duration", type=float, default=25.0, help="seconds per scenario")
    p.add_argument("--cache", default=None, help="folder for the compiled modules and ONNX")
    p.add_argument(
        "--systems",
        nargs="+",
        default=[
            "alone",
            "xgen-priority",
            "xgen-edf",
            "xgen-priority-nice19",
            "naive-threads",
            "ort-threads",
            "xgen-edf-drop",
            "xgen-dag",
        ],
    )
    p.add_argument(
        "--auto-model",
        choices=list(MODELS),
        default=None,
        help="give this model a Vulkan build too and add the xgen-<policy>-auto systems "
        "(where a Vulkan device is present)",
    )
    p.add_argument(
        "--vulkan-gpu",
        default=None,
        help="Vulkan target profile of that build (default: the portable baseline; e.g. ampere)",
    )
    p.add_argument("--prepare-only", action="store_true", help="fill the cache and stop")
    p.add_argument("--dag-rate", type=float, default=5.0, help="task graph runs per second")
    p.add_argument(
        "--arrivals",
        choices=["periodic", "poisson"],
        default="periodic",
        help="request arrival times: every 1/rate from a common start, or Poisson streams",
    )
    p.add_argument("--dag-deadline-ms", type=float, default=200.0)
    p.add_argument("--json", default=str(Path(__file__).parent / "results" / "coschedule.json"))
    p.add_argument(
        "--timeline-dir", default=None, help="write timeline-<system>.html of each xgen run here"
    )
    args = p.parse_args(argv)
    torch.set_num_threads(2)
    import tempfile

    cache = Path(args.cache) if args.cache else Path(tempfile.mkdtemp(prefix="coschedule-"))
    data = prepare(cache, args.auto_model, args.vulkan_gpu)
    if args.prepare_only:
        log(f"cache ready: {cache}")
        return 0
    torch.set_num_threads(1)
    results: dict[str, Any] = {}
    everything = list(MODELS)
    device = vulkan_device() if args.auto_model else None
    systems = list(args.systems)
    if args.auto_model:
        log(f"Vulkan device: {device or 'none'}")
        print(
            f"Vulkan device used for {args.auto_model}: {device or 'none (auto systems skipped)'}"
        )
        if device and not any(x.endswith("-auto") for x in systems):
            systems.append("xgen-edf-auto")
        if not device:
            systems = [x for x in systems if not x.endswith("-auto")]
    for system_name in systems:
        log(f"scenario {system_name}")
        if system_name == "xgen-dag":
            dag = run_dag(
                data, args.duration, args.dag_rate, args.dag_deadline_ms / 1e3, args.timeline_dir
            )
            results[system_name] = dag
            log(f"xgen-dag: {dag}")
            continue
        if system_name == "alone":
            sys_ = SchedSystem("priority", data, ["mobilenet_v2"])
            models = ["mobilenet_v2"]
        elif system_name.startswith("xgen-"):
            policy = system_name.split("-")[1]
            variants = set(system_name.split("-")[2:])
            drop = "drop" in variants
            auto = args.auto_model if "auto" in variants else None
            if "auto" in variants and not auto:
                raise SystemExit(f"{system_name}: give --auto-model")
            sys_ = SchedSystem(
                policy,
                data,
                everything,
                drop_late=drop,
                auto=auto,
                idle_band="nice19" not in variants,
                pin="unpinned" not in variants,
            )
            models = everything
        elif system_name == "naive-threads":
            mods = {n: xgen_mlir.load(data[n]["vmfb"]) for n in everything}
            calls = {n: (lambda xs, m=mods[n]: m(*xs)) for n in everything}
            check_outputs(data, calls, system_name)
            sys_ = ThreadSystem(calls)
            models = everything
        elif system_name == "ort-threads":
            from bench_models import ort_session

            sess = {n: ort_session(data[n]["onnx"], 2) for n in everything}
            names = {n: [i.name for i in sess[n].get_inputs()] for n in everything}
            calls = {
                n: (lambda xs, s=sess[n], k=names[n]: s.run(None, dict(zip(k, xs, strict=True)))[0])
                for n in everything
            }
            check_outputs(data, calls, system_name)
            sys_ = ThreadSystem(calls)
            models = everything
        else:
            raise SystemExit(f"unknown system {system_name}")
        res = run_workload(sys_, data, models, args.duration, system_name, args.arrivals)
        if isinstance(sys_, SchedSystem):
            st = sys_.sched.stats()
            res["scheduler"] = {
                k: st[k] for k in ("policy", "preemptions", "executors", "nice_offsets")
            }
            res["worker_share_avg"] = {m: v["worker_share_avg"] for m, v in st["models"].items()}
            res["runs_per_device"] = {m: v["runs_per_device"] for m, v in st["models"].items()}
            res["estimate_ms"] = {m: v["estimate_ms"] for m, v in st["models"].items()}
            if args.timeline_dir:
                out = Path(args.timeline_dir) / f"timeline-{system_name}.html"
                sys_.sched.write_timeline(out, title=f"{system_name}, mixed workload")
                sys_.sched.write_stats(out.with_suffix(".json"))
                log(f"wrote {out}")
        sys_.close()
        results[system_name] = res
        log(f"{system_name}: {res['models']}")
    print_table(results)
    payload = {
        "meta": {
            "date": dt.datetime.now().isoformat(timespec="seconds"),
            "cpus": os.cpu_count(),
            "duration_s": args.duration,
            "arrivals": args.arrivals,
            "workload": {
                m: {"priority": p, "rate_per_s": r, "deadline_ms": None if d is None else d * 1e3}
                for m, (p, r, d) in MODELS.items()
            },
            "note": "shared 2-core host: other jobs ran beside this benchmark; one run",
            "auto_model": args.auto_model,
            "vulkan_device": device,
            "vulkan_gpu_profile": args.vulkan_gpu if args.auto_model else None,
            "command": "python benchmarks/bench_coschedule.py " + " ".join(sys.argv[1:]),
        },
        "results": results,
    }
    write_results(Path(args.json), payload, threads=2)
    return 0


def print_table(results: dict[str, Any]) -> None:
    alone = results.get("alone", {}).get("models", {}).get("mobilenet_v2", {}).get("p99_ms")
    head = (
        f"{'system':<15} {'model':<13} {'done':>5} {'p50 ms':>8} {'p99 ms':>8} {'max ms':>8} "
        f"{'miss':>5} {'p99/alone':>9} {'req/s':>6}"
    )
    print("\n" + head + "\n" + "-" * len(head))
    for system, res in results.items():
        if "graph" in res:
            g = res["graph"]
            print(
                f"{system:<15} {'graph':<13} {g['completed']:>5} "
                f"{g['latency_ms']['p50'] or 0:>8.1f} {g['latency_ms']['p99'] or 0:>8.1f} "
                f"{'':>8} {g['deadline_misses']:>5}   "
                f"(MobileNetV2 -> 2x ResNet-18 at {res['rate_per_s']}/s, deadline "
                f"{res['deadline_ms']:.0f} ms; BERT-base done: {res['bert_base_completed']})"
            )
            continue
        for model, m in res["models"].items():
            ratio = (
                f"{m['p99_ms'] / alone:.2f}"
                if alone and model == "mobilenet_v2" and m["p99_ms"]
                else ""
            )
            miss = "" if m["deadline_misses"] is None else str(m["deadline_misses"])
            runs = res.get("runs_per_device", {}).get(model, {})
            where = (
                ""
                if set(runs) <= {"cpu"}
                else "  " + ", ".join(f"{k} {v}" for k, v in runs.items())
            )
            print(
                f"{system:<15} {model:<13} {m['completed']:>5} {m['p50_ms'] or 0:>8.1f} "
                f"{m['p99_ms'] or 0:>8.1f} {m['max_ms'] or 0:>8.1f} {miss:>5} {ratio:>9} "
                f"{res['throughput_per_s']:>6.1f}{where}"
            )


if __name__ == "__main__":
    sys.exit(main())
