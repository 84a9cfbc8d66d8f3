"""One generated pattern-conv kernel outside IREE: its C compiled with gcc for this host, every
workgroup called in IREE's order (x fastest) on one core, checked against PyTorch's conv.

For kernel work (register blocks, the two formulations, vector widths) without a model
compile or IREE's threads in the way: ResNet-18's 3x3 layer shapes, weights pruned as
``compress.prune`` does for the cpu target (4-entry patterns from a library of 8, a kernel kept
with probability ``connectivity``, groups of ``group`` filters sharing one layout). Prints ms
per call (the best of 5 timed loops), GMAC/s over the kept weights, the variant and the error;
writes JSON naming the host.

    .venv/bin/python benchmarks/bench_pattern_kernel.py                       # every layer
    .venv/bin/python benchmarks/bench_pattern_kernel.py --layers 512,512,7,1 \\
        --variant pixels filters --vector-bits 256 512
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
import torch

sys.path.insert(0, str(Path(__file__).parent))
from harness import write_results
from host import summary
from xgen_mlir.codegen import pattern_kernel as pk
from xgen_mlir.passes.fkw_compact import fkw_layout
from xgen_mlir.passes.raise_pattern_conv import infer_patterns
from xgen_mlir.target import host_fact, simd_lanes, vector_registers

# (in channels, out channels, input size, stride): ResNet-18's 3x3 convs
LAYERS = [
    (64, 64, 56, 1),
    (64, 128, 56, 2),
    (128, 128, 28, 1),
    (128, 256, 28, 2),
    (256, 256, 14, 1),
    (256, 512, 14, 2),
    (512, 512, 7, 1),
]


def pruned_weight(cin: int, cout: int, group: int, connectivity: float, seed: int = 0):
    rng = np.random.default_rng(seed)
    library: list[list[int]] = []
    while len(library) < 8:  # 4-entry patterns holding the centre tap
        p = sorted({4, *rng.choice([0, 1, 2, 3, 5, 6, 7, 8], 3, replace=False).tolist()})
        if p not in library:
            library.append(p)
    w = np.zeros((cout, cin, 9), np.float32)
    for g0 in range(0, cout, group):
        keep = rng.random(cin) < connectivity
        which = rng.integers(0, len(library), cin)
        for ci in np.flatnonzero(keep):
            size = min(group, cout - g0)
            w[g0 : g0 + size, ci, library[which[ci]]] = rng.standard_normal((size, 4))
    return w.reshape(cout, cin, 3, 3)


def kernel_input(spec: pk.KernelSpec, x: np.ndarray) -> np.ndarray:
    """``x`` [C, H, W] in the kernel's layout: zero-padded planes (row phases at stride 2 in
    the pixels variant), then the slack."""
    d = spec.derived
    pt, pl = spec.padding[0], spec.padding[1]
    hq, wp, ph = d["hq"], d["wp"], d["phases"]
    planes = np.zeros((spec.c, hq * ph, wp), np.float32)
    planes[:, pt : pt + spec.h, pl : pl + spec.w] = x
    if ph > 1:
        planes = planes.reshape(spec.c, hq, ph, wp).transpose(2, 0, 1, 3)
    return np.concatenate([planes.reshape(-1), np.zeros(d["slack"], np.float32)])


def bench_layer(layer, variant: str, vector_bits: int, group: int, connectivity: float, calls: int):
    cin, cout, size, stride = layer
    w = pruned_weight(cin, cout, group, connectivity)
    st = infer_patterns(w)
    assert st is not None
    fkw = fkw_layout(w, st.kernel_pattern, st.patterns, group)
    spec = pk.KernelSpec(
        symbol="k",
        c=cin,
        h=size,
        w=size,
        f=cout,
        kh=3,
        kw=3,
        strides=(stride, stride),
        padding=(1, 1, 1, 1),
        patterns=st.patterns,
        filter_order=fkw.filter_order,
        group_filter_offsets=fkw.group_filter_offsets,
        group_kernel_offsets=fkw.group_kernel_offsets,
        kernel_channel=fkw.kernel_channel,
        kernel_pattern=fkw.kernel_pattern,
        vl=simd_lanes(vector_bits),
        regs=vector_registers(vector_bits),
        variant=variant,
        nan_checks=False,
    )
    d = spec.derived
    memref = "{0}, {0}, 0, 0, 1"
    args = ", ".join(memref.format(n) for n in ("in", "w", "b", "out"))
    src = pk.generate(spec) + (
        "void run_all(float* in, float* w, float* b, float* out, int calls) {\n"
        "  for (int r = 0; r < calls; r++)\n"
        f"    for (size_t gy = 0; gy < {d['ntiles']}; gy++)\n"
        f"      for (size_t gx = 0; gx < {d['groups']}; gx++) k_impl({args}, gx, gy);\n"
        "}\n"
    )
    work = Path(tempfile.mkdtemp(prefix="xgen-pk-"))
    (work / "k.c").write_text(src)
    cmd = ["gcc", "-O3", "-march=native", "-shared", "-fPIC", "-o", "k.so", "k.c"]
    subprocess.run(cmd, cwd=work, check=True)
    lib = ctypes.CDLL(str(work / "k.so"))
    rng = np.random.default_rng(1)
    x = rng.standard_normal((cin, size, size)).astype(np.float32)
    b = rng.standard_normal(cout).astype(np.float32)
    flat, weights = kernel_input(spec, x), np.ascontiguousarray(fkw.weights)
    out = np.zeros(d["out_len"], np.float32)

    def ptr(a: np.ndarray) -> ctypes.c_void_p:
        return a.ctypes.data_as(ctypes.c_void_p)

    lib.run_all(ptr(flat), ptr(weights), ptr(b), ptr(out), 1)
    want = torch.nn.functional.conv2d(
        torch.from_numpy(x)[None], torch.from_numpy(w), torch.from_numpy(b), stride, 1
    ).numpy()
    err = float(np.abs(out - want.reshape(-1)).max() / np.abs(want).max())
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        lib.run_all(ptr(flat), ptr(weights), ptr(b), ptr(out), calls)
        best = min(best, (time.perf_counter() - t0) / calls)
    macs = int((w != 0).sum()) * d["oh"] * d["ow"]
    return {
        "layer": list(layer),
        "variant": spec.variant,
        "vector_bits": vector_bits,
        "group": group,
        "ms": best * 1e3,
        "gmac_per_s": macs / best / 1e9,
        "max_rel_err": err,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--layers", nargs="+", default=[",".join(map(str, x)) for x in LAYERS])
    p.add_argument("--variant", nargs="+", default=["auto"], choices=["auto", "pixels", "filters"])
    p.add_argument("--vector-bits", nargs="+", type=int, default=[0], help="0: this host's")
    p.add_argument("--group", type=int, default=16)
    p.add_argument("--connectivity", type=float, default=0.5)
    p.add_argument("--calls", type=int, default=10)
    p.add_argument("--out", default=None)
    args = p.parse_args(argv)
    host_bits = host_fact("vector_bits")
    rows = []
    print(summary(1))
    for text in args.layers:
        layer = tuple(int(v) for v in text.split(","))
        for bits in args.vector_bits:
            for variant in args.variant:
                r = bench_layer(
                    layer, variant, bits or host_bits, args.group, args.connectivity, args.calls
                )
                rows.append(r)
                print(
                    f"{layer[0]:>4}->{layer[1]:<4} @{layer[2]:<3} s{layer[3]}  "
                    f"{r['variant']:<8} {r['vector_bits']}-bit  {r['ms']:7.3f} ms  "
                    f"{r['gmac_per_s']:5.1f} GMAC/s  err {r['max_rel_err']:.1e}"
                )
    out = Path(args.out) if args.out else None
    if out is None:
        out = Path(__file__).parent / "results" / f"pattern-kernel-{dt.date.today()}.json"
    write_results(out, {"args": vars(args), "one_core": True, "rows": rows}, threads=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
