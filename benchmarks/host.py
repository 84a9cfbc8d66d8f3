"""What machine a benchmark ran on, measured when it runs: CPU model, ISA flags, matmul rates.

Every results file carries this (``harness.write_json`` adds it), and "achieved rate" columns
divide by the rate measured here, never by a number from another machine: the same two threads
reach about 205 GFLOP/s fp32 on one host kind and 432 on another.

Rates are torch's own GEMM (oneDNN/MKL) on ``threads`` threads, square ``n``-sized operands,
best of a few timed calls after a warm-up: the practical peak a library reaches here.
"""

from __future__ import annotations

import functools
import platform
import time

from xgen_mlir.target import (
    EXACT_INT8_FLAGS,
    ISA_OF_INTEREST,
    NATIVE_BF16_FLAGS,
    cpu_model,
    has_any,
    isa_flags,
)

__all__ = ["ISA_OF_INTEREST", "cpu_model", "describe", "fp32_rate", "isa_flags", "summary"]


def matmul_gflops(dtype: str, threads: int, n: int = 2048, calls: int = 5) -> float | None:
    """GFLOP/s of torch's n x n x n matmul in ``dtype`` on ``threads`` threads (None if torch
    cannot run that dtype here)."""
    import torch

    prev = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        if dtype == "int8":  # int8 x int8 -> int32 sums (oneDNN's VNNI/AMX kernels)
            a = torch.randint(-128, 128, (n, n), dtype=torch.int8)
            b = torch.randint(-128, 128, (n, n), dtype=torch.int8)
            mm = torch._int_mm
        else:
            dt = getattr(torch, dtype)
            a = torch.randn(n, n).to(dt)
            b = torch.randn(n, n).to(dt)
            mm = torch.mm
        mm(a, b)  # warm-up: packing buffers, thread pool, frequency
        best = float("inf")
        for _ in range(calls):
            t0 = time.perf_counter()
            mm(a, b)
            best = min(best, time.perf_counter() - t0)
        return round(2 * n**3 / best / 1e9, 1)
    except (RuntimeError, TypeError):
        return None
    finally:
        torch.set_num_threads(prev)


@functools.cache
def describe(threads: int) -> dict:
    """The host record every results file carries (measured once per process and thread count);
    the bf16 (int8) rate is None where the CPU has no native bf16 (int8 dot product) GEMM.
    The int8 rate is in GOP/s of int8 products summed in int32."""
    native = has_any(NATIVE_BF16_FLAGS)  # emulated (AVX2 only): minutes per call, meaningless
    int8 = has_any(EXACT_INT8_FLAGS)
    return {
        "cpu_model": cpu_model(),
        "isa_flags": isa_flags(),
        "machine": platform.machine(),
        "threads": threads,
        "matmul_gflops": {
            "float32": matmul_gflops("float32", threads),
            "bfloat16": matmul_gflops("bfloat16", threads) if native else None,
            "int8": matmul_gflops("int8", threads) if int8 else None,
        },
    }


def fp32_rate(threads: int) -> float:
    """This host's measured fp32 matmul rate (GFLOP/s) on ``threads`` threads."""
    return describe(threads)["matmul_gflops"]["float32"] or float("nan")


def summary(threads: int) -> str:
    d = describe(threads)
    rates = ", ".join(f"{k} {v} GFLOP/s" for k, v in d["matmul_gflops"].items() if v)
    return f"{d['cpu_model']} ({' '.join(d['isa_flags'])}); {threads} threads: {rates}"


if __name__ == "__main__":
    import json
    import sys

    print(json.dumps(describe(int(sys.argv[1]) if len(sys.argv) > 1 else 2), indent=2))
