"""Two variants of the block-sparse kernel timed against each other in one binary.

On a shared 2-core VM the same kernel reads 30% apart from one minute to the next, so a
change to the kernel is timed as a ratio: both variants are compiled from the same random
block-pruned weights into one executable (their own tables, their own pack), run alternately
on one thread (A then B, then B then A, ...), and the median of the per-round B/A ratios is
reported with its quartiles. The binary is built twice, A linked first and then B linked
first, because where a kernel lands in a binary alone moved it by 4-16% (measured
2026-11-30, `docs/block-pruning.md`): a change is real only where both orders agree. The
outputs of A and B are compared too (max abs difference).

A variant is the in-tree generator (``codegen/block_sparse.py``) with spec fields set
(``--a chunk_bytes=8192``), or a modified copy of that file (``--b-source my_variant.py``).

    python benchmarks/ab_bcsr_kernels.py --b tile_bytes=8192
    python benchmarks/ab_bcsr_kernels.py --b-source /tmp/variant.py --shapes 128x768x3072
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from types import ModuleType

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import host
from xgen_mlir.codegen import block_sparse as in_tree

MAIN = r"""
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#define KERNEL(n) void n(const float*, const float*, size_t, size_t, size_t, const float*, \
  const float*, size_t, size_t, size_t, float*, float*, size_t, size_t, size_t, size_t)
#define PACK(n) void n(const float*, const float*, size_t, size_t, size_t, float*, float*, \
  size_t, size_t, size_t, size_t)
KERNEL(ka_impl); KERNEL(kb_impl); PACK(ka_pack_impl); PACK(kb_pack_impl);
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9; }
static int cmp(const void* a, const void* b) { double x = *(const double*)a,
  y = *(const double*)b; return x < y ? -1 : x > y; }
#define RUN(k, p, y, wg) for (int it = 0; it < IT; ++it) for (int g = 0; g < wg; ++g) \
  k(p, p, 0, 0, 0, w, w, 0, 0, 0, y, y, 0, 0, 0, g)
int main(void) {
  enum { M = %(m)d, K = %(k)d, N = %(n)d, R = %(rounds)d, IT = %(iters)d };
  float* x = aligned_alloc(64, sizeof(float) * M * K);
  float* pa = aligned_alloc(64, sizeof(float) * (%(pxa)d + 16));
  float* pb = aligned_alloc(64, sizeof(float) * (%(pxb)d + 16));
  float* w = aligned_alloc(64, sizeof(float) * (%(nw)d + 16));
  float* ya = aligned_alloc(64, sizeof(float) * M * N);
  float* yb = aligned_alloc(64, sizeof(float) * M * N);
  for (long i = 0; i < (long)M * K; ++i) x[i] = (float)((i * 7919L) %% 1000) / 1000.f - 0.5f;
  for (long i = 0; i < %(nw)d; ++i) w[i] = (float)((i * 104729L) %% 1000) / 1000.f - 0.5f;
  for (int g = 0; g < %(ta)d; ++g) ka_pack_impl(x, x, 0, 0, 0, pa, pa, 0, 0, 0, g);
  for (int g = 0; g < %(tb)d; ++g) kb_pack_impl(x, x, 0, 0, 0, pb, pb, 0, 0, 0, g);
  double ta[R], tb[R], ratio[R];
  for (int r = 0; r < R; ++r) {
    double t0 = now();
    if (r %% 2) { RUN(kb_impl, pb, yb, %(wgb)d); } else { RUN(ka_impl, pa, ya, %(wga)d); }
    double t1 = now();
    if (r %% 2) { RUN(ka_impl, pa, ya, %(wga)d); } else { RUN(kb_impl, pb, yb, %(wgb)d); }
    double t2 = now();
    ta[r] = (r %% 2 ? t2 - t1 : t1 - t0) / IT * 1e3;
    tb[r] = (r %% 2 ? t1 - t0 : t2 - t1) / IT * 1e3;
    ratio[r] = tb[r] / ta[r];
  }
  double diff = 0;
  for (long i = 0; i < (long)M * N; ++i) {
    const double d = ya[i] > yb[i] ? ya[i] - yb[i] : yb[i] - ya[i];
    if (d > diff) diff = d;
  }
  qsort(ta, R, sizeof(double), cmp); qsort(tb, R, sizeof(double), cmp);
  qsort(ratio, R, sizeof(double), cmp);
  printf("%%.4f %%.4f %%.4f %%.4f %%.4f %%.4f %%.4f %%g\n", ta[0], ta[R / 2], tb[0], tb[R / 2],
         ratio[R / 4], ratio[R / 2], ratio[3 * R / 4], diff);
  return 0;
}
"""

FIELDS = ("median A ms", "median B ms", "B/A p25", "B/A median", "B/A p75", "max |A - B|")


def load_source(path: str) -> ModuleType:
    """A modified copy of ``codegen/block_sparse.py`` as a module (relative imports work)."""
    spec = importlib.util.spec_from_file_location("xgen_mlir.codegen._ab_variant", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # (its dataclass looks itself up there)
    spec.loader.exec_module(module)
    return module


def pruned_tables(n: int, k: int, block: tuple[int, int], kept: tuple[int, int], seed: int):
    """Random block structure: every block keeps ``kept`` (rows, columns), as 4x pruning at
    the AVX2 block (4 x 32 keeping 2 x 16) does."""
    rng = np.random.default_rng(seed)
    (br, bc), (kr, kc) = block, kept
    bo, ro, co, rows, cols = [0], [0], [0], [], []
    for i in range(n // br):
        for j in range(k // bc):
            rows += (np.sort(rng.choice(br, kr, replace=False)) + i * br).tolist()
            cols += (np.sort(rng.choice(bc, kc, replace=False)) + j * bc).tolist()
            ro.append(len(rows))
            co.append(len(cols))
        bo.append(len(ro) - 1)
    return [np.array(t) for t in (bo, ro, co, rows, cols)]


def make_spec(gen: ModuleType, m: int, n: int, k: int, args, fields: dict, symbol: str):
    bo, ro, co, rows, cols = pruned_tables(n, k, args.block, args.kept, args.seed)
    spec = gen.BcsrSpec(
        symbol=symbol, m=m, n=n, k=k, block=tuple(args.block), lanes=args.lanes,
        m_vectors=gen.TOKEN_VECTORS, block_offsets=bo, row_offsets=ro, col_offsets=co,
        kept_rows=rows, kept_cols=cols, registers=32 if args.lanes == 16 else 16, workers=1,
    )  # fmt: skip
    for key, value in fields.items():
        current = getattr(spec, key)
        if isinstance(current, bool):
            setattr(spec, key, value.lower() in ("1", "true"))
        else:
            setattr(spec, key, type(current)(value))
    return spec


def build(a: ModuleType, b: ModuleType, shape, args, work: Path, b_first: bool) -> Path:
    m, n, k = shape
    sa = make_spec(a, m, n, k, args, args.a, "ka")
    sb = make_spec(b, m, n, k, args, args.b, "kb")
    nw = int(np.sum(np.diff(sa.row_offsets) * np.diff(sa.col_offsets))) + n
    sources = {"a.c": a.generate(sa), "b.c": b.generate(sb)}
    sources |= {"pa.c": a.generate_pack(sa), "pb.c": b.generate_pack(sb)}
    sources["main.c"] = MAIN % dict(
        m=m, n=n, k=k, rounds=args.rounds, iters=args.iters, nw=nw,
        pxa=a.packed_x_size(sa), pxb=b.packed_x_size(sb), wga=sa.workgroups, wgb=sb.workgroups,
        ta=sa.m_padded // sa.m_tile, tb=sb.m_padded // sb.m_tile,
    )  # fmt: skip
    for name, text in sources.items():
        (work / name).write_text(text)
    order = ["b.c", "a.c"] if b_first else ["a.c", "b.c"]
    exe = work / ("ba" if b_first else "ab")
    flags = ["-O3", "-march=native", "-fno-math-errno", "-ffp-contract=fast"]
    files = [str(work / f) for f in (*order, "pa.c", "pb.c", "main.c")]
    subprocess.run(["gcc", *flags, *files, "-o", str(exe)], check=True)
    return exe


def parse_fields(items: list[str]) -> dict:
    return dict(item.split("=", 1) for item in items)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--a", nargs="*", default=[], help="spec fields of A (name=value)")
    p.add_argument("--b", nargs="*", default=[], help="spec fields of B (name=value)")
    p.add_argument("--a-source", help="a modified copy of codegen/block_sparse.py for A")
    p.add_argument("--b-source", help="the same for B")
    p.add_argument(
        "--shapes", nargs="*", default=["128x384x1536", "128x1536x384", "128x768x3072"],
        help="MxKxN (tokens x inputs x outputs)",
    )  # fmt: skip
    p.add_argument("--block", type=int, nargs=2, default=[4, 32])
    p.add_argument("--kept", type=int, nargs=2, default=[2, 16], help="rows, columns per block")
    p.add_argument("--lanes", type=int, default=8, help="f32 per vector: 8 AVX2, 16 AVX-512")
    p.add_argument("--rounds", type=int, default=41)
    p.add_argument("--iters", type=int, default=5, help="calls per timed block")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", default=None, help="write the results here")
    args = p.parse_args(argv)
    args.a, args.b = parse_fields(args.a), parse_fields(args.b)
    gen_a = load_source(args.a_source) if args.a_source else in_tree
    gen_b = load_source(args.b_source) if args.b_source else in_tree
    print(host.summary(1))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for text in args.shapes:
            m, k, n = (int(v) for v in text.split("x"))
            for b_first in (False, True):
                work = Path(tmp) / f"{text}-{int(b_first)}"
                work.mkdir()
                exe = build(gen_a, gen_b, (m, n, k), args, work, b_first)
                out = subprocess.run([str(exe)], capture_output=True, text=True, check=True)
                v = [float(x) for x in out.stdout.split()]
                row = dict(zip(FIELDS, (v[1], v[3], v[4], v[5], v[6], v[7]), strict=True))
                row |= {"shape": text, "linked first": "B" if b_first else "A"}
                rows.append(row)
                print(
                    f"{text:>14}  {row['linked first']} first  A {v[1]:.3f} ms  B {v[3]:.3f} ms"
                    f"  B/A {v[5]:.3f} ({v[4]:.3f}-{v[6]:.3f})  max |A - B| {v[7]:.3g}",
                    flush=True,
                )
    if args.json:
        result = {
            "host": host.describe(1),
            "a": {"fields": args.a, "source": args.a_source or "in tree"},
            "b": {"fields": args.b, "source": args.b_source or "in tree"},
            "args": {k: v for k, v in vars(args).items() if k not in ("a", "b")},
            "rows": rows,
        }
        Path(args.json).write_text(json.dumps(result, indent=1))
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
