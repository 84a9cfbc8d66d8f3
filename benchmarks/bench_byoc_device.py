"""The oneDNN offload on another machine's CPU (an Intel Xeon with AMX), against PyTorch there.

Two halves, because the other machine has IREE's runtime but no compiler:

    # here: compile the model's variants and pack what the other machine needs: the modules,
    # their weights archives, the plugin, oneDNN's libraries, IREE's runtime (SITE: a folder
    # holding the runtime package iree/, or a site.tar.xz packed before)
    .venv/bin/python benchmarks/bench_byoc_device.py prepare DIR --site SITE [--model encoder]
    # there (LD_LIBRARY_PATH so that the plugin finds oneDNN and OpenMP)
    LD_LIBRARY_PATH=DIR/lib python3 benchmarks/bench_byoc_device.py run DIR [--model encoder] \
        --out results.json

Models (``--model``):

- ``resnet18``: ResNet-18 with every conv offloaded to oneDNN, fp32 and bf16; and int8 (the
  model quantized once, static per-channel: every integer conv in oneDNN's s8 primitives).
- ``encoder``: a MiniLM-shaped BERT encoder (hidden 384, 12 heads of 32, FFN 1536, GELU,
  post-LayerNorm, sequence 128, float hidden states in), written here in plain torch so that
  the other machine rebuilds the same weights from the seed with torch alone; fp32 and bf16,
  IREE alone and with every Linear offloaded (attention's two matmuls of activations stay with
  IREE). The offloaded modules hold their Linear weights as the primitives' own constants,
  the others as IREE's (Q/K/V merged into one matmul), so there are two archives of ~7 MB per
  layer each: hence 3 layers by default (4 would not fit the size limit below). int8: the
  encoder quantized dynamically, every Linear in oneDNN's s8 matmul.

int8 variants (``--variants "xgen_mlir int8 onednn"`` prepares only them) are checked against
ONNX Runtime int8 on the same quantized model (``quantized.onnx``, run where it was prepared),
which also runs there as a peer.

Weights: variants whose archives are byte-identical share one file, ``weights-<hash>.irpa``;
``weights.json`` names each variant's archive (and what the compiler offloaded). The whole
directory must stay under 60 MB (the carry to the other machine is 64 MiB with the repo):
prepare prints its size and fails over it.

``run`` checks each module's output against the PyTorch output saved by ``prepare`` (relative
L2 error; over the tolerance is a failure, not a number), then times, in one process and
interleaved (``harness.time_blocks``): the modules, PyTorch eager fp32 and bf16 (autocast:
oneDNN with AMX where the CPU has it) on the same architecture rebuilt there, and ONNX Runtime
fp32 where torch can export the model there. The results carry the host record of both
machines (CPU, ISA flags, measured matmul rates).
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import lzma
import math
import os
import shutil
import sys
import tarfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "python"))

# label -> (precision, offload), per model
VARIANTS: dict[str, dict[str, tuple[str, str]]] = {
    "resnet18": {
        "xgen_mlir fp32 onednn": ("fp32", "onednn"),
        "xgen_mlir bf16 onednn": ("bf16", "onednn"),
        "xgen_mlir int8 onednn": ("int8", "onednn"),
    },
    "encoder": {
        "xgen_mlir fp32": ("fp32", "none"),
        "xgen_mlir bf16": ("bf16", "none"),
        "xgen_mlir fp32 onednn": ("fp32", "onednn"),
        "xgen_mlir bf16 onednn": ("bf16", "onednn"),
        "xgen_mlir int8 onednn": ("int8", "onednn"),
    },
}
# relative L2 error against PyTorch fp32; a transformer's reductions (softmax, LayerNorm, the
# 1536-long FFN dot products) accumulate more rounding than a conv net's
# int8: against ONNX Runtime int8 on the same quantized model, computed where it was prepared
# (a last-bit difference before a requantization moves a value by one step: MiniLM's dynamic
# int8 differs from ORT's by 6e-2 on the AMD host, as much as ORT from itself unoptimized)
TOLERANCE = {
    "resnet18": {"fp32": 1e-5, "bf16": 3e-2, "int8": 5e-2},
    "encoder": {"fp32": 1e-4, "bf16": 3e-2, "int8": 1e-1},
}
QUANTIZED = "quantized.onnx"  # the int8 variants' model, also run by ONNX Runtime there
ENCODER = {"hidden": 384, "heads": 12, "ffn": 1536, "seq": 128, "batch": 1}
ENCODER_LAYERS = 3
# IREE flags beside the CPU model, per model. The encoder's bf16 module without offload, its
# weights external, has a dispatch needing 36 KiB of stack, over IREE's 32 KiB default: IREE
# refuses it and the compile falls back to IREE's defaults (no data tiling: not the module
# xgen_mlir makes); 64 KiB lets it compile as asked.
EXTRA_FLAGS = {"resnet18": [], "encoder": ["--iree-llvmcpu-stack-allocation-limit=65536"]}
# what the plugin links that torch does not bring: oneDNN (its major version: the one the
# plugin is built against), GNU OpenMP, OpenCL (Debian's oneDNN 2 links it)
LIBS = ["libdnnl.so.{major}", "libgomp.so.1", "libOpenCL.so.1"]
LIMIT_BYTES = 60 * 10**6
MANIFEST = "weights.json"


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _lib(pattern: str) -> tuple[str, Path] | None:
    """Library ``pattern`` (a soname) as the plugin finds it, and its file; None: this build
    does not link it."""
    from xgen_mlir.byoc import onednn

    found = onednn.installation()
    assert found is not None, "the oneDNN plugin cannot be built here"
    name = pattern.format(major=found.major)
    for d in (found.root / "lib", Path("/usr/lib/x86_64-linux-gnu"), Path("/lib/x86_64-linux-gnu")):
        if (d / name).exists():
            return name, (d / name).resolve()
    if name == "libOpenCL.so.1" and found.major >= 3:
        return None  # pip's CPU-only oneDNN 3 does not link OpenCL
    raise FileNotFoundError(name)


def _encoder(layers: int) -> Any:
    """A post-LN BERT encoder of ``layers`` layers (MiniLM's sizes), attention written out
    as matmuls and softmax, as BERT's eager code does."""
    import torch
    from torch import nn

    hidden, heads, ffn = ENCODER["hidden"], ENCODER["heads"], ENCODER["ffn"]

    class Layer(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.q = nn.Linear(hidden, hidden)
            self.k = nn.Linear(hidden, hidden)
            self.v = nn.Linear(hidden, hidden)
            self.o = nn.Linear(hidden, hidden)
            self.ln1 = nn.LayerNorm(hidden, eps=1e-12)
            self.ff1 = nn.Linear(hidden, ffn)
            self.ff2 = nn.Linear(ffn, hidden)
            self.ln2 = nn.LayerNorm(hidden, eps=1e-12)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            b, s, _ = x.shape
            d = hidden // heads

            def split(t: torch.Tensor) -> torch.Tensor:
                return t.view(b, s, heads, d).transpose(1, 2)

            q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
            p = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d), dim=-1)
            ctx = (p @ v).transpose(1, 2).reshape(b, s, hidden)
            x = self.ln1(x + self.o(ctx))
            return self.ln2(x + self.ff2(nn.functional.gelu(self.ff1(x))))

    return nn.Sequential(*(Layer() for _ in range(layers)))


def _model(name: str, layers: int) -> tuple[Any, Any]:
    import torch

    torch.manual_seed(0)
    if name == "encoder":
        model = _encoder(layers).eval()
        return model, torch.randn(ENCODER["batch"], ENCODER["seq"], ENCODER["hidden"])
    from xgen_mlir.models.vision import resnet18

    model = resnet18().eval()
    return model, torch.randn(1, 3, 224, 224)


def _describe(name: str, layers: int) -> Any:
    if name == "encoder":
        return {"name": "encoder (MiniLM-shaped BERT, post-LN)", "layers": layers, **ENCODER}
    return "resnet18 (224x224, batch 1)"


def compile_variant(
    out: Path, name: str, layers: int, label: str, cpu: str, threads: int = 2
) -> None:
    """One variant, in a process of its own: constant names count up per process, so two
    variants compiled in one process would name the same weights differently. ``threads``:
    the other machine's (a target fact: each offloaded op is split into that many parts)."""
    import xgen_mlir

    precision, offload = VARIANTS[name][label]
    model, x = _model(name, layers)
    source, inputs = (str(out / QUANTIZED), None) if precision == "int8" else (model, (x,))
    m = xgen_mlir.compile(
        source,
        inputs,
        target_options={"offload": offload, "threads": str(threads)},
        precision=precision,
        precision_check=False,
        external_weights=True,
        # IREE's own dispatches for the other machine's CPU model ("host" code may use
        # instructions it lacks: load() refuses such a module, naming them)
        extra_iree_flags=([f"--iree-llvmcpu-target-cpu={cpu}"] if cpu else []) + EXTRA_FLAGS[name],
    )
    stem = label.replace(" ", "_")
    (out / f"{stem}.vmfb").write_bytes(m.vmfb)
    if m.parameters is not None:  # (none: every weight stayed in the module, e.g. int8's)
        shutil.copyfile(str(m.parameters), out / f"{stem}.irpa")
    built = {
        "offloaded": m.report.offload,
        "iree_fallback": m.report.fallback_used,  # None: compiled with the flags asked for
        "fusion_note": m.report.fusion_note,
    }
    (out / f"{stem}.built.json").write_text(json.dumps(built))
    print(f"{label}: {built}", flush=True)


def _quantize(out: Path, name: str, layers: int) -> None:
    """The int8 variants' model: quantized once (the encoder dynamically, ResNet-18 static with
    min-max ranges from seeded random inputs), saved for the compiles and for ONNX Runtime
    there; ONNX Runtime's output here is the int8 variants' reference."""
    import onnxruntime as ort
    import torch

    from xgen_mlir import compress

    model, x = _model(name, layers)
    if name == "encoder":
        q = compress.quantize(model, (x,), mode="dynamic")
    else:
        gen = torch.Generator().manual_seed(1)
        calibration = [torch.randn(x.shape, generator=gen) for _ in range(4)]
        q = compress.quantize(model, (x,), calibration=calibration)
    (out / QUANTIZED).write_bytes(q.SerializeToString())
    sess = ort.InferenceSession(str(out / QUANTIZED), providers=["CPUExecutionProvider"])
    np.save(out / "ref_int8.npy", sess.run(None, {sess.get_inputs()[0].name: x.numpy()})[0])


def _size(d: Path) -> int:
    return sum(f.stat().st_size for f in d.rglob("*") if f.is_file())


def prepare(
    out: Path,
    name: str,
    layers: int,
    site: Path | None,
    cpu: str,
    only: list[str] | None = None,
    threads: int = 2,
) -> None:
    import subprocess

    import torch

    from host import describe
    from xgen_mlir.byoc import ONEDNN

    out.mkdir(parents=True, exist_ok=True)
    model, x = _model(name, layers)
    with torch.no_grad():
        ref = model(x).numpy()
    np.save(out / "input.npy", x.numpy())
    np.save(out / "ref.npy", ref)
    chosen = {k: v for k, v in VARIANTS[name].items() if not only or k in only}
    if any(precision == "int8" for precision, _ in chosen.values()):
        _quantize(out, name, layers)
    variants: dict[str, dict] = {}
    for label, (precision, offload) in chosen.items():
        cmd = [sys.executable, __file__, "compile", str(out), label, "--model", name]
        more = ["--layers", str(layers), "--cpu", cpu, "--threads", str(threads)]
        subprocess.run([*cmd, *more], check=True)
        stem = label.replace(" ", "_")
        irpa = out / f"{stem}.irpa"
        archive = None
        if irpa.exists():
            archive = f"weights-{_sha(irpa)[:12]}.irpa"  # named by contents: equal ones shared
            irpa.replace(out / archive)
        built = out / f"{stem}.built.json"
        variants[label] = {
            "precision": precision,
            "offload": offload,
            "weights": archive,
            **json.loads(built.read_text()),
        }
        built.unlink()
    for stale in [*out.glob("weights-*.irpa"), out / "weights.irpa"]:
        if stale.exists() and stale.name not in {v["weights"] for v in variants.values()}:
            stale.unlink()
    manifest = {"model": name, "layers": layers, "cpu": cpu, "variants": variants}
    (out / MANIFEST).write_text(json.dumps(manifest, indent=1))
    shutil.copyfile(ONEDNN.plugin(), out / "libxgen_onednn.so")
    lib = out / "lib"
    lib.mkdir(exist_ok=True)
    for pattern in LIBS:  # compressed: oneDNN is 40-55 MB, 7 MB as xz
        found = _lib(pattern)
        if found is not None:
            (lib / f"{found[0]}.xz").write_bytes(lzma.compress(found[1].read_bytes()))
    if site is not None and site.is_file():  # packed before (for another Python version)
        shutil.copyfile(site, out / "site.tar.xz")
    elif site is not None:  # IREE's runtime package (iree/ without the compiler)
        with tarfile.open(out / "site.tar.xz", "w:xz") as tar:
            tar.add(site, arcname="site")
    (out / "prepared_on.json").write_text(json.dumps(describe(2), indent=1))
    archives = sorted({v["weights"] for v in variants.values() if v["weights"]})
    for archive in archives:
        users = [label for label, v in variants.items() if v["weights"] == archive]
        size = (out / archive).stat().st_size / 1e6
        print(f"{archive}: {size:.1f} MB, used by {', '.join(users)}")
    total = _size(out)
    print(f"{out}: {total / 1e6:.1f} MB in all (limit {LIMIT_BYTES / 1e6:.0f} MB)")
    if total > LIMIT_BYTES:
        raise SystemExit(f"{out}: {total / 1e6:.1f} MB, over the {LIMIT_BYTES / 1e6:.0f} MB limit")


def _manifest(d: Path, name: str) -> dict:
    """What prepare recorded; a ResNet-18 directory prepared before ``weights.json`` existed
    has one ``weights.irpa`` for both variants."""
    if (d / MANIFEST).exists():
        manifest = json.loads((d / MANIFEST).read_text())
    elif (d / "weights.irpa").exists():
        variants = {
            label: {"precision": p, "offload": o, "weights": "weights.irpa"}
            for label, (p, o) in VARIANTS["resnet18"].items()
        }
        manifest = {"model": "resnet18", "layers": 0, "variants": variants}
    else:
        raise SystemExit(f"{d}: neither {MANIFEST} nor weights.irpa: not a prepared directory")
    if manifest["model"] != name:
        raise SystemExit(f"{d} was prepared for --model {manifest['model']}, not {name}")
    return manifest


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


def run(d: Path, name: str, out: Path, threads: int, rounds: int) -> None:
    manifest = _manifest(d, name)
    _unpack(d)
    if (d / "site").exists():
        sys.path.insert(0, str(d / "site"))
    os.environ.setdefault("OMP_NUM_THREADS", str(threads))  # PyTorch's threads
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
    calls: dict[str, Callable[[], object]] = {}
    for label, v in manifest["variants"].items():
        stem = label.replace(" ", "_")
        try:
            m = CompiledModule(
                (d / f"{stem}.vmfb").read_bytes(),
                parameters=str(d / v["weights"]) if v["weights"] else None,
                plugins={"onednn": str(d / "libxgen_onednn.so")},
                source=stem,
            )
            t0 = time.perf_counter()
            got = np.asarray(m(x), np.float64)
            first = time.perf_counter() - t0
            err = float(np.linalg.norm(got - ref) / np.linalg.norm(ref))
            cells[label] = {"rel_l2_err": err, "first_call_s": first}
            if v["precision"] == "int8":  # held to ONNX Runtime int8 on the same model
                ref8 = np.load(d / "ref_int8.npy").astype(np.float64)
                err = float(np.linalg.norm(got - ref8) / np.linalg.norm(ref8))
                cells[label]["rel_l2_vs_ort_int8_prepared"] = err
            if v.get("iree_fallback"):
                cells[label]["iree_fallback"] = v["iree_fallback"]
            tolerance = TOLERANCE[name][v["precision"]]
            if err > tolerance:
                cells[label]["error"] = f"relative error {err:.2e} over {tolerance}"
                continue
            calls[label] = functools.partial(m, x)
        except Exception as e:
            cells[label] = {"error": f"{type(e).__name__}: {str(e)[:300]}"}
    model, _ = _model(name, manifest["layers"])
    xt = torch.from_numpy(x)

    def eager() -> Any:
        with torch.no_grad():
            return model(xt)

    def eager_bf16() -> Any:
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
            return model(xt)

    for label, fn in (("PyTorch eager fp32", eager), ("PyTorch eager bf16 (autocast)", eager_bf16)):
        calls[label] = fn
        got = np.asarray(fn().float().numpy(), np.float64)
        err = float(np.linalg.norm(got - ref) / np.linalg.norm(ref))
        cells[label] = {"rel_l2_err": err, "note": "same architecture and seed, built there"}
    try:
        import onnxruntime as ort

        path = d / f"{name}.onnx"
        torch.onnx.export(model, (xt,), str(path), dynamo=False)
        so = ort.SessionOptions()
        so.intra_op_num_threads = threads
        sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
        feed = sess.get_inputs()[0].name
        got = np.asarray(sess.run(None, {feed: x})[0], np.float64)
        err = float(np.linalg.norm(got - ref) / np.linalg.norm(ref))
        calls["ORT fp32"] = lambda: sess.run(None, {feed: x})
        cells["ORT fp32"] = {"version": ort.__version__, "rel_l2_err": err}
    except Exception as e:
        cells["ORT fp32"] = {"error": f"{type(e).__name__}: {str(e)[:300]}"}
    if (d / QUANTIZED).exists():  # the int8 variants' very model
        so = ort.SessionOptions()
        so.intra_op_num_threads = threads
        qs = ort.InferenceSession(str(d / QUANTIZED), so, providers=["CPUExecutionProvider"])
        qfeed = qs.get_inputs()[0].name
        got = np.asarray(qs.run(None, {qfeed: x})[0], np.float64)
        err = float(np.linalg.norm(got - ref) / np.linalg.norm(ref))
        calls["ORT int8"] = lambda: qs.run(None, {qfeed: x})
        cells["ORT int8"] = {"version": ort.__version__, "rel_l2_err": err, "model": QUANTIZED}
    times = time_blocks(calls, rounds=rounds, block=10, progress=print)
    for label, t in times.items():
        cells[label].update(t)
    results = {
        "model": _describe(name, manifest["layers"]),
        "host": describe(threads),
        "compiled_on": json.loads((d / "prepared_on.json").read_text()),
        "cells": cells,
    }
    out.write_text(json.dumps(results, indent=1))
    print(
        f"host: {results['host']['cpu_model']}, {threads} threads, matmul GFLOP/s "
        f"{results['host']['matmul_gflops']}"
    )
    print(f"model: {results['model']}")
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
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    pp = sub.add_parser("prepare")
    pp.add_argument("dir")
    pp.add_argument(
        "--site",
        help="a folder holding IREE's runtime package (iree/), packed; or a site.tar.xz, copied",
    )
    pp.add_argument("--cpu", default="sapphirerapids", help="LLVM CPU model of the other machine")
    pp.add_argument("--variants", nargs="+", help="only these variants (labels)")
    pc = sub.add_parser("compile")  # prepare's worker
    pc.add_argument("dir")
    pc.add_argument("label", choices=sorted({v for m in VARIANTS.values() for v in m}))
    pc.add_argument("--cpu", default="")
    pr = sub.add_parser("run")
    pr.add_argument("dir")
    pr.add_argument("--out", default="byoc_device.json")
    pr.add_argument("--threads", type=int, default=2)
    pr.add_argument("--rounds", type=int, default=4)
    for q in (pp, pc, pr):
        q.add_argument("--model", choices=list(VARIANTS), default="resnet18")
    for q in (pp, pc):
        q.add_argument(
            "--layers", type=int, default=ENCODER_LAYERS, help="encoder layers (--model encoder)"
        )
        q.add_argument(
            "--threads",
            type=int,
            default=2,
            help="the threads the modules will run with there (each offloaded op is split into "
            "that many parts)",
        )
    a = p.parse_args(argv)
    if a.cmd == "prepare":
        site = Path(a.site) if a.site else None
        prepare(Path(a.dir), a.model, a.layers, site, a.cpu, a.variants, a.threads)
    elif a.cmd == "compile":
        compile_variant(Path(a.dir), a.model, a.layers, a.label, a.cpu, a.threads)
    else:
        run(Path(a.dir), a.model, Path(a.out), a.threads, a.rounds)
    return 0


if __name__ == "__main__":
    sys.exit(main())
