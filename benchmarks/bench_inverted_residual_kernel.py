"""The generated inverted-residual kernel alone, outside IREE: numerics and time per block.

One kernel for a MobileNetV2 block, a Many-to-Many chain IREE's codegen cannot put in one
dispatch (one contraction root each): 1x1 expand conv + ReLU6, 3x3 depthwise conv +
ReLU6, 1x1 project conv (+ the residual), NHWC, batch 1, fp32. The generated C kernel (GCC
vector extensions, AVX-512 with ``-march=native``) works on bands of ``R`` output rows: for
each block of 16 expanded channels it expands the band's input rows into a small stack
buffer, runs the depthwise conv on them and adds their share of the project conv into the
output band, so the expanded tensor (4.8 MB for MobileNetV2's block 2) never goes to memory.
Bands are independent (the rows between two bands are expanded by both), so a dispatch's
workgroups are bands. The kernel is the compiler's (``codegen/inverted_residual.py``, used by
``xgen-fuse-inverted-residuals``); this script times it alone, outside IREE.

Prints numerics against a float64 numpy reference and the time on one thread and on two
(OpenMP, dynamic band schedule, as IREE hands out workgroups); writes JSON.

    python benchmarks/bench_inverted_residual_kernel.py             # MobileNetV2 blocks 2 and 3
    python benchmarks/bench_inverted_residual_kernel.py --block 56 56 24 144 24 1 --rows 14
"""

from __future__ import annotations

import argparse
import ctypes
import datetime as dt
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # its idle threads would spin in the timings
import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from harness import write_json
from xgen_mlir.codegen.inverted_residual import BlockSpec, pick_pixels
from xgen_mlir.codegen.inverted_residual import generate as generate_block

# (H, W, Cin, Ce, Cout, stride), band rows: MobileNetV2's block 2 (112x112x16 -> 96 -> s2 ->
# 24) and block 3 (56x56x24 -> 144 -> 24, residual)
BLOCKS = {
    "mnv2 block 2": ((112, 112, 16, 96, 24, 2), 4),
    "mnv2 block 3": ((56, 56, 24, 144, 24, 1), 14),
}


def generate(shape: tuple[int, ...], rows: int) -> str:
    """The compiler's kernel (``codegen/inverted_residual.py``) plus two entry points:
    ``blk_all`` runs every band, ``blk_par`` every band on OpenMP threads (with -fopenmp)."""
    _h, w, cin, _ce, cout, s = shape
    pixels = pick_pixels((w - 1) // s + 1) or 1
    spec = BlockSpec("blk", *shape, rows, pixels=pixels, residual=s == 1 and cin == cout)
    n = spec.bands
    entries = f"""
void blk_all(const float* x, const float* w, float* y) {{
  for (size_t b = 0; b < {n}; ++b) run_band(x, w, y, b);
}}
#ifdef _OPENMP
void blk_par(const float* x, const float* w, float* y) {{
  #pragma omp parallel for schedule(dynamic, 1)
  for (size_t b = 0; b < {n}; ++b) run_band(x, w, y, b);
}}
#endif
"""
    return generate_block(spec) + entries


def build(shape: tuple[int, ...], rows: int, work: Path, openmp: bool = True) -> ctypes.CDLL:
    h, w, cin, ce, cout, s = shape
    src = generate(shape, rows)
    c_file, so = work / "blk.c", work / f"blk-{h}x{w}x{cin}x{ce}x{cout}s{s}r{rows}.so"
    c_file.write_text(src)
    flags = ["-O3", "-march=native", "-ffp-contract=fast", "-fno-math-errno", "-shared", "-fPIC"]
    # Without OpenMP the kernel needs no libc at all: link it freestanding, so a bare gcc
    # (no libc6-dev: `.ci/run` installs gcc without recommends) builds it too.
    flags += (
        ["-fopenmp"]
        if openmp
        else ["-nostdlib", "-ffreestanding", "-fno-tree-loop-distribute-patterns"]
    )
    subprocess.run(["gcc", *flags, str(c_file), "-o", str(so)], check=True)
    return ctypes.CDLL(str(so))


def operands(shape: tuple[int, ...], seed: int = 0) -> list[np.ndarray]:
    h, w, cin, ce, cout, _s = shape
    rng = np.random.default_rng(seed)
    f = np.float32
    return [
        rng.standard_normal((h, w, cin)).astype(f),
        (rng.standard_normal((cin, ce)) / np.sqrt(cin)).astype(f),
        (rng.standard_normal(ce) * 0.1).astype(f),
        (rng.standard_normal((3, 3, ce)) / 3).astype(f),
        (rng.standard_normal(ce) * 0.1).astype(f),
        (rng.standard_normal((ce, cout)) / np.sqrt(ce)).astype(f),
        (rng.standard_normal(cout) * 0.1).astype(f),
    ]


def reference(shape: tuple[int, ...], ops: list[np.ndarray]) -> np.ndarray:
    """The block in float64: relu6(x We + be) -> pad 1 -> depthwise (stride s) -> relu6 ->
    Wp + bp (+ x)."""
    h, w, cin, _ce, cout, s = shape
    x, we, be, wd, bd, wp, bp = (a.astype(np.float64) for a in ops)
    ho, wo = (h - 1) // s + 1, (w - 1) // s + 1
    e = np.pad(np.clip(x @ we + be, 0, 6), ((1, 1), (1, 1), (0, 0)))
    d = sum(
        e[ky : ky + s * (ho - 1) + 1 : s, kx : kx + s * (wo - 1) + 1 : s] * wd[ky, kx]
        for ky in range(3)
        for kx in range(3)
    )
    y = np.clip(d + bd, 0, 6) @ wp + bp
    return y + x if s == 1 and cin == cout else y


def run(lib: ctypes.CDLL, fn: str, shape: tuple[int, ...], ops: list[np.ndarray]) -> np.ndarray:
    h, w, _cin, _ce, cout, s = shape
    y = np.zeros(((h - 1) // s + 1, (w - 1) // s + 1, cout), np.float32)
    packed = np.concatenate([a.ravel() for a in ops[1:]])  # the kernel's packed weights
    getattr(lib, fn)(*(a.ctypes.data_as(ctypes.c_void_p) for a in [ops[0], packed, y]))
    return y


def time_ms(
    lib: ctypes.CDLL, fn: str, shape: tuple[int, ...], ops: list[np.ndarray], reps: int
) -> tuple[float, float]:
    run(lib, fn, shape, ops)
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        run(lib, fn, shape, ops)
        ts.append((time.perf_counter() - t0) * 1e3)
    return float(np.median(ts)), float(np.min(ts))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--block", type=int, nargs=6, metavar=("H", "W", "CIN", "CE", "COUT", "S"))
    ap.add_argument("--rows", type=int, default=4, help="output rows per band (with --block)")
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument(
        "--json",
        type=Path,
        default=Path(__file__).parent / "results" / "fused-block-prototype.json",
    )
    args = ap.parse_args()
    if shutil.which("gcc") is None:
        sys.exit("needs gcc (with OpenMP) on PATH")
    os.environ.setdefault("OMP_WAIT_POLICY", "passive")
    blocks = {"custom": (tuple(args.block), args.rows)} if args.block else BLOCKS
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, (shape, band) in blocks.items():
            lib = build(shape, band, Path(tmp))
            ops = operands(shape)
            err = float(np.abs(run(lib, "blk_all", shape, ops) - reference(shape, ops)).max())
            one = time_ms(lib, "blk_all", shape, ops, args.reps)
            os.environ["OMP_NUM_THREADS"] = "2"
            two = time_ms(lib, "blk_par", shape, ops, args.reps)
            rows.append(
                {
                    "block": name,
                    "shape": list(shape),
                    "band_rows": band,
                    "max_abs_err": err,
                    "one_thread_ms": one[0],
                    "one_thread_min_ms": one[1],
                    "two_threads_ms": two[0],
                    "two_threads_min_ms": two[1],
                }
            )
    print(
        f"{'block':14s} {'H W Cin Ce Cout s':22s} {'R':>3s} {'max err':>9s} "
        f"{'1 thread ms (min)':>18s} {'2 threads ms (min)':>19s}"
    )
    for r in rows:
        print(
            f"{r['block']:14s} {' '.join(map(str, r['shape'])):22s} {r['band_rows']:3d} "
            f"{r['max_abs_err']:9.1e} {r['one_thread_ms']:8.3f} ({r['one_thread_min_ms']:.3f})"
            f" {r['two_threads_ms']:9.3f} ({r['two_threads_min_ms']:.3f})"
        )
    write_json(args.json, {"date": dt.datetime.now().isoformat(timespec="seconds")}, {"rows": rows})


if __name__ == "__main__":
    main()
