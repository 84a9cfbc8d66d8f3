"""The exact 16-bit int8 GEMM kernel outside IREE, against the f32 GEMM kernel and this core's
multiply-add peak: one thread, each kernel's C compiled with gcc for this host.

For kernel work (register tiles, k blocks) without a model compile or IREE's threads in the
way. Per layer shape (default: BERT-base's three Linear shapes at 128 tokens) and register
tile, the int16 kernel (``codegen/int16_gemm.py``) is checked against numpy's integer product
exactly and timed (best of 7 loops); the f32 kernel (``codegen/dense_gemm.py``) on the same
shape with its own tile is timed beside it. Then two C loops give the core's peak: six
independent ``vpmaddwd`` + ``vpaddd`` chains, and six FMA chains (what the tiles can reach at
most). Prints G multiply-adds/s; writes JSON naming the host. x86 with AVX2 only.

    .venv/bin/python benchmarks/bench_int16_kernel.py
    .venv/bin/python benchmarks/bench_int16_kernel.py --shapes 128,768,3072 --tiles 6x2 4x3
"""

from __future__ import annotations

import argparse
import ctypes
import datetime as dt
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from harness import write_results
from host import summary
from xgen_mlir.codegen import dense_gemm, int16_gemm
from xgen_mlir.codegen.dense_gemm import GemmSpec
from xgen_mlir.target import gemm_tile

# (rows, inputs, outputs): BERT-base's Linear layers at 128 tokens
SHAPES = [(128, 768, 768), (128, 768, 3072), (128, 3072, 768)]
LOOPS = 7

PEAK_C = r"""
#include <immintrin.h>
#include <time.h>
static double now(void) {
  struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec;
}
/* multiply-adds per second of CH independent vpmaddwd + vpaddd chains (16 each), four
   operands shared round-robin (so the chains and operands fit 16 registers) */
#define MADD_RATE(CH)                                                                        \
  double madd_rate_##CH(long n) {                                                            \
    __m256i a[CH], c[4], b = _mm256_set1_epi32(0x00030002);                                  \
    for (int i = 0; i < CH; i++) a[i] = _mm256_set1_epi32(i);                                \
    for (int i = 0; i < 4; i++) c[i] = _mm256_set1_epi32(5 + i);                             \
    double t0 = now();                                                                       \
    for (long i = 0; i < n; i++) {                                                           \
      _Pragma("GCC unroll 16") for (int j = 0; j < CH; j++)                                  \
        a[j] = _mm256_add_epi32(a[j], _mm256_madd_epi16(b, c[j % 4]));                       \
      __asm__ volatile("" : "+x"(b));                                                        \
    }                                                                                        \
    double s = now() - t0;                                                                   \
    __m256i r = a[0];                                                                        \
    for (int i = 1; i < CH; i++) r = _mm256_xor_si256(r, a[i]);                              \
    volatile int keep = _mm256_extract_epi32(r, 0); (void)keep;                              \
    return 16.0 * CH * n / s;                                                                \
  }
MADD_RATE(6)
MADD_RATE(8)
/* the same for eight FMA chains (8 each) */
double fma_rate(long n) {
  __m256 f[8], x = _mm256_set1_ps(1.0001f), y = _mm256_set1_ps(0.9999f);
  for (int i = 0; i < 8; i++) f[i] = _mm256_set1_ps((float)i);
  double t0 = now();
  for (long i = 0; i < n; i++) {
    _Pragma("GCC unroll 8") for (int j = 0; j < 8; j++) f[j] = _mm256_fmadd_ps(x, y, f[j]);
    __asm__ volatile("" : "+x"(x), "+x"(y));
  }
  double s = now() - t0;
  __m256 q = f[0];
  for (int i = 1; i < 8; i++) q = _mm256_add_ps(q, f[i]);
  volatile float keep = q[0]; (void)keep;
  return 8.0 * 8 * n / s;
}
"""


def _build(src: str, work: Path, name: str) -> ctypes.CDLL:
    """``src`` compiled and loaded; ``name`` must be new (dlopen returns a loaded path's
    library again)."""
    (work / f"{name}.c").write_text(src)
    cmd = ["gcc", "-O2", "-march=native", "-shared", "-fPIC", "-o", f"{name}.so", f"{name}.c"]
    subprocess.run(cmd, cwd=work, check=True)
    return ctypes.CDLL(str(work / f"{name}.so"))


def _driver(spec: GemmSpec, operands: int) -> str:
    """``run_all(buffers..., y, calls)``: every workgroup in IREE's order, ``calls`` times."""
    params = ", ".join(f"void* b{i}" for i in range(operands))
    refs = ", ".join(f"b{i}, b{i}, 0, 0, 1" for i in range(operands))
    return f"""
void run_all({params}, void* y, int calls) {{
  for (int c = 0; c < calls; c++)
    for (size_t gy = 0; gy < {spec.grid[1]}; gy++)
      for (size_t gx = 0; gx < {spec.grid[0]}; gx++) k_impl({refs}, y, y, 0, 0, 1, gx, gy);
}}
"""


def _time(run, calls: int) -> float:
    best = float("inf")
    for _ in range(LOOPS):
        t0 = time.perf_counter()
        run(calls)
        best = min(best, (time.perf_counter() - t0) / calls)
    return best


def _ptr(a: np.ndarray) -> ctypes.c_void_p:
    return a.ctypes.data_as(ctypes.c_void_p)


def bench_int16(shape: tuple[int, int, int], rows: int, n_vectors: int, work: Path) -> dict:
    m, k, n = shape
    spec = GemmSpec("k", m, n, k, 8, rows, n_vectors, 256, 0, 0, 512 * 1024, workers=1)
    rng = np.random.default_rng(0)
    x = rng.integers(-255, 256, (m, k)).astype(np.int16)
    w = rng.integers(-255, 256, (n, k)).astype(np.int64)
    packed, start = int16_gemm.pack_weights(w, np.zeros(n), spec.nr)
    lib = _build(
        int16_gemm.generate(spec) + _driver(spec, 3), work, f"i16_{m}_{k}_{n}_{rows}x{n_vectors}"
    )
    y = np.zeros((m, n), np.int32)
    lib.run_all(_ptr(x), _ptr(packed), _ptr(start), _ptr(y), 1)
    exact = bool(np.array_equal(y, (x.astype(np.int64) @ w.T).astype(np.int32)))
    best = _time(lambda c: lib.run_all(_ptr(x), _ptr(packed), _ptr(start), _ptr(y), c), 5)
    return {"kernel": "int16", "tile": f"{rows}x{spec.nr}", "ms": best * 1e3,
            "gmac_per_s": m * n * k / best / 1e9, "exact": exact}  # fmt: skip


def bench_f32(shape: tuple[int, int, int], work: Path) -> dict:
    m, k, n = shape
    rows, n_vectors, lanes = gemm_tile(256)
    spec = GemmSpec("k", m, n, k, lanes, rows, n_vectors, 256, 0, 0, 512 * 1024, workers=1)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((m, k)).astype(np.float32)
    w = rng.standard_normal((n, k)).astype(np.float32)
    packed = dense_gemm.pack_weights(w, np.zeros(n, np.float32), spec.nr)
    lib = _build(dense_gemm.generate(spec) + _driver(spec, 2), work, f"f32_{m}_{k}_{n}")
    y = np.zeros((m, n), np.float32)
    lib.run_all(_ptr(x), _ptr(packed), _ptr(y), 1)
    err = float(np.abs(y - x @ w.T).max() / np.abs(x @ w.T).max())
    best = _time(lambda c: lib.run_all(_ptr(x), _ptr(packed), _ptr(y), c), 5)
    return {"kernel": "f32", "tile": f"{rows}x{spec.nr}", "ms": best * 1e3,
            "gmac_per_s": m * n * k / best / 1e9, "max_rel_err": err}  # fmt: skip


def peaks(work: Path) -> dict[str, float]:
    lib = _build(PEAK_C, work, "peak")
    fns = {"vpmaddwd_6_chains": lib.madd_rate_6, "vpmaddwd_8_chains": lib.madd_rate_8,
           "fma_8_chains": lib.fma_rate}  # fmt: skip
    for fn in fns.values():
        fn.restype, fn.argtypes = ctypes.c_double, [ctypes.c_long]
    n = 50_000_000
    return {f"{k}_gmac_per_s": max(fn(n) for _ in range(3)) / 1e9 for k, fn in fns.items()}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shapes", nargs="+", default=[",".join(map(str, s)) for s in SHAPES],
                   help="rows,inputs,outputs")  # fmt: skip
    p.add_argument("--tiles", nargs="+", default=["6x2", "5x2", "8x1", "4x3"],
                   help="int16 register tiles: rows x vectors of 8 outputs")  # fmt: skip
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    print(summary(1))
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="xgen-i16-") as tmp:
        work = Path(tmp)
        for text in args.shapes:
            shape = tuple(int(v) for v in text.split(","))
            assert len(shape) == 3, "--shapes takes rows,inputs,outputs"
            results = [bench_f32(shape, work)]
            for tile in args.tiles:
                r, v = (int(t) for t in tile.split("x"))
                results.append(bench_int16(shape, r, v, work))
            for res in results:
                res["shape"] = list(shape)
                rows.append(res)
                check = "exact" if res.get("exact") else f"err {res.get('max_rel_err', 'WRONG')}"
                print(f"{text:>16}  {res['kernel']:<5} {res['tile']:>6}  {res['ms']:7.3f} ms  "
                      f"{res['gmac_per_s']:5.1f} GMAC/s  {check}")  # fmt: skip
        peak = peaks(work)
    rates = ", ".join(f"{k.removesuffix('_gmac_per_s')} {v:.1f}" for k, v in peak.items())
    print(f"one core, independent chains: {rates} GMAC/s")
    out = Path(args.out) if args.out else None
    if out is None:
        out = Path(__file__).parent / "results" / f"int16-kernel-{dt.date.today()}.json"
    write_results(out, {"args": vars(args), "one_core": True, "rows": rows, "peak": peak},
                  threads=1)  # fmt: skip
    return 0 if all(r.get("exact", True) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
