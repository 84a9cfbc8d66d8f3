"""int8 ONNX models: xgen_mlir against ONNX Runtime on the same dynamically quantized model.

A zoo transformer (MiniLM by default, BERT-base with ``--models bert_base``) is exported to
ONNX (opset 17, static shapes) and quantized with ONNX Runtime's own ``quantize_dynamic``
(int8 weights per tensor, uint8 activations quantized at run time: DynamicQuantizeLinear +
MatMulInteger). In one process: xgen_mlir and ONNX Runtime on the fp32 file and on the int8
file. Errors: each system against PyTorch fp32, xgen_mlir int8 against ONNX Runtime int8 (same
model), and ONNX Runtime int8 against itself with its graph optimizations off (the control: how
far last-bit differences carry through dynamic quantization). The host record also gets IREE's
1024^3 matmul rate in f32 and in i8 x i8 -> i32 (``--iree-opt-data-tiling``, host CPU): the
ceiling of the int8 route through IREE on this CPU. Times: alternating blocks
(``harness.time_blocks``). A failing system is that cell's text; the run goes on.

    .venv/bin/python benchmarks/bench_int8_onnx.py
    .venv/bin/python benchmarks/bench_int8_onnx.py --models minilm bert_base --rounds 3
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parent))
import xgen_mlir
from bench_models import build, log
from bench_shapes import errors, export_onnx, ort_runner, short_error
from harness import cell_text, time_into_cells, write_results
from host import describe, summary

MODELS = ["minilm", "bert_base"]
SYSTEMS = [
    "xgen_mlir fp32",
    "ORT fp32",
    "xgen_mlir int8",
    "xgen_mlir int8 fusion=false",
    "ORT int8",
]
Cell = dict[str, object]


def iree_matmul_rates(n: int = 1024, calls: int = 10) -> dict[str, float]:
    """IREE's n^3 matmul (both operands arguments, data tiling on, host CPU), GOP/s."""
    import iree.compiler as ic
    import iree.runtime as rt

    rng = np.random.default_rng(0)
    out: dict[str, float] = {}
    for name, (t_in, t_acc, zero) in {
        "float32": ("f32", "f32", "0.0"),
        "int8 (i8 x i8 -> i32)": ("i8", "i32", "0"),
    }.items():
        a_t, c_t = f"tensor<{n}x{n}x{t_in}>", f"tensor<{n}x{n}x{t_acc}>"
        src = f"""func.func @main(%a: {a_t}, %b: {a_t}) -> {c_t} {{
  %z = arith.constant {zero} : {t_acc}
  %e = tensor.empty() : {c_t}
  %f = linalg.fill ins(%z : {t_acc}) outs(%e : {c_t}) -> {c_t}
  %r = linalg.matmul ins(%a, %b : {a_t}, {a_t}) outs(%f : {c_t}) -> {c_t}
  return %r : {c_t}
}}"""
        vmfb = ic.compile_str(
            src,
            target_backends=["llvm-cpu"],
            extra_args=["--iree-llvmcpu-target-cpu=host", "--iree-opt-data-tiling"],
        )
        ctx = rt.SystemContext(config=rt.Config("local-task"))
        ctx.add_vm_module(rt.VmModule.copy_buffer(ctx.instance, vmfb))
        fn = ctx.modules.module["main"]
        if t_in == "f32":
            args = [rng.standard_normal((n, n), np.float32) for _ in range(2)]
        else:
            args = [rng.integers(-128, 128, (n, n), dtype=np.int8) for _ in range(2)]
        np.asarray(fn(*args))
        times = []
        for _ in range(calls):
            t0 = time.perf_counter()
            np.asarray(fn(*args))
            times.append(time.perf_counter() - t0)
        out[name] = round(2 * n**3 / float(np.median(times)) / 1e9, 1)
    return out


def quantize(path: Path) -> Path:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    out = Path(tempfile.mkdtemp(prefix="bench-int8-")) / "model_int8.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        quantize_dynamic(str(path), str(out), weight_type=QuantType.QInt8)
    return out


def xgen_runner(path: Path, **target_options: str) -> tuple[Callable, Cell]:
    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = xgen_mlir.compile(path, target_options=target_options)
    info: Cell = {
        "compile_s": time.perf_counter() - t0,
        "warnings": sorted({str(w.message)[:200] for w in caught})[:5],
    }

    def run(*arrays: np.ndarray):
        out = m(*arrays)
        return out[0] if isinstance(out, tuple) else out

    return run, info


def integer_contractions(path: Path) -> dict[str, int]:
    """Contractions of the imported int8 model by kind: integer ones vs f32 ones."""
    from xgen_mlir.frontend.onnx_import import import_onnx

    text = str(import_onnx(path)[0])
    return {
        "quantized_matmul": text.count("linalg.quantized_matmul")
        + text.count("linalg.quantized_batch_matmul"),
        "f32_matmul": sum(
            1
            for line in text.splitlines()
            if "linalg.matmul" in line or "linalg.batch_matmul" in line
            if "xf32>" in line
        ),
    }


def ort_unoptimized(path: Path, names: list[str], arrays: tuple[np.ndarray, ...]) -> np.ndarray:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    return np.asarray(sess.run(None, dict(zip(names, arrays, strict=True)))[0], np.float64)


def bench_model(name: str, threads: int, rounds: int, block: int) -> dict[str, Cell]:
    model, example = build(name)
    model.eval()
    with torch.no_grad():
        ref_out = model(*example)
    ref = (ref_out if isinstance(ref_out, torch.Tensor) else ref_out[0]).numpy().astype(np.float64)
    arrays = tuple(x.numpy() for x in example)
    path, names = export_onnx(model, example, {})
    log(f"{name}: quantize_dynamic")
    qpath = quantize(path)
    makers: dict[str, Callable[[], tuple[Callable, Cell]]] = {
        "xgen_mlir fp32": lambda: xgen_runner(path),
        "ORT fp32": lambda: ort_runner(path, names, threads),
        "xgen_mlir int8": lambda: xgen_runner(qpath),
        # IREE's own dispatches and data tiling: xgen's data-tiling hints were measured on
        # f32 and leave M=128 GEMMs plain, which for i8 operands misses the i8 mmt4d kernels
        "xgen_mlir int8 fusion=false": lambda: xgen_runner(qpath, fusion="false"),
        "ORT int8": lambda: ort_runner(qpath, names, threads),
    }
    runners: dict[str, Callable] = {}
    cells: dict[str, Cell] = {}
    outs: dict[str, np.ndarray] = {}
    for system, make in makers.items():
        log(f"{name}: building {system}")
        try:
            runners[system], cells[system] = make()
            outs[system] = np.asarray(runners[system](*arrays), dtype=np.float64)
            cells[system].update(errors(outs[system], ref))
        except Exception as e:
            log(f"{name}: {system} failed: {short_error(e)}")
            cells[system] = {"error": short_error(e)}
            runners.pop(system, None)
    if "xgen_mlir int8" in outs and "ORT int8" in outs:
        vs = errors(outs["xgen_mlir int8"], outs["ORT int8"])
        a, b = outs["xgen_mlir int8"], outs["ORT int8"]
        cells["xgen_mlir int8"]["vs_ort_int8_max_rel_err"] = vs.get("max_rel_err")
        cells["xgen_mlir int8"]["vs_ort_int8_rel_l2"] = float(
            np.linalg.norm(a - b) / (np.linalg.norm(b) or 1.0)
        )
        cells["xgen_mlir int8"]["contractions"] = integer_contractions(qpath)
        # the control: ONNX Runtime against itself with its graph optimizations (fused
        # kernels) off; dynamic quantization amplifies last-bit differences upstream of it
        plain = ort_unoptimized(qpath, names, arrays)
        cells["ORT int8"]["vs_unoptimized_rel_l2"] = float(
            np.linalg.norm(b - plain) / (np.linalg.norm(plain) or 1.0)
        )
        cells["xgen_mlir int8"]["vs_ort_int8_unoptimized_rel_l2"] = float(
            np.linalg.norm(a - plain) / (np.linalg.norm(plain) or 1.0)
        )
    time_into_cells(cells, runners, arrays, rounds, block, threads, lambda m: log(f"{name}: {m}"))
    return cells


def print_table(results: dict[str, dict[str, Cell]]) -> None:
    print("\nmedian ms (max relative error vs PyTorch fp32)")
    print(
        "| model | " + " | ".join(SYSTEMS) + " | xgen int8 vs ORT int8 (max rel, rel L2) "
        "| ORT int8 vs ORT int8 unoptimized (rel L2) |"
    )
    print("|---" * (len(SYSTEMS) + 3) + "|")
    for name, cells in results.items():
        row = [cell_text(cells.get(s, {"error": "not run"})) for s in SYSTEMS]
        q = cells.get("xgen_mlir int8", {})
        vs, l2 = q.get("vs_ort_int8_max_rel_err"), q.get("vs_ort_int8_rel_l2")
        row.append(
            f"{vs:.1e}, {l2:.1e}" if isinstance(vs, float) and isinstance(l2, float) else "-"
        )
        ctl = cells.get("ORT int8", {}).get("vs_unoptimized_rel_l2")
        row.append(f"{ctl:.1e}" if isinstance(ctl, float) else "-")
        print(f"| {name} | " + " | ".join(row) + " |")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", nargs="+", default=["minilm"], choices=MODELS)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--block", type=int, default=5)
    p.add_argument("--out", default=str(Path(__file__).parent / "results" / "int8_onnx.json"))
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    log(summary(args.threads))
    describe(args.threads)  # the host record (matmul rates) before the models load the CPU
    log("IREE 1024^3 matmul rates (f32, i8)")
    iree_rates = iree_matmul_rates()
    log(f"IREE 1024^3 GOP/s: {iree_rates}")
    results: dict[str, dict[str, Cell]] = {}
    for name in args.models:
        try:
            results[name] = bench_model(name, args.threads, args.rounds, args.block)
        except Exception as e:  # a model that cannot even be built or exported
            log(f"{name} failed: {short_error(e)}")
            results[name] = {s: {"error": short_error(e)} for s in SYSTEMS}
        print_table(results)
        write_results(
            Path(args.out),
            {
                "what": "quantize_dynamic'd transformers: xgen_mlir vs ONNX Runtime, int8 and fp32",
                "date": dt.date.today().isoformat(),
                "command": "python benchmarks/bench_int8_onnx.py " + " ".join(argv or sys.argv[1:]),
                "note": "shared host: other sessions' jobs ran at the same time",
                "threads": args.threads,
                "iree_matmul_1024_gops": iree_rates,
                "results": results,
            },
            threads=args.threads,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
