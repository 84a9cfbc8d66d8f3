"""What it costs a core to read data the other core just wrote (why two threads scale less
than one would hope on this VM).

IREE's CPU runtime hands out a dispatch's workgroups from a shared counter the workers advance,
one tile per claim when there are fewer than 8 per worker
(``runtime/src/iree/hal/drivers/local_task/block_processor.c``,
``iree_hal_cmd_execute_dispatch_tiles``). So which core computes which tile of a tensor changes
from one dispatch to the next, and about half of what a dispatch reads was written by the other
core. ONNX Runtime's thread pool splits loops
statically, so a thread tends to read what it wrote.

This measures both cases with a small C/OpenMP program (gcc): two threads write ``b = 1.5 a``,
each its own half, then compute ``c = b + 1`` either on the same halves (same core) or on the
swapped ones (each reads what the other wrote). Sizes span CNN activations (1-5 MB, inside
the shared L3). Prints a table and writes JSON.

    python benchmarks/cross_core_reads.py --sizes-kb 1200 2400 4800 --reps 200
"""

from __future__ import annotations

import argparse
import datetime as dt
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from harness import write_json

PROGRAM = r"""
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

/* argv: bytes per array, repetitions. Prints "<same GB/s> <swapped GB/s>" for the consumer. */
int main(int argc, char **argv) {
  size_t n = (size_t)atol(argv[1]) / sizeof(float);
  int reps = atoi(argv[2]);
  float *a = aligned_alloc(64, n * 4), *b = aligned_alloc(64, n * 4), *c = aligned_alloc(64, n * 4);
  for (size_t i = 0; i < n; i++) { a[i] = (float)i; b[i] = c[i] = 0.f; }
  omp_set_num_threads(2);
  for (int swap = 0; swap < 2; swap++) {
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
      #pragma omp parallel
      {
        size_t h = n / 2, s = (size_t)omp_get_thread_num() * h;
        for (size_t i = s; i < s + h; i++) b[i] = a[i] * 1.5f;
      }
      double t0 = now();
      #pragma omp parallel
      {
        size_t h = n / 2, s = (size_t)(omp_get_thread_num() ^ swap) * h;
        for (size_t i = s; i < s + h; i++) c[i] = b[i] + 1.0f;
      }
      double dt = now() - t0;
      if (dt < best) best = dt;
    }
    printf("%.2f ", 2.0 * n * 4 / best / 1e9);
  }
  printf("%f\n", (double)c[n / 3]);
  return 0;
}
"""


def build(work: Path) -> Path:
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        raise SystemExit("cross_core_reads.py needs gcc (apt-get install gcc)")
    src, exe = work / "cross_core.c", work / "cross_core"
    src.write_text(PROGRAM)
    subprocess.run([cc, "-O3", "-march=native", "-fopenmp", str(src), "-o", str(exe)], check=True)
    return exe


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes-kb", type=int, nargs="+", default=[1200, 2400, 4800])
    p.add_argument("--reps", type=int, default=200, help="best of this many per size")
    here = Path(__file__).parent / "results"
    p.add_argument("--out", type=Path, default=here / f"cross-core-{dt.date.today()}.json")
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        exe = build(Path(tmp))
        rows = []
        for kb in args.sizes_kb:
            out = subprocess.run(
                [str(exe), str(kb * 1024), str(args.reps)],
                check=True,
                capture_output=True,
                text=True,
            ).stdout.split()
            same, swapped = float(out[0]), float(out[1])
            rows.append({"kb": kb, "same_core_gbs": same, "other_core_gbs": swapped})
    print("consumer read+write bandwidth, 2 threads, best of", args.reps)
    print(f"{'array KB':>9} {'same core GB/s':>15} {'other core GB/s':>16} {'slowdown':>9}")
    for r in rows:
        same, other = r["same_core_gbs"], r["other_core_gbs"]
        print(f"{r['kb']:>9} {same:>15.1f} {other:>16.1f} {same / other:>8.2f}x")
    write_json(args.out, {"date": str(dt.date.today()), "reps": args.reps}, {"rows": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
