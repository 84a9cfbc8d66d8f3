"""Per-layer speed of block-pruned Linear layers: every distinct Linear shape of BERT-base.

Each layer (sequence 128, batch 1: x [128, K]) is block-pruned with
``compress.prune(scheme="block")`` at 2x, 4x and 8x (the cpu target's default block, its
register tile) and compiled by xgen_mlir's cpu pipeline (xgen_sparse.bcsr_linear, generated
block-sparse kernel); the same dense layer runs through plain IREE (best stock flags) and
xgen_mlir's dense path. Timed side by side in one process (blocks of calls, rotating order;
in-process wall clock per call, which includes the fixed per-call cost of Python and of
copying input and output, the same for every system). That fixed cost is also measured, by
an "I/O floor" module timed with them (the same input and output tensors, next to no work:
a column sum broadcast), and each speedup is reported twice: on the wall-clock times, and net
of the floor (what the layer costs inside a model, where the call's fixed cost is paid once).
Prints achieved vs ideal (FLOP) speedup over xgen_mlir dense and over plain IREE, the max abs
error vs PyTorch, and writes JSON with the host record.

    .venv/bin/python benchmarks/bench_block_layers.py [--rounds 4] [--block 20]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch
from tqdm.auto import tqdm

sys.path.insert(0, str(Path(__file__).parent))
import xgen_mlir
from bench_models import IREE_BEST, iree_plain
from harness import time_blocks, write_results
from xgen_mlir import compress
from xgen_mlir.frontend import import_model
from xgen_mlir.passes.block_sparse import best_block
from xgen_mlir.passes.runner import snapshot
from xgen_mlir.target import host_fact

# (name, in features, out features, how many BERT-base has)
BERT_BASE_LINEARS = [
    ("attention q/k/v/out", 768, 768, 48),
    ("intermediate", 768, 3072, 12),
    ("output", 3072, 768, 12),
]


def bench_shape(
    k: int,
    n: int,
    rates: list[float],
    seq: int,
    rounds: int,
    block: int,
    options: dict[str, str] | None = None,
    structures: dict[str, dict] | None = None,
) -> dict:
    """One Linear shape: plain IREE, xgen_mlir dense and each rate's block-pruned compile
    (``options``: target options of the pruned compiles), timed side by side.
    ``structures``: key suffix -> ``compress.prune`` arguments, each pruned and timed at
    every rate (default: the target's default block only, suffix "")."""
    structures = structures or {"": {}}
    torch.manual_seed(0)
    layer = torch.nn.Sequential(torch.nn.Linear(k, n)).eval()
    x = torch.randn(seq, k)
    arr = x.numpy()
    systems = {
        "iree": iree_plain(snapshot(import_model(layer, (x,))), IREE_BEST),
        "xgen_dense": xgen_mlir.compile(layer, (x,)),
        "io_floor": xgen_mlir.compile(IoFloor(n).eval(), (x,)),
    }
    refs = {"iree": layer, "xgen_dense": layer, "io_floor": IoFloor(n)}
    fired, kept = {}, {}
    keys = [(r, f"{r:g}x{suffix}", how) for suffix, how in structures.items() for r in rates]
    for r, key, how in keys:
        pruned = compress.prune(layer, (x,), scheme="block", rate=r, **how)
        compiled = xgen_mlir.compile(pruned, (x,), target_options=options or {})
        fired[key] = {
            **compiled.report.rewrites.get("xgen-raise-block-linear", {}),
            **compiled.report.rewrites.get("xgen-lower-bcsr-kernels", {}),
        }
        w = pruned[0].weight.detach().numpy()
        kept[key] = best_block(w, host_fact("vector_bits"))[1]
        systems[f"block_{key}"] = compiled
        refs[f"block_{key}"] = pruned
    # errors on an input the timing does not use, each system against its own PyTorch model
    # (a block-pruned compile against the pruned layer), absolute and relative to the output
    check = torch.randn(seq, k, generator=torch.Generator().manual_seed(1))
    errs, rel = {}, {}
    with torch.no_grad():
        for name, mod in systems.items():
            want = refs[name](check).numpy().astype(np.float64)
            got = np.array(mod(check.numpy()), dtype=np.float64, copy=True)
            if got.shape != want.shape:
                raise SystemExit(f"{name}: output shape {got.shape} != PyTorch's {want.shape}")
            errs[name] = float(np.abs(got - want).max())
            rel[name] = errs[name] / float(np.abs(want).max())
    t = time_blocks(
        {k_: (lambda m=m: m(arr)) for k_, m in systems.items()}, rounds=rounds, block=block
    )
    ms = {name: v["median_ms"] for name, v in t.items()}
    out = {
        "ms": ms,
        "timing": t,
        "max_abs_err": errs,
        "max_rel_err": rel,
        "kernels": fired,
        "compact_density": kept,
    }
    out["speedup_vs_xgen_dense"] = {
        key: ms["xgen_dense"] / ms[f"block_{key}"] for _, key, _ in keys
    }
    out["speedup_vs_iree"] = {key: ms["iree"] / ms[f"block_{key}"] for _, key, _ in keys}
    out["fraction_of_ideal"] = {key: out["speedup_vs_xgen_dense"][key] / r for r, key, _ in keys}
    floor = ms["io_floor"]
    net = {name: max(v - floor, 1e-6) for name, v in ms.items()}
    out["io_floor_ms"] = floor
    out["net_speedup_vs_xgen_dense"] = {
        key: net["xgen_dense"] / net[f"block_{key}"] for _, key, _ in keys
    }
    out["net_fraction_of_ideal"] = {
        key: out["net_speedup_vs_xgen_dense"][key] / r for r, key, _ in keys
    }
    return out


class IoFloor(torch.nn.Module):
    """The fixed cost of one in-process call with a layer's input [M, K] and output [M, N]:
    each row's sum broadcast over N columns (K + N operations per row, against 2 K N)."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.n = n

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.sum(dim=1, keepdim=True).expand(-1, self.n) * 1.0


def sweep(args: argparse.Namespace) -> int:
    """Where the block-sparse kernel starts to beat the dense GEMM: each BERT-base shape
    pruned to each kept share, every one raised (``block_max_density=1``), timed against
    xgen_mlir dense. The break-even share is the cpu pipeline's ``block_max_density``."""
    rates = [1 / s for s in args.shares]
    rows = {}
    for name, k, n, count in tqdm(BERT_BASE_LINEARS, desc="shapes"):
        r = bench_shape(k, n, rates, args.seq, args.rounds, args.block, {"block_max_density": "1"})
        r.update({"shape": f"{args.seq}x{k} -> {n}", "count": count})
        rows[name] = r
    print(f"\nblock-sparse kernel vs xgen_mlir dense, sequence {args.seq}: speedup by kept share")
    head = f"{'layer':<22}{'dense ms':>9}" + "".join(f"{f'kept {s:g}':>14}" for s in args.shares)
    print(head)
    print("-" * len(head))
    wins: dict[str, list[bool]] = {}
    for name, r in rows.items():
        line = f"{name:<22}{r['ms']['xgen_dense']:>9.2f}"
        for rate in rates:
            key = f"{rate:g}x"
            sp = r["speedup_vs_xgen_dense"][key]
            cell = f"{sp:.2f}x ({r['compact_density'][key]:.2f})"
            line += f"{cell:>14}"
            wins.setdefault(key, []).append(sp > 1.0)
        print(line)
    # the largest measured share at which the kernel beats dense on every shape, weighted by
    # nothing (each shape must win), and the smallest share at which one loses
    ok = [s for s, rate in zip(args.shares, rates, strict=True) if all(wins[f"{rate:g}x"])]
    lose = [s for s, rate in zip(args.shares, rates, strict=True) if not all(wins[f"{rate:g}x"])]
    print(f"kernel faster on every shape at kept shares {ok}; slower somewhere at {lose}")
    write_results(
        Path(args.json),
        {"args": vars(args), "layers": rows, "wins_everywhere": ok, "loses_somewhere": lose},
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--block", type=int, default=20)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--rates", type=float, nargs="*", default=[2.0, 4.0, 8.0])
    p.add_argument("--json", default=None)
    p.add_argument(
        "--sweep",
        action="store_true",
        help="the break-even kept share instead (results/block_threshold.json)",
    )
    p.add_argument("--shares", type=float, nargs="*", default=[0.8, 0.67, 0.57, 0.49, 0.4, 0.33])
    p.add_argument(
        "--whole-columns",
        action="store_true",
        help="also prune each rate in blocks of two vectors of rows that keep whole columns "
        "(block_shape (2 x lanes, 4 x lanes), row_share 0: the whole-column kernel), "
        "timed beside the default block as '<rate>x_cols'",
    )
    p.add_argument(
        "--column-vectors",
        type=int,
        nargs="*",
        default=[2],
        help="with --whole-columns: the rows of a whole-column block in vectors (1 or 2; "
        "each timed as '<rate>x_cols<N>' where more than one is given)",
    )
    args = p.parse_args(argv)
    results = Path(__file__).parent / "results"
    if args.sweep:
        args.json = args.json or str(results / "block_threshold.json")
        return sweep(args)
    args.json = args.json or str(results / "block_layers.json")
    rows = {}
    structures: dict[str, dict] = {"": {}}
    if args.whole_columns:
        lanes = host_fact("vector_bits") // 32
        for v in args.column_vectors:
            suffix = "_cols" if len(args.column_vectors) == 1 else f"_cols{v}"
            structures[suffix] = {"block_shape": (v * lanes, 4 * lanes), "row_share": 0.0}
    keys = [f"{r:g}x{suffix}" for suffix in structures for r in args.rates]
    for name, k, n, count in tqdm(BERT_BASE_LINEARS, desc="shapes"):
        t0 = time.perf_counter()
        r = bench_shape(k, n, args.rates, args.seq, args.rounds, args.block, structures=structures)
        r.update({"shape": f"{args.seq}x{k} -> {n}", "count": count})
        rows[name] = r
        tqdm.write(f"{name}: {time.perf_counter() - t0:.0f}s")
    print(f"\nBERT-base Linear layers, sequence {args.seq}, median ms per call (wall clock)")
    head = f"{'layer':<22}{'shape':<18}{'IREE':>8}{'xgen dense':>11}{'I/O floor':>10}"
    for key in keys:
        head += f"{f'{key} ms':>12}{'speedup':>8}{'of ideal':>9}{'net':>6}{'rel err':>9}"
    print(head)
    print("-" * len(head))
    for name, r in rows.items():
        line = f"{name:<22}{r['shape']:<18}{r['ms']['iree']:>8.3f}{r['ms']['xgen_dense']:>11.3f}"
        line += f"{r['io_floor_ms']:>10.3f}"
        for key in keys:
            line += (
                f"{r['ms'][f'block_{key}']:>12.3f}{r['speedup_vs_xgen_dense'][key]:>7.2f}x"
                f"{r['fraction_of_ideal'][key]:>9.2f}{r['net_fraction_of_ideal'][key]:>6.2f}"
                f"{r['max_rel_err'][f'block_{key}']:>9.1e}"
            )
        print(line)
    print(
        "speedup: over xgen_mlir dense; of ideal: speedup / the rate (the FLOP ratio); net: "
        "of ideal with the I/O floor (the call's fixed cost) taken from both times; "
        "rel err: max |compiled - pruned PyTorch| / max |PyTorch| on a held-out input"
    )
    write_results(Path(args.json), {"args": vars(args), "layers": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
