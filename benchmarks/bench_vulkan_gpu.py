"""The `vulkan` target on a real GPU: numerics against PyTorch and latency against the peers.

Two halves, because the GPU machine has IREE's runtime but no compiler:

    # here: compile, and save the modules, inputs and PyTorch's outputs
    .venv/bin/python benchmarks/bench_vulkan_gpu.py prepare DIR [--models mlp,small_cnn]
    # on the GPU machine (xgen_mlir imported runtime-only, see README "As a package")
    python3 benchmarks/bench_vulkan_gpu.py run DIR --out results.json

Per model, `run` loads each saved module on the Vulkan device, checks its output against the
PyTorch output saved by `prepare` (relative error; a module over its tolerance is a failure,
not a number), and times it (median and p90 of interleaved blocks). Peers, in the same run:
plain IREE (its default vulkan-spirv flags, the same imported module), PyTorch eager on the
GPU through CUDA (the same architecture and seed, rebuilt there), and the `x86_64` build of the
model on that machine's CPU (what a scheduler weighs against the GPU). The results carry both
machines' host records: the CPU that compiled and the GPU and CPU that ran.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))

# name -> (input shape, tolerance on the relative error against PyTorch)
MODELS = {
    "mlp": ((1, 64), 1e-5),
    "small_cnn": ((1, 3, 32, 32), 1e-4),
    "mobilenet_v2": ((1, 3, 224, 224), 2e-4),
    "resnet18": ((1, 3, 224, 224), 2e-4),
}
# Builds per model: (label, target, options). The vendor profile is tried on small models
# only: docs/targets.md records that a mismatched profile can load and compute wrong numbers.
BUILDS = {
    "xgen vulkan": ("vulkan", {}),
    "xgen vulkan ampere": ("vulkan", {"target_options": {"gpu": "ampere"}}),
    "xgen x86_64 (CPU)": ("x86_64", {"target_options": {"cpu": "x86-64-v4"}}),
}
SMALL = ("mlp", "small_cnn")


def build_model(name: str):
    from xgen_mlir.models import vision

    if name == "mlp":
        return vision.mlp()
    if name == "small_cnn":
        return vision.small_cnn()
    if name == "mobilenet_v2":
        return vision.mobilenet_v2(pretrained=False)
    return vision.resnet18()


def rel_error(got: np.ndarray, want: np.ndarray) -> float:
    return float(np.abs(got - want).max() / max(float(np.abs(want).max()), 1e-12))


def prepare(out: Path, names: list[str]) -> None:
    import iree.compiler as ic
    import torch

    import host
    import xgen_mlir
    from xgen_mlir.frontend import import_model
    from xgen_mlir.passes.runner import snapshot

    out.mkdir(parents=True, exist_ok=True)
    manifest: dict = {"compiled_on": host.describe(2), "models": {}}
    for name in names:
        shape, tol = MODELS[name]
        model = build_model(name).eval()
        x = torch.randn(shape, generator=torch.Generator().manual_seed(0))
        with torch.no_grad():
            ref = model(x).numpy()
        np.save(out / f"{name}.input.npy", x.numpy())
        np.save(out / f"{name}.ref.npy", ref)
        builds = {}
        for label, (target, opts) in BUILDS.items():
            if "ampere" in label and name not in SMALL:
                continue
            t0 = time.perf_counter()
            module = xgen_mlir.compile(model, (x,), target=target, **opts)
            file = f"{name}.{label.replace(' ', '_').replace('(', '').replace(')', '')}.vmfb"
            module.save(out / file)
            builds[label] = {"file": file, "compile_s": round(time.perf_counter() - t0, 1)}
            print(f"{name}: {label} compiled in {builds[label]['compile_s']} s", flush=True)
        mlir = snapshot(import_model(model, (x,)))
        vmfb = ic.compile_str(mlir, target_backends=["vulkan-spirv"])
        (out / f"{name}.plain_iree_vulkan.vmfb").write_bytes(vmfb)
        builds["plain IREE vulkan"] = {"file": f"{name}.plain_iree_vulkan.vmfb"}
        manifest["models"][name] = {"shape": shape, "tolerance": tol, "builds": builds}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    size = sum(f.stat().st_size for f in out.iterdir()) / 2**20
    print(f"wrote {out} ({size:.1f} MiB)")


def _time(fn, blocks: int = 7, per_block: int = 20) -> dict:
    fn()
    fn()
    times = []
    for _ in range(blocks):
        for _ in range(per_block):
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e3)
    return {
        "median_ms": round(float(np.median(times)), 4),
        "p90_ms": round(float(np.percentile(times, 90)), 4),
    }


def _machine() -> dict:
    import subprocess

    import iree.runtime as rt

    info: dict = {"cpu_model": "", "cpus": os.cpu_count()}
    try:
        from xgen_mlir.target import cpu_model, isa_flags

        info["cpu_model"], info["isa_flags"] = cpu_model(), isa_flags()
    except Exception as e:  # a record, not a check
        info["cpu_error"] = str(e)
    try:
        gpu = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
        ).stdout.strip()
        info["gpu"] = gpu
    except OSError:
        info["gpu"] = None
    try:
        info["vulkan_devices"] = [str(d) for d in rt.get_driver("vulkan").query_available_devices()]
    except Exception as e:
        info["vulkan_devices"] = f"none: {e}"
    return info


def run(src: Path, out: Path, threads: int) -> int:
    import xgen_mlir

    manifest = json.loads((src / "manifest.json").read_text())
    machine = _machine()
    print(json.dumps(machine, indent=1), flush=True)
    results: dict = {}
    failures = 0
    for name, m in manifest["models"].items():
        x = np.load(src / f"{name}.input.npy")
        ref = np.load(src / f"{name}.ref.npy")
        row: dict = {}
        for label, b in m["builds"].items():
            device = "local-task" if "CPU" in label else "vulkan"
            try:
                module = xgen_mlir.load(src / b["file"], device=device)
                got = np.asarray(module(x))
                err = rel_error(got, ref)
                cell = {"rel_error": err, "ok": err <= m["tolerance"]}
                if cell["ok"]:
                    cell.update(_time(lambda module=module, x=x: module(x)))
                else:
                    failures += 1
            except Exception as e:  # every build gets a cell
                cell = {"error": f"{type(e).__name__}: {str(e)[:300]}", "ok": False}
                failures += 1
            row[label] = cell
            print(f"{name:14s} {label:22s} {cell}", flush=True)
        row.update(_torch_peers(name, x, threads))
        results[name] = row
    payload = {"ran_on": machine, "compiled_on": manifest["compiled_on"], "results": results}
    out.write_text(json.dumps(payload, indent=1))
    _print_table(results)
    return 1 if failures else 0


def _torch_peers(name: str, x: np.ndarray, threads: int) -> dict:
    """PyTorch eager on the GPU (CUDA) and on `threads` CPU threads, for the same
    architecture rebuilt here (timing only: its numerics are the reference's)."""
    try:
        import torch
    except ImportError:
        return {}
    peers: dict = {}
    model = build_model(name).eval()
    xt = torch.from_numpy(x)
    torch.set_num_threads(threads)
    with torch.no_grad():
        peers[f"PyTorch eager CPU {threads}t"] = _time(lambda: model(xt))
        if torch.cuda.is_available():
            gm, gx = model.cuda(), xt.cuda()

            def call():
                gm(gx)
                torch.cuda.synchronize()

            peers["PyTorch eager CUDA"] = _time(call)
    return peers


def _print_table(results: dict) -> None:
    labels = sorted({k for row in results.values() for k in row})
    print("\nmedian ms per call (relative error against PyTorch where checked)")
    for name, row in results.items():
        print(name)
        for label in labels:
            c = row.get(label)
            if c is None:
                continue
            text = f"{c['median_ms']:9.3f}" if "median_ms" in c else "   FAILED"
            if "rel_error" in c:
                text += f"  err {c['rel_error']:.1e}"
            if "error" in c:
                text += f"  {c['error'][:80]}"
            print(f"  {label:24s}{text}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("dir", type=Path)
    p.add_argument("--models", default="mlp,small_cnn,mobilenet_v2")
    r = sub.add_parser("run")
    r.add_argument("dir", type=Path)
    r.add_argument("--out", type=Path, default=Path("vulkan_gpu.json"))
    r.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    if a.cmd == "prepare":
        prepare(a.dir, a.models.split(","))
        return 0
    return run(a.dir, a.out, a.threads)


if __name__ == "__main__":
    sys.exit(main())
