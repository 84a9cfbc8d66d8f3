"""ONNX Runtime's time per graph node, and optionally beside xgen_mlir's time per dispatch.

The baseline we chase on CNNs is ONNX Runtime (ORT); to see *where* it is faster, its
per-node profile (``SessionOptions.enable_profiling``) is put next to
``profile_dispatches.py``'s per-dispatch one. Exports the model as ``bench_models`` does
(same graph ORT is timed on there), runs it with ``--threads`` intra-op threads, and prints

* every compute node in execution order (median over ``--iters`` profiled runs),
* the time per op type and the sum of node times,
* the end-to-end time per run without profiling (median, p10), and
* with ``--against X.json`` (written by ``profile_dispatches.py --json``): ORT's conv /
  matmul nodes paired in order with xgen_mlir's conv / matmul / gemv dispatches, when the
  two lists have the same length (CNNs, where each conv is one node and one dispatch).

    python benchmarks/ort_node_profile.py mobilenet_v2 --threads 2 --json ort.json
    python benchmarks/profile_dispatches.py m.vmfb --threads 2 --json ours.json
    python benchmarks/ort_node_profile.py mobilenet_v2 --threads 2 --against ours.json

ORT's profiler adds a little per node, so its node sum can exceed its unprofiled run time;
compare like with like (node sum with dispatch sum, run time with run time).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench_models import KNOWN, build, export_onnx, ort_session
from harness import write_results

COMPUTE = ("Conv", "FusedConv", "NchwcConv", "Gemm", "MatMul", "FusedMatMul", "FusedGemm")
OUR_COMPUTE = ("matmul", "conv", "depthwise", "fc / gemv")  # profile_dispatches kinds
WARMUP = 5


def run_times(sess, feed: dict, calls: int) -> dict[str, float]:
    for _ in range(WARMUP):
        sess.run(None, feed)
    ts = []
    for _ in range(calls):
        t0 = time.perf_counter()
        sess.run(None, feed)
        ts.append((time.perf_counter() - t0) * 1e3)
    ts.sort()
    return {"median_ms": statistics.median(ts), "p10_ms": ts[len(ts) // 10], "calls": calls}


def node_times(sess, feed: dict, iters: int) -> list[dict]:
    """Nodes in first-seen order with their median kernel time (ms) over ``iters`` runs."""
    for _ in range(WARMUP + iters):
        sess.run(None, feed)
    events = json.loads(Path(sess.end_profiling()).read_text())
    per: dict[str, list[float]] = {}
    op_of: dict[str, str] = {}
    for e in events:
        if e.get("cat") != "Node" or not e["name"].endswith("_kernel_time"):
            continue
        name = e["name"][: -len("_kernel_time")]
        per.setdefault(name, []).append(e["dur"] / 1e3)
        op_of[name] = e.get("args", {}).get("op_name", "?")
    return [
        {"node": n, "op": op_of[n], "ms": statistics.median(v[WARMUP:] or v)}
        for n, v in per.items()
    ]


def by_op(nodes: list[dict]) -> list[tuple[str, int, float]]:
    acc: dict[str, list] = {}
    for n in nodes:
        a = acc.setdefault(n["op"], [0, 0.0])
        a[0] += 1
        a[1] += n["ms"]
    return sorted(((op, c, ms) for op, (c, ms) in acc.items()), key=lambda r: -r[2])


def pair(nodes: list[dict], ours: dict) -> list[tuple[dict, dict]] | str:
    """ORT compute nodes with our compute dispatches, in order; or why they cannot pair."""
    theirs = [n for n in nodes if n["op"] in COMPUTE]
    mine = [r for r in ours["rows"] if r["kind"].startswith(OUR_COMPUTE)]
    if len(theirs) != len(mine):
        return (
            f"{len(theirs)} ORT compute nodes against {len(mine)} compute dispatches: "
            "not one to one, so not paired"
        )
    return list(zip(theirs, mine, strict=True))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("model", help=f"one of {', '.join(KNOWN)}, or an .onnx file")
    p.add_argument("--threads", type=int, default=2, help="ORT intra-op threads")
    p.add_argument("--iters", type=int, default=30, help="profiled runs")
    p.add_argument("--calls", type=int, default=100, help="timed runs without profiling")
    p.add_argument("--against", default=None, help="profile_dispatches.py --json output")
    p.add_argument("--json", default=None, help="write the results here")
    a = p.parse_args(argv)

    import numpy as np

    if a.model.endswith(".onnx"):
        import onnxruntime as ort

        path = Path(a.model)
        if not path.is_file():
            raise SystemExit(f"{path}: no such file")
        probe = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        rng = np.random.default_rng(0)
        feed = {}
        for i in probe.get_inputs():
            if any(not isinstance(d, int) for d in i.shape):
                raise SystemExit(f"{path}: input '{i.name}' has a dynamic shape {i.shape}")
            feed[i.name] = (
                rng.standard_normal(i.shape).astype(np.float32)
                if "float" in i.type
                else np.zeros(i.shape, np.int64)
            )
    else:
        model, inputs = build(a.model)
        model.eval()
        path, names = export_onnx(model, inputs)
        feed = {n: t.numpy() for n, t in zip(names, inputs, strict=True)}

    e2e = run_times(ort_session(path, a.threads), feed, a.calls)
    with tempfile.TemporaryDirectory() as tmp:
        nodes = node_times(ort_session(path, a.threads, tmp), feed, a.iters)
    total = sum(n["ms"] for n in nodes)

    print(f"\n{a.model}  ONNX Runtime, {a.threads} thread(s), median of {a.iters} profiled runs")
    print(f"{'#':>3} {'ms':>7}  op / node")
    for i, n in enumerate(nodes):
        print(f"{i:>3} {n['ms']:7.3f}  {n['op']:<14} {n['node']}")
    print(f"\n{'op type':<20}{'count':>6}{'ms':>9}{'share':>8}")
    for op, c, ms in by_op(nodes):
        print(f"{op:<20}{c:>6}{ms:9.3f}{ms / total:8.1%}")
    print(f"{'sum of node times':<26}{total:9.3f}")
    print(f"run time, no profiling: median {e2e['median_ms']:.3f} ms (p10 {e2e['p10_ms']:.3f})")

    paired = None
    if a.against:
        ours = json.loads(Path(a.against).read_text())
        paired = pair(nodes, ours)
        if isinstance(paired, str):
            print(f"\n--against: {paired}")
        else:
            print(f"\n{'#':>3} {'ORT ms':>7} {'ours ms':>8} {'ours/ORT':>9}  dispatch")
            for i, (n, r) in enumerate(paired):
                print(f"{i:>3} {n['ms']:7.3f} {r['ms']:8.3f} {r['ms'] / n['ms']:9.2f}  {r['key']}")
            t_ort = sum(n["ms"] for n, _ in paired)
            t_ours = sum(r["ms"] for _, r in paired)
            print(
                f"sum {t_ort:7.3f} {t_ours:8.3f} {t_ours / t_ort:9.2f}"
                f"  ({ours.get('device')}, threads {ours.get('threads')})"
            )
    if a.json:
        result = {
            "model": a.model,
            "threads": a.threads,
            "iters": a.iters,
            "nodes": nodes,
            "node_sum_ms": total,
            "end_to_end_ms": e2e,
        }
        if paired is not None and not isinstance(paired, str):
            result["paired"] = [
                {"node": n["node"], "ort_ms": n["ms"], "dispatch": r["key"], "ours_ms": r["ms"]}
                for n, r in paired
            ]
        write_results(Path(a.json), result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
