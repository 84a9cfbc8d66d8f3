"""Per-layer speed of pattern-pruned 3x3 convolutions: xgen_mlir vs dense plain IREE.

Every distinct 3x3 conv layer of ResNet-18 (224x224 input), pruned with
``xgen_mlir.compress.prune`` to 4-entry patterns + 50% connectivity (2/9 of the weights left,
filter groups of 16 for the cpu target). Both systems get the same pruned weights: xgen_mlir's
cpu pipeline (raised to xgen_sparse, FKW, generated kernels) vs plain IREE with its best stock
flags running the dense convolution. Timed side by side in one process (blocks of calls,
rotating order). Two measures per layer: the in-process wall clock of a one-layer module
(what a user calling it sees, including the fixed per-call cost of Python and of copying input
and output, ~0.1-0.3 ms, the same for both systems), and the layer's device time -- first
dispatch start to last dispatch end per call, from IREE's own profiler with 2 workers -- which
is what the layer costs inside a model. Prints a table and writes JSON.

    .venv/bin/python benchmarks/bench_pattern_layers.py [--rounds 4] [--block 20]
"""

from __future__ import annotations

import argparse
import datetime as dt
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parent))
import xgen_mlir
from bench_models import IREE_BEST, iree_plain
from harness import time_blocks, write_results
from profile_dispatches import aggregate, bench_cmd, profile_events
from xgen_mlir import compress
from xgen_mlir.frontend import import_model
from xgen_mlir.passes.runner import snapshot

# (name, in channels, out channels, input size, stride, how many times ResNet-18 has it)
RESNET18_3X3 = [
    ("layer1.x.convN", 64, 64, 56, 1, 4),
    ("layer2.0.conv1", 64, 128, 56, 2, 1),
    ("layer2.x.convN", 128, 128, 28, 1, 3),
    ("layer3.0.conv1", 128, 256, 28, 2, 1),
    ("layer3.x.convN", 256, 256, 14, 1, 3),
    ("layer4.0.conv1", 256, 512, 14, 2, 1),
    ("layer4.x.convN", 512, 512, 7, 1, 3),
]


class OneConv(torch.nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(cin, cout, 3, stride, 1, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


def bench_layer(cin, cout, size, stride, rounds, block, connectivity, group_size=None):
    torch.manual_seed(0)
    x = torch.randn(1, cin, size, size)
    model = compress.prune(
        OneConv(cin, cout, stride).eval(),
        (x,),
        target="cpu",
        connectivity=connectivity,
        group_size=group_size,
    )
    with torch.no_grad():
        ref = model(x).numpy()
    dense = iree_plain(snapshot(import_model(model, (x,))), IREE_BEST)
    ours = xgen_mlir.compile(model, (x,))
    arr = x.numpy()
    errs = {n: float(np.abs(m(arr) - ref).max()) for n, m in (("dense", dense), ("xgen", ours))}
    t = time_blocks(
        {"dense": lambda: dense(arr), "xgen": lambda: ours(arr)}, rounds=rounds, block=block
    )
    device = device_ms({"dense": dense, "xgen": ours}, arr, rounds)
    density = float((model.conv.weight != 0).float().mean())
    return {
        "dense_ms": t["dense"]["median_ms"],
        "xgen_ms": t["xgen"]["median_ms"],
        "speedup": t["dense"]["median_ms"] / t["xgen"]["median_ms"],
        "density": density,
        "dense_device_ms": device["dense"],
        "xgen_device_ms": device["xgen"],
        "device_speedup": device["dense"] / device["xgen"],
        "max_abs_err": errs,
        "dispatches": {"dense": dense.dispatch_count(), "xgen": ours.dispatch_count()},
    }


def device_ms(modules: dict, arr: np.ndarray, rounds: int, calls: int = 40) -> dict[str, float]:
    """The layer's cost inside a model: per call, from its first dispatch's start to its last
    dispatch's end (IREE's host-execution profile, 2 workers), median over calls and rounds.
    Unlike the in-process wall clock it leaves out what every call pays whatever the layer
    (Python, copying the input in and the result out: ~0.1-0.3 ms here), which no model pays
    per layer."""
    with tempfile.TemporaryDirectory(prefix="xgen-layer-") as tmp:
        work = Path(tmp)
        np.save(work / "x.npy", arr)
        spans: dict[str, list[float]] = {k: [] for k in modules}
        for r in range(rounds):
            for k in list(modules) if r % 2 == 0 else list(modules)[::-1]:
                vmfb = modules[k].save(work / f"{k}.vmfb")
                cmd = bench_cmd(vmfb, "main", "local-task", [f"@{work / 'x.npy'}"], 2)
                spans[k].append(aggregate(profile_events(cmd, calls, work), {})["span_ms"])
        return {k: statistics.median(v) for k, v in spans.items()}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--block", type=int, default=20)
    p.add_argument("--connectivity", type=float, default=0.5)
    p.add_argument("--json", default=None)
    p.add_argument(
        "--group-sizes",
        type=int,
        nargs="*",
        default=[1, 4, 8, 16, 32],
        help="also time layer2.x.convN pruned with these filter-group sizes",
    )
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    rows = {}
    for name, cin, cout, size, stride, count in RESNET18_3X3:
        t0 = time.perf_counter()
        r = bench_layer(cin, cout, size, stride, args.rounds, args.block, args.connectivity)
        r.update({"shape": f"{cin}->{cout} @{size} s{stride}", "count": count})
        rows[name] = r
        print(
            f"[{time.strftime('%H:%M:%S')}] {name}: {r['speedup']:.2f}x "
            f"({time.perf_counter() - t0:.0f}s)",
            file=sys.stderr,
            flush=True,
        )
    print(
        "\nResNet-18 3x3 convs, 4-entry patterns + "
        f"{args.connectivity:.0%} connectivity (median ms, batch 1)"
    )
    print("wall = in-process call (incl. the fixed per-call cost); device = the layer's dispatches")
    head = (
        f"{'layer':<16}{'shape':<22}{'density':>8}{'wall dense':>11}{'xgen':>8}{'speedup':>8}"
        f"{'device dense':>14}{'xgen':>8}{'speedup':>8}"
    )
    print(head)
    print("-" * len(head))
    for name, r in rows.items():
        print(
            f"{name:<16}{r['shape']:<22}{r['density']:>8.3f}{r['dense_ms']:>11.3f}"
            f"{r['xgen_ms']:>8.3f}{r['speedup']:>7.2f}x{r['dense_device_ms']:>14.3f}"
            f"{r['xgen_device_ms']:>8.3f}{r['device_speedup']:>7.2f}x"
        )
    tot = {
        k: sum(r[k] * r["count"] for r in rows.values())
        for k in ("dense_ms", "xgen_ms", "dense_device_ms", "xgen_device_ms")
    }
    print(
        f"{'all 16 layers':<38}{'':>8}{tot['dense_ms']:>11.3f}{tot['xgen_ms']:>8.3f}"
        f"{tot['dense_ms'] / tot['xgen_ms']:>7.2f}x{tot['dense_device_ms']:>14.3f}"
        f"{tot['xgen_device_ms']:>8.3f}"
        f"{tot['dense_device_ms'] / tot['xgen_device_ms']:>7.2f}x"
    )
    by_group = {}
    for g in args.group_sizes:
        by_group[g] = bench_layer(128, 128, 28, 1, args.rounds, args.block, args.connectivity, g)
    if by_group:
        print("\nspeed vs filter-group size the pruner honours (layer2.x.convN, 128->128 @28)")
        print(
            f"{'group size':>10}{'wall dense':>11}{'xgen':>8}{'speedup':>8}"
            f"{'device dense':>14}{'xgen':>8}{'speedup':>8}"
        )
        for g, r in by_group.items():
            print(
                f"{g:>10}{r['dense_ms']:>11.3f}{r['xgen_ms']:>8.3f}{r['speedup']:>7.2f}x"
                f"{r['dense_device_ms']:>14.3f}{r['xgen_device_ms']:>8.3f}"
                f"{r['device_speedup']:>7.2f}x"
            )
    out = (
        Path(args.json)
        if args.json
        else (
            Path(__file__).parent / "results" / f"pattern-layers-{dt.date.today().isoformat()}.json"
        )
    )
    write_results(out, {"args": vars(args), "layers": rows, "group_sizes": by_group})
    return 0


if __name__ == "__main__":
    sys.exit(main())
