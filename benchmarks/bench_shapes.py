"""Dynamic shapes against the peers: one compile per model, timed at several batches / lengths.

The evidence table of issue 31. Sections:

1. vision zoo (MobileNetV2, ResNet-18, EfficientNet-B0, 224x224): ONE xgen_mlir compile with a
   dynamic batch (``torch.export.Dim("batch", max=16)``), timed at batch 1, 4 and 16;
2. BERT-base and GPT-2 small: ONE compile with a dynamic sequence length (max 384), timed at
   sequence 32, 128 and 384 (batch 1);
3. the pattern-pruned ResNet-18 at batch 8 (pruned as in ``bench_batched_pattern.py``) against
   dense xgen_mlir, ONNX Runtime and OpenVINO: does the pruning keep its speedup?

Peers run one ONNX export per model with the same dynamic axis (TorchScript exporter, opset
17): ONNX Runtime (CPUExecutionProvider, ``--threads`` intra-op threads, all graph
optimizations) and OpenVINO (CPU, ``INFERENCE_PRECISION_HINT`` f32, ``--threads`` inference
threads, latency hint). xgen_mlir runs IREE's CPU task system at its default (one worker per
host core). Every cell is timed in alternating blocks (``harness.time_blocks``) in one
process, and every system's output is compared with PyTorch eager fp32 on the same input:
relative error = max |out - ref| / max |ref|. A missing peer package, or a model that fails for
one system, shows as that cell's text (and in the JSON); the run goes on.

    .venv/bin/python benchmarks/bench_shapes.py                       # everything (long)
    .venv/bin/python benchmarks/bench_shapes.py --models resnet18 --transformers gpt2_small
    .venv/bin/python benchmarks/bench_shapes.py --quick --out /tmp/shapes.json   # smoke test
"""

from __future__ import annotations

import argparse
import datetime as dt
import platform
import sys
import tempfile
import time
import traceback
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch
from torch.export import Dim

sys.path.insert(0, str(Path(__file__).parent))
import xgen_mlir
from bench_models import build, log, openvino_session, ort_session
from harness import time_blocks, write_results
from host import summary
from xgen_mlir.models import transformers_zoo, vision

VISION = ["mobilenet_v2", "resnet18", "efficientnet_b0"]
TRANSFORMERS = ["bert_base", "gpt2_small"]
#: Small stand-ins for smoke tests (``--quick``); not part of the evidence.
TINY_TRANSFORMERS = ["gpt2_tiny", "bert_tiny"]
SYSTEMS = ["xgen_mlir", "ONNX Runtime", "OpenVINO"]
#: bench_batched_pattern.py's pruning of ResNet-18 (its --connectivity default).
PRUNE_CONNECTIVITY = 0.5

Cell = dict[str, object]


def short_error(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return f"{type(e).__name__}: {text[:300]}"


# -- models ---------------------------------------------------------------------------------


def build_transformer(name: str, seq: int) -> tuple[torch.nn.Module, tuple[torch.Tensor, ...]]:
    """A zoo transformer with example inputs at ``seq``: ``(input_ids[, attention_mask])``."""
    if name == "gpt2_tiny":
        # with an explicit mask, like gpt2_small: without one transformers' packed-sequence
        # check (torch.diff) cannot be exported to ONNX
        model, (ids,) = transformers_zoo.gpt2_tiny(seq=seq)
        inner = model.model
        wrapped = transformers_zoo.HFWrapper(
            inner, ("input_ids", "attention_mask"), "logits", use_cache=False
        )
        return wrapped.eval(), (ids, torch.ones_like(ids))
    if name == "bert_tiny":
        return transformers_zoo.bert_tiny(seq=seq)
    return getattr(transformers_zoo, name)(seq=seq)


def vocab_size(model: torch.nn.Module) -> int:
    return int(model.model.config.vocab_size)


def vision_inputs(name: str, batch: int, seed: int) -> tuple[torch.Tensor, ...]:
    item = vision.INPUT_SHAPES[name][1:]
    gen = torch.Generator().manual_seed(seed)
    return (torch.randn(batch, *item, generator=gen),)


def text_inputs(
    example: tuple[torch.Tensor, ...], vocab: int, seq: int, seed: int
) -> tuple[torch.Tensor, ...]:
    """Random ids of length ``seq`` for input 0; every further input (the attention mask) ones."""
    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, vocab, (1, seq), generator=gen, dtype=example[0].dtype)
    return (ids, *(torch.ones_like(ids, dtype=t.dtype) for t in example[1:]))


# -- systems ----------------------------------------------------------------------------------


def compile_xgen(
    model: torch.nn.Module, example: tuple[torch.Tensor, ...], dynamic_shapes
) -> tuple[Callable | None, Cell]:
    """xgen_mlir's default (cpu) pipeline; the callable takes numpy arrays."""
    info: Cell = {}
    t0 = time.perf_counter()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            m = xgen_mlir.compile(model, example, dynamic_shapes=dynamic_shapes)
    except Exception as e:  # the cell says why, the run goes on
        log(f"xgen_mlir compile failed: {short_error(e)}")
        traceback.print_exc(file=sys.stderr)
        return None, {"error": short_error(e), "compile_s": time.perf_counter() - t0}
    info["compile_s"] = time.perf_counter() - t0
    info["input_shapes"] = [list(i.shape) for i in m.signature.inputs]  # None = dynamic
    info["fallback"] = m.report.fallback_used
    info["dispatches"] = m.dispatch_count()
    info["warnings"] = sorted({f"{w.category.__name__}: {w.message}" for w in caught})[:20]
    info["rewrites"] = m.report.rewrites
    return (lambda *arrays: m(*arrays)), info


def export_onnx(
    model: torch.nn.Module, example: tuple[torch.Tensor, ...], axes: dict[int, dict[int, str]]
) -> tuple[Path, list[str]]:
    """One ONNX file (TorchScript exporter, opset 17) with ``axes`` ({input: {dim: name}},
    output -1) symbolic; its input names."""
    path = Path(tempfile.mkdtemp(prefix="bench-shapes-")) / "model.onnx"
    names = [f"input{i}" for i in range(len(example))]
    dynamic = {(names[i] if i >= 0 else "output"): dims for i, dims in axes.items()}
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model,
            example,
            str(path),
            input_names=names,
            output_names=["output"],
            dynamic_axes=dynamic or None,
            opset_version=17,
            dynamo=False,
        )
    return path, names


def ort_runner(path: Path, names: list[str], threads: int) -> tuple[Callable, Cell]:
    import onnxruntime as ort

    sess = ort_session(path, threads)
    info: Cell = {"version": ort.__version__, "intra_op_threads": threads}

    def run(*arrays: np.ndarray):
        return sess.run(None, dict(zip(names, arrays, strict=True)))[0]

    return run, info


def peers(
    model: torch.nn.Module,
    example: tuple[torch.Tensor, ...],
    axes: dict[int, dict[int, str]],
    threads: int,
) -> tuple[dict[str, Callable], dict[str, Cell]]:
    """ONNX Runtime and OpenVINO on one ONNX export; a missing package or a failure is that
    system's ``{"error": ...}``."""
    runners: dict[str, Callable] = {}
    infos: dict[str, Cell] = {}
    try:
        t0 = time.perf_counter()
        path, names = export_onnx(model, example, axes)
        export_s = time.perf_counter() - t0
    except Exception as e:
        log(f"ONNX export failed: {short_error(e)}")
        err = {"error": f"ONNX export failed: {short_error(e)}"}
        return runners, {"ONNX Runtime": dict(err), "OpenVINO": dict(err)}
    makers: dict[str, tuple[str, Callable[[], tuple[Callable, Cell]]]] = {
        "ONNX Runtime": ("onnxruntime", lambda: ort_runner(path, names, threads)),
        "OpenVINO": ("openvino", lambda: openvino_session(path, threads)),
    }
    for system, (package, make) in makers.items():
        try:
            __import__(package)
        except ImportError:
            infos[system] = {"error": f"not installed (pip install {package})"}
            continue
        t0 = time.perf_counter()
        try:
            runners[system], infos[system] = make()
            infos[system]["compile_s"] = time.perf_counter() - t0 + export_s
        except Exception as e:
            log(f"{system} failed: {short_error(e)}")
            infos[system] = {"error": short_error(e)}
    return runners, infos


# -- measuring ----------------------------------------------------------------------------------


def errors(out, ref: np.ndarray) -> Cell:
    out = np.asarray(out, dtype=np.float64)
    if out.shape != ref.shape:
        return {"error": f"output shape {list(out.shape)}, PyTorch {list(ref.shape)}"}
    diff = float(np.abs(out - ref).max())
    scale = float(np.abs(ref).max()) or 1.0
    return {"max_abs_err": diff, "max_rel_err": diff / scale}


def measure(
    runners: dict[str, Callable],
    torch_fn: Callable[[], torch.Tensor] | None,
    refs_by_system: dict[str, np.ndarray] | None,
    arrays: tuple[np.ndarray, ...],
    items: int,
    rounds: int,
    block: int,
    what: str,
) -> dict[str, Cell]:
    """Numerics vs PyTorch, then alternating timing blocks of the systems that ran."""
    ref = None
    if torch_fn is not None:
        with torch.no_grad():
            ref = torch_fn().numpy().astype(np.float64)
    cells: dict[str, Cell] = {}
    timed: dict[str, Callable] = {}
    for system, fn in runners.items():
        want = refs_by_system[system] if refs_by_system is not None else ref
        try:
            cells[system] = errors(fn(*arrays), want)
        except Exception as e:
            log(f"{what}: {system} failed: {short_error(e)}")
            cells[system] = {"error": short_error(e)}
            continue
        if "error" not in cells[system]:
            timed[system] = lambda fn=fn: fn(*arrays)
    if not timed:
        return cells
    log(f"{what}: timing {', '.join(timed)} ({rounds} rounds x {block} calls)")
    try:
        timing = time_blocks(timed, rounds=rounds, block=block, warmup=2)
    except Exception as e:
        log(f"{what}: timing failed: {short_error(e)}")
        for system in timed:
            cells[system]["error"] = f"timing failed: {short_error(e)}"
        return cells
    for system, t in timing.items():
        cells[system].update(t)
        cells[system]["per_item_ms"] = t["median_ms"] / items
    return cells


def bench_dynamic(
    name: str,
    kind: str,
    sizes: list[int],
    bound: int,
    threads: int,
    rounds: int,
    block: int,
) -> dict:
    """One model, one dynamic compile per system, timed at each size (a batch for ``vision``,
    a sequence length for ``text``)."""
    log(f"{name}: building")
    if kind == "vision":
        model = build(name)[0]
        example = vision_inputs(name, 2, seed=100)  # batch 2: export specializes a 1
        dim = Dim("batch", min=1, max=bound)
        dynamic_shapes = ({0: dim},)
        axes = {0: {0: "batch"}, -1: {0: "batch"}}
    else:
        model, example = build_transformer(name, 16)
        dim = Dim("seq", min=1, max=bound)
        dynamic_shapes = tuple({1: dim} for _ in example)
        axes = {i: {1: "seq"} for i in range(len(example))}
        axes[-1] = {1: "seq"}
    record: dict = {"kind": kind, "bound": bound, "compile": {}, "sizes": {}}
    log(f"{name}: xgen_mlir compile with a dynamic {'batch' if kind == 'vision' else 'sequence'}")
    runners: dict[str, Callable] = {}
    xgen, record["compile"]["xgen_mlir"] = compile_xgen(model, example, dynamic_shapes)
    if xgen is not None:
        runners["xgen_mlir"] = xgen
        log(f"{name}: xgen_mlir compiled in {record['compile']['xgen_mlir']['compile_s']:.0f} s")
    log(f"{name}: ONNX export (dynamic axis), ONNX Runtime and OpenVINO sessions")
    peer_runners, peer_infos = peers(model, example, axes, threads)
    runners.update(peer_runners)
    record["compile"].update(peer_infos)
    for i, size in enumerate(sizes):
        if kind == "vision":
            inputs = vision_inputs(name, size, seed=i)
        else:
            inputs = text_inputs(example, vocab_size(model), size, seed=i)
        arrays = tuple(t.numpy() for t in inputs)
        cells = measure(
            runners,
            lambda inputs=inputs: model(*inputs),
            None,
            arrays,
            size,
            rounds,
            block,
            f"{name} @ {size}",
        )
        for system in SYSTEMS:  # a system that never built: its build error in every cell
            cells.setdefault(system, {"error": record["compile"][system].get("error", "?")})
        record["sizes"][str(size)] = cells
    return record


def bench_pruned(batch: int, threads: int, rounds: int, block: int) -> dict:
    """Pattern-pruned ResNet-18 by xgen_mlir against the dense model on every system."""
    from xgen_mlir import compress

    dense = vision.resnet18()
    log("pruned: pruning ResNet-18 (as bench_batched_pattern.py)")
    pruned = compress.prune(
        dense, (vision.random_input("resnet18"),), target="cpu", connectivity=PRUNE_CONNECTIVITY
    )
    (x,) = vision_inputs("resnet18", batch, seed=batch)
    arrays = (x.numpy(),)
    record: dict = {"batch": batch, "connectivity": PRUNE_CONNECTIVITY, "compile": {}}
    runners: dict[str, Callable] = {}
    for label, model in (("xgen_mlir pruned", pruned), ("xgen_mlir dense", dense)):
        log(f"pruned: compiling {label} at batch {batch}")
        fn, record["compile"][label] = compile_xgen(model, (x,), None)
        if fn is not None:
            runners[label] = fn
    log("pruned: ONNX export of the dense model, ONNX Runtime and OpenVINO")
    peer_runners, peer_infos = peers(dense, (x,), {}, threads)
    for system, fn in peer_runners.items():
        runners[f"{system} dense"] = fn
    for system, info in peer_infos.items():
        record["compile"][f"{system} dense"] = info
    with torch.no_grad():
        ref_pruned = pruned(x).numpy().astype(np.float64)
        ref_dense = dense(x).numpy().astype(np.float64)
    refs = {k: (ref_pruned if "pruned" in k else ref_dense) for k in runners}
    cells = measure(runners, None, refs, arrays, batch, rounds, block, f"pruned @ {batch}")
    for label, info in record["compile"].items():
        cells.setdefault(label, {"error": info.get("error", "?")})
    rewrites = record["compile"]["xgen_mlir pruned"].get("rewrites") or {}
    record["pattern_kernels"] = rewrites.get("xgen-lower-fkw-kernels", {})
    ours = cells.get("xgen_mlir pruned", {}).get("median_ms")
    if ours:
        record["speedup"] = {
            k: c["median_ms"] / ours for k, c in cells.items() if "dense" in k and "median_ms" in c
        }
    record["systems"] = cells
    return record


# -- tables -------------------------------------------------------------------------------------


def cell_text(c: Cell, per: bool = True) -> str:
    if "median_ms" in c:
        return f"{c['median_ms']:.2f} ({c['per_item_ms']:.3f})" if per else f"{c['median_ms']:.2f}"
    return str(c.get("error", "n/a"))[:70].replace("|", "/")


def err_text(c: Cell) -> str:
    return f"{c['max_rel_err']:.1e}" if "max_rel_err" in c else "-"


def ratio_text(c: Cell, ours: Cell) -> str:
    if "median_ms" in c and "median_ms" in ours:
        return f"{c['median_ms'] / ours['median_ms']:.2f}x"
    return "-"


def print_dynamic(title: str, size_name: str, item_name: str, records: dict[str, dict]) -> None:
    print(f"\n### {title}\n")
    print(
        f"median ms per call (per {item_name}); speedup = peer ms / xgen_mlir ms; "
        "rel err = max |out - PyTorch| / max |PyTorch|\n"
    )
    head = [
        "model",
        size_name,
        *(f"{s} ms" for s in SYSTEMS),
        "xgen vs ORT",
        "xgen vs OV",
        *(f"rel err {s}" for s in SYSTEMS),
    ]
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join("---" for _ in head) + "|")
    for name, rec in records.items():
        for size, cells in rec["sizes"].items():
            ours = cells["xgen_mlir"]
            row = [
                name,
                size,
                *(cell_text(cells[s]) for s in SYSTEMS),
                ratio_text(cells["ONNX Runtime"], ours),
                ratio_text(cells["OpenVINO"], ours),
                *(err_text(cells[s]) for s in SYSTEMS),
            ]
            print("| " + " | ".join(row) + " |")
    for name, rec in records.items():
        c = rec["compile"].get("xgen_mlir", {})
        if "compile_s" in c and "error" not in c:
            print(
                f"\n{name}: one xgen_mlir compile, {c['compile_s']:.0f} s, inputs "
                f"{c['input_shapes']} (None = dynamic, max {rec['bound']}), "
                f"{c['dispatches']} dispatches, fallback: {c['fallback'] or 'none'}"
            )
            for w in c.get("warnings", [])[:5]:
                print(f"  warning: {w[:200]}")
            for step, counts in (c.get("rewrites") or {}).items():
                for reason, n in counts.items():
                    if "dynamic" in str(reason):
                        print(f"  {step}: {reason} ({n})")


def print_pruned(rec: dict) -> None:
    print(f"\n### Pattern-pruned ResNet-18, batch {rec['batch']}\n")
    print("median ms per call (per image); speedup = system ms / xgen_mlir pruned ms\n")
    print("| system | ms | speedup of xgen_mlir pruned | rel err |")
    print("|---|---|---|---|")
    ours = rec["systems"].get("xgen_mlir pruned", {})
    for k, c in rec["systems"].items():
        print(f"| {k} | {cell_text(c)} | {ratio_text(c, ours)} | {err_text(c)} |")
    print(f"\npattern kernels: {rec.get('pattern_kernels') or 'none fired'}")


# -- main ---------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", nargs="*", default=None, choices=VISION)
    p.add_argument(
        "--transformers", nargs="*", default=None, choices=TRANSFORMERS + TINY_TRANSFORMERS
    )
    p.add_argument("--batches", type=int, nargs="+", default=None)
    p.add_argument("--seqs", type=int, nargs="+", default=None)
    p.add_argument("--max-batch", type=int, default=16, help="the dynamic batch's bound")
    p.add_argument("--max-seq", type=int, default=384, help="the dynamic sequence's bound")
    p.add_argument("--threads", type=int, default=2, help="ONNX Runtime / OpenVINO threads")
    p.add_argument("--rounds", type=int, default=None, help="alternating timing rounds (4)")
    p.add_argument("--block", type=int, default=None, help="calls per system per round (5)")
    p.add_argument("--pruned-batch", type=int, default=8)
    p.add_argument("--skip-pruned", action="store_true")
    p.add_argument(
        "--quick",
        action="store_true",
        help="smoke test: mobilenet_v2 at batch 1 and 4, a tiny GPT-2 at seq 32, 2 rounds "
        "x 1 call (explicit options still win)",
    )
    p.add_argument("--out", default=None, help="JSON (default benchmarks/results/shapes.json)")
    args = p.parse_args(argv)
    quick = args.quick
    models = args.models if args.models is not None else (["mobilenet_v2"] if quick else VISION)
    texts = (
        args.transformers
        if args.transformers is not None
        else (["gpt2_tiny"] if quick else TRANSFORMERS)
    )
    batches = args.batches or ([1, 4] if quick else [1, 4, 16])
    seqs = args.seqs or ([32] if quick else [32, 128, 384])
    rounds = args.rounds or (2 if quick else 4)
    block = args.block or (1 if quick else 5)
    if max(batches) > args.max_batch or max(seqs) > args.max_seq:
        p.error("a timed batch / sequence is above --max-batch / --max-seq")
    torch.set_num_threads(args.threads)

    results: dict = {"vision": {}, "transformers": {}, "pruned": None}
    for name in models:
        results["vision"][name] = bench_dynamic(
            name, "vision", batches, args.max_batch, args.threads, rounds, block
        )
    for name in texts:
        bound = min(args.max_seq, 128) if name in TINY_TRANSFORMERS else args.max_seq
        results["transformers"][name] = bench_dynamic(
            name, "text", seqs, bound, args.threads, rounds, block
        )
    if not args.skip_pruned:
        results["pruned"] = bench_pruned(args.pruned_batch, args.threads, rounds, block)

    print(f"\nhost: {summary(args.threads)}")
    print(
        f"xgen_mlir: IREE CPU task system (host cores); ONNX Runtime / OpenVINO f32: "
        f"{args.threads} threads; {rounds} rounds x {block} calls per system and size"
    )
    if results["vision"]:
        print_dynamic(
            f"Vision, one compile with a dynamic batch (max {args.max_batch})",
            "batch",
            "image",
            results["vision"],
        )
    if results["transformers"]:
        bounds = sorted({r["bound"] for r in results["transformers"].values()})
        print_dynamic(
            "Transformers, one compile with a dynamic sequence length "
            f"(max {' / '.join(map(str, bounds))})",
            "seq",
            "token",
            results["transformers"],
        )
    if results["pruned"]:
        print_pruned(results["pruned"])

    out = Path(args.out) if args.out else Path(__file__).parent / "results" / "shapes.json"
    meta = {
        "date": dt.datetime.now().isoformat(timespec="seconds"),
        "hostname": platform.node(),
        "torch": torch.__version__,
        "args": vars(args),
        "resolved": {
            "models": models,
            "transformers": texts,
            "batches": batches,
            "seqs": seqs,
            "rounds": rounds,
            "block": block,
        },
        "relative_error": "max |out - PyTorch eager fp32| / max |PyTorch eager fp32|",
    }
    write_results(out, {"meta": meta, "results": results}, args.threads)
    return 0


if __name__ == "__main__":
    sys.exit(main())
