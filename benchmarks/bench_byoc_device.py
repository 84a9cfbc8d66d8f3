"""The oneDNN offload on another machine's CPU (an Intel Xeon with AMX), against PyTorch there.

Two halves, because the other machine has IREE's runtime but no compiler:

    # here: compile ResNet-18 with every conv offloaded to oneDNN, in fp32 and in bf16 (one
    # weights archive serves both: the plugin rounds to bf16 when it runs), and pack what the
    # other machine needs: the modules, the plugin, oneDNN's libraries, IREE's runtime
    .venv/bin/python benchmarks/bench_byoc_device.py prepare DIR
    # there (LD_LIBRARY_PATH so that the plugin finds oneDNN and OpenMP)
    LD_LIBRARY_PATH=DIR/lib python3 benchmarks/bench_byoc_device.py run DIR --out results.json

``run`` checks each module's output against the PyTorch output saved by ``prepare`` (relative
L2 error; over the tolerance is a failure, not a number), then times, in one process and
interleaved (``harness.time_blocks``): the modules, PyTorch eager fp32 and bf16 (autocast:
oneDNN with AMX where the CPU has it) on the same architecture rebuilt there, and ONNX Runtime
fp32 where torch can export the model there. The results carry the host record of both
machines (CPU, ISA flags, measured matmul rates).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import lzma
import os
import shutil
import sys
import tarfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "python"))

VARIANTS = {"xgen_mlir fp32 onednn": "fp32", "xgen_mlir bf16 onednn": "bf16"}
TOLERANCE = {"fp32": 1e-5, "bf16": 3e-2}  # relative L2 error against PyTorch fp32
LIBS = ["libdnnl.so.2", "libgomp.so.1", "libOpenCL.so.1"]  # what the plugin links, not in torch


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _lib(name: str) -> Path:
    for d in ("/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu"):
        if (Path(d) / name).exists():
            return (Path(d) / name).resolve()
    raise FileNotFoundError(name)


def _model():
    import torch

    from xgen_mlir.models.vision import resnet18

    torch.manual_seed(0)
    model = resnet18().eval()
    return model, torch.randn(1, 3, 224, 224)


def compile_variant(out: Path, label: str, cpu: str) -> None:
    """One variant, in a process of its own: constant names count up per process, so two
    variants compiled in one process would name the same weights differently."""
    import xgen_mlir

    model, x = _model()
    m = xgen_mlir.compile(
        model,
        (x,),
        target_options={"offload": "onednn"},
        precision=VARIANTS[label],
        precision_check=False,
        external_weights=True,
        # IREE's own dispatches for the other machine's CPU model ("host" code may use
        # instructions it lacks: load() refuses such a module, naming them)
        extra_iree_flags=[f"--iree-llvmcpu-target-cpu={cpu}"] if cpu else [],
    )
    stem = label.replace(" ", "_")
    (out / f"{stem}.vmfb").write_bytes(m.vmfb)
    shutil.copyfile(str(m.parameters), out / f"{stem}.irpa")
    print(f"{label}: {m.report.offload}", flush=True)


def prepare(out: Path, site: Path | None, cpu: str) -> None:
    import subprocess

    import torch

    from host import describe
    from xgen_mlir.byoc import ONEDNN

    out.mkdir(parents=True, exist_ok=True)
    model, x = _model()
    with torch.no_grad():
        ref = model(x).numpy()
    np.save(out / "input.npy", x.numpy())
    np.save(out / "ref.npy", ref)
    first = None
    for label in VARIANTS:
        cmd = [sys.executable, __file__, "compile", str(out), label, "--cpu", cpu]
        subprocess.run(cmd, check=True)
        irpa = out / f"{label.replace(' ', '_')}.irpa"
        if first is None:
            first = _sha(irpa)
            irpa.replace(out / "weights.irpa")
        elif _sha(irpa) != first:
            raise SystemExit(f"{label}: its weights differ from the first variant's")
        else:
            irpa.unlink()
    shutil.copyfile(ONEDNN.plugin(), out / "libxgen_onednn.so")
    lib = out / "lib"
    lib.mkdir(exist_ok=True)
    for name in LIBS:  # compressed: oneDNN is 40 MB, 7 MB as xz
        (lib / f"{name}.xz").write_bytes(lzma.compress(_lib(name).read_bytes()))
    if site is not None:  # IREE's runtime package (iree/ without the compiler)
        with tarfile.open(out / "site.tar.xz", "w:xz") as tar:
            tar.add(site, arcname="site")
    (out / "prepared_on.json").write_text(json.dumps(describe(2), indent=1))


def _unpack(d: Path) -> None:
    for xz in (d / "lib").glob("*.xz"):
        target = xz.with_suffix("")
        if not target.exists():
            target.write_bytes(lzma.decompress(xz.read_bytes()))
    if (d / "site.tar.xz").exists() and not (d / "site").exists():
        with tarfile.open(d / "site.tar.xz") as tar:
            tar.extractall(d, filter="data")
        for tool in (d / "site" / "iree" / "_runtime_libs").glob("iree-*"):
            tool.chmod(0o755)  # the tools run as programs (iree-dump-module checks a module)


def run(d: Path, out: Path, threads: int, rounds: int) -> None:
    _unpack(d)
    if (d / "site").exists():
        sys.path.insert(0, str(d / "site"))
    os.environ.setdefault("OMP_NUM_THREADS", str(threads))
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    import iree.runtime as rt
    import torch

    from harness import time_blocks
    from host import describe
    from xgen_mlir.runtime.module import CompiledModule

    rt.flags.parse_flags(f"--task_topology_max_group_count={threads}")
    torch.set_num_threads(threads)
    x = np.load(d / "input.npy")
    ref = np.load(d / "ref.npy").astype(np.float64)
    cells: dict[str, dict] = {}
    calls = {}
    for label, precision in VARIANTS.items():
        stem = label.replace(" ", "_")
        try:
            m = CompiledModule(
                (d / f"{stem}.vmfb").read_bytes(),
                parameters=str(d / "weights.irpa"),
                plugins={"onednn": str(d / "libxgen_onednn.so")},
                source=stem,
            )
            t0 = time.perf_counter()
            got = np.asarray(m(x), np.float64)
            first = time.perf_counter() - t0
            err = float(np.linalg.norm(got - ref) / np.linalg.norm(ref))
            cells[label] = {"rel_l2_err": err, "first_call_s": first}
            if err > TOLERANCE[precision]:
                cells[label]["error"] = f"relative error {err:.2e} over {TOLERANCE[precision]}"
                continue
            calls[label] = lambda m=m: m(x)
        except Exception as e:
            cells[label] = {"error": f"{type(e).__name__}: {str(e)[:300]}"}
    model, _ = _model()
    xt = torch.from_numpy(x)

    def eager() -> object:
        with torch.no_grad():
            return model(xt)

    def eager_bf16() -> object:
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
            return model(xt)

    calls["PyTorch eager fp32"] = eager
    calls["PyTorch eager bf16 (autocast)"] = eager_bf16
    for label in ("PyTorch eager fp32", "PyTorch eager bf16 (autocast)"):
        got = np.asarray(calls[label]().float().numpy(), np.float64)
        err = float(np.linalg.norm(got - ref) / np.linalg.norm(ref))
        cells[label] = {"rel_l2_err": err, "note": "same architecture and seed, built there"}
    try:
        import onnxruntime as ort

        path = d / "resnet18.onnx"
        torch.onnx.export(model, (xt,), str(path), dynamo=False)
        so = ort.SessionOptions()
        so.intra_op_num_threads = threads
        sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
        name = sess.get_inputs()[0].name
        calls["ORT fp32"] = lambda: sess.run(None, {name: x})
        cells["ORT fp32"] = {"version": ort.__version__}
    except Exception as e:
        cells["ORT fp32"] = {"error": f"{type(e).__name__}: {str(e)[:300]}"}
    times = time_blocks(calls, rounds=rounds, block=10, progress=print)
    for label, t in times.items():
        cells[label].update(t)
    results = {
        "model": "resnet18 (224x224, batch 1)",
        "host": describe(threads),
        "compiled_on": json.loads((d / "prepared_on.json").read_text()),
        "cells": cells,
    }
    out.write_text(json.dumps(results, indent=1))
    print(
        f"host: {results['host']['cpu_model']}, {threads} threads, matmul GFLOP/s "
        f"{results['host']['matmul_gflops']}"
    )
    print("| system | median ms | p90 ms | rel L2 err vs PyTorch fp32 |")
    print("|---|---|---|---|")
    for label, c in cells.items():
        if "median_ms" in c:
            print(
                f"| {label} | {c['median_ms']:.2f} | {c['p90_ms']:.2f} | "
                f"{c.get('rel_l2_err', float('nan')):.1e} |"
            )
        else:
            print(f"| {label} | {c.get('error', '-')} | | |")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    pp = sub.add_parser("prepare")
    pp.add_argument("dir")
    pp.add_argument("--site", help="a folder holding IREE's runtime package (iree/), packed")
    pp.add_argument("--cpu", default="sapphirerapids", help="LLVM CPU model of the other machine")
    pc = sub.add_parser("compile")  # prepare's worker
    pc.add_argument("dir")
    pc.add_argument("label", choices=list(VARIANTS))
    pc.add_argument("--cpu", default="")
    pr = sub.add_parser("run")
    pr.add_argument("dir")
    pr.add_argument("--out", default="byoc_device.json")
    pr.add_argument("--threads", type=int, default=2)
    pr.add_argument("--rounds", type=int, default=4)
    a = p.parse_args(argv)
    if a.cmd == "prepare":
        prepare(Path(a.dir), Path(a.site) if a.site else None, a.cpu)
    elif a.cmd == "compile":
        compile_variant(Path(a.dir), a.label, a.cpu)
    else:
        run(Path(a.dir), Path(a.out), a.threads, a.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
