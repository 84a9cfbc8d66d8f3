"""A/B of one model: xgen_mlir's `cpu` pipeline with different target options, beside plain
IREE with its best stock flags, timed interleaved in one process (steadier than a full
`bench_models.py` run on a shared VM, which also times ONNX Runtime and PyTorch).

    .venv/bin/python benchmarks/ab_options.py gpt2_small --variant matmul_tile_bytes=
    .venv/bin/python benchmarks/ab_options.py minilm --variant matmul_tile_bytes=1048576
    .venv/bin/python benchmarks/ab_options.py bert_base --quantize dynamic \
        --variant int8_float_ops=bf16
    .venv/bin/python benchmarks/ab_options.py resnet18 --prune 0.5 --quantize static \
        --variant int8_pattern_kernels=false

Each ``--variant NAME=VALUE[,NAME=VALUE]`` is one more xgen_mlir system (``NAME=`` with no
value: the option empty, i.e. IREE's default). ``--quantize dynamic|static``: the model is
quantized first as ``bench_precision.py`` does it (``compress.quantize``; static on its
calibration views) and every xgen_mlir system compiles it with ``precision="int8"`` (plain
IREE is left out; errors are against the fp32 model). ``--prune C``: the model is
pattern-pruned first (``compress.prune``, connectivity C), as ``bench_precision.py --prune``
does. Prints median/min ms, GFLOP/s against this host's measured fp32 matmul rate (host.py),
and writes JSON naming the host.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parent))
import xgen_mlir
from bench_models import IREE_BEST, KNOWN, build, iree_plain_with_fallbacks, log
from harness import time_blocks, write_results
from host import fp32_rate, summary
from xgen_mlir.analysis.flops import module_flops
from xgen_mlir.frontend import import_model
from xgen_mlir.passes.runner import snapshot
from xgen_mlir.target import host_threads


def _options(text: str) -> dict[str, str]:
    return dict(item.split("=", 1) for item in text.split(",") if item)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("model", choices=KNOWN)
    p.add_argument("--variant", action="append", default=[], help="NAME=VALUE[,NAME=VALUE]")
    p.add_argument("--quantize", choices=["dynamic", "static"], default=None)
    p.add_argument(
        "--prune",
        type=float,
        default=None,
        help="pattern-prune the model first (compress.prune, this connectivity)",
    )
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--block", type=int, default=10)
    p.add_argument("--json", default=None, help="output JSON (default benchmarks/results/)")
    args = p.parse_args(argv)
    model, inputs = build(args.model)
    if args.prune is not None:
        from xgen_mlir import compress

        log(f"{args.model}: pattern-pruning (connectivity {args.prune})")
        model = compress.prune(model.eval(), inputs, target="cpu", connectivity=args.prune).eval()
    with torch.no_grad():
        ref = model(*inputs).numpy()
    arrays = [t.numpy() for t in inputs]
    module = import_model(model, inputs)
    gflop = module_flops(module.operation) / 1e9
    modules = {}
    source, precision = module, {}
    if args.quantize:
        from bench_precision import calibration_views
        from xgen_mlir import compress

        log(f"{args.model}: quantizing ({args.quantize})")
        calibration = calibration_views() if args.quantize == "static" else None
        source = compress.quantize(model, inputs, mode=args.quantize, calibration=calibration)
        precision = {"precision": "int8", "precision_check": False}
    else:
        log(f"{args.model}: compiling IREE best flags")
        modules["IREE best flags"] = iree_plain_with_fallbacks(snapshot(module), IREE_BEST)[0]
    for label, opts in [("xgen_mlir cpu", {})] + [
        (f"xgen_mlir cpu {v}", _options(v)) for v in args.variant
    ]:
        log(f"{args.model}: compiling {label}")
        modules[label] = xgen_mlir.compile(source, target="cpu", target_options=opts, **precision)
    rows = {}
    for label, m in modules.items():
        rows[label] = {
            "dispatches": m.dispatch_count(),
            "max_abs_err": float(np.abs(m(*arrays) - ref).max()),
        }
    timing = time_blocks(
        {k: (lambda m=m: m(*arrays)) for k, m in modules.items()},
        rounds=args.rounds,
        block=args.block,
    )
    peak = fp32_rate(host_threads())
    print(f"\n{args.model} ({gflop:.2f} GFLOP), {args.rounds} rounds x {args.block} calls")
    print(f"host: {summary(host_threads())}")
    for label, row in rows.items():
        row.update(timing[label])
        rate = gflop / (row["median_ms"] / 1e3)
        row["gflops"], row["of_sgemm_rate"] = rate, rate / peak
        print(
            f"  {label:<40} median {row['median_ms']:8.2f} ms  min {row['min_ms']:8.2f}  "
            f"{rate:6.1f} GFLOP/s ({100 * rate / peak:.0f}%)  "
            f"{row['dispatches']} dispatches  err {row['max_abs_err']:.1e}"
        )
    out = Path(args.json or Path(__file__).parent / "results" / f"ab-{args.model}.json")
    write_results(out, {"model": args.model, "gflop": gflop, "systems": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
