"""Facts of the machine a module will run on, as data the passes take as options.

A pipeline's ``[target]`` table states them (``vector_bits``, ``l2_bytes``, ``threads``); the
value ``host`` means "read it off this machine", which is right only for targets that are
the compiling host (``cpu``). Passes never ask the machine they run on what it is: they get
these numbers through their options (``${vector_bits}`` in a step), so a tuner or a cross
compile can set them for another machine.
"""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass, fields
from pathlib import Path

_CACHES = Path("/sys/devices/system/cpu/cpu0/cache")
_CPUINFO = Path("/proc/cpuinfo")


@dataclass(frozen=True)
class TargetFacts:
    """What the passes may know of the target; 0 = unknown (a pass that needs it holds back)."""

    vector_bits: int = 0  # widest SIMD vector (512: AVX-512, 256: AVX2, 128: SSE/NEON)
    l2_bytes: int = 0  # one core's L2 data (or unified) cache
    threads: int = 0  # worker threads a module's dispatches spread over
    # 1: the target multiplies int8 exactly in dot-product instructions (EXACT_INT8_FLAGS, arm64's
    # dot product); 0: it has none (or it is unknown): integer contractions are then no faster
    exact_int8: int = 0
    # 1: the target has matrix tiles that multiply bf16 (AMX-BF16): a kernel library's bf16
    # GEMMs reach them, IREE's code does not (its bf16 matmuls use AVX512-BF16 dot products)
    bf16_tiles: int = 0

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))


def _size_bytes(text: str) -> int | None:
    text = text.strip().upper()
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
    digits = text.rstrip("KMG")
    return int(digits) * scale if digits.isdigit() else None


def cache_bytes(level: int, root: Path = _CACHES) -> int | None:
    """Size of one core's data (or unified) cache at ``level``, or None where the OS does not
    say (not Linux, a container without sysfs)."""
    for index in sorted(root.glob("index*")):
        try:
            if int((index / "level").read_text()) != level:
                continue
            if (index / "type").read_text().strip() == "Instruction":
                continue
            return _size_bytes((index / "size").read_text())
        except (OSError, ValueError):
            continue
    return None


def cpu_flags(cpuinfo: Path = _CPUINFO) -> set[str]:
    """The ISA flags /proc/cpuinfo lists for the first CPU (empty where the OS does not say)."""
    try:
        text = cpuinfo.read_text()
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith(("flags", "Features")):
            return set(line.split(":", 1)[-1].split())
    return set()


# The ISA features that decide which kernels a CPU runs fast (what a results file or a tuning
# record names of a host); /proc/cpuinfo's other flags do not tell two hosts apart for speed.
ISA_OF_INTEREST = (
    "sse4_2",
    "avx",
    "avx2",
    "fma",
    "avx512f",
    "avx512bw",
    "avx512vl",
    "avx512_vnni",
    "avx512_bf16",
    "avx512_fp16",
    "avx_vnni",
    "amx_tile",
    "amx_bf16",
    "amx_int8",
    "asimd",
    "asimddp",
    "sve",
    "bf16",
    "i8mm",
)


#: cpuinfo flags of a native bf16 GEMM (without one, bf16 is emulated at a few GFLOP/s).
NATIVE_BF16_FLAGS = ("avx512_bf16", "amx_bf16", "bf16")
#: cpuinfo flags of an exact int8 dot product. Without them x86 int8 kernels (oneDNN's, ONNX
#: Runtime's) use vpmaddubsw, which saturates pairs of u8 x s8 products at int16.
EXACT_INT8_FLAGS = ("avx512_vnni", "avx_vnni", "amx_int8")
#: cpuinfo flags of matrix tiles that multiply bf16 (Intel AMX).
BF16_TILE_FLAGS = ("amx_bf16",)


def has_any(flags: tuple[str, ...], cpuinfo: Path = _CPUINFO) -> bool:
    """Whether this CPU has one of ``flags`` (cpuinfo names)."""
    return bool(set(flags) & cpu_flags(cpuinfo))


def isa_flags(cpuinfo: Path = _CPUINFO) -> list[str]:
    """The features of ``ISA_OF_INTEREST`` this CPU has."""
    flags = cpu_flags(cpuinfo)
    return [f for f in ISA_OF_INTEREST if f in flags]


def cpu_model(cpuinfo: Path = _CPUINFO) -> str:
    """The CPU's marketing name (``model name`` in /proc/cpuinfo), else platform's guess; on
    x86 with its family and model numbers, which tell generations apart where a VM's name
    does not (an "AMD EPYC" was a Zen 4 on one host of this project and a Zen 5 on another,
    and the tuning database keys records by this)."""
    name, numbers = None, {}
    try:
        for line in cpuinfo.read_text().splitlines():
            key, _, value = (part.strip() for part in line.partition(":"))
            if not key and name is not None:
                break  # the first processor's block is enough
            if name is None and key in ("model name", "Model", "Hardware"):
                name = value
            elif key in ("cpu family", "model") and key not in numbers:
                numbers[key] = value
    except OSError:
        pass
    if name is None:
        return platform.processor() or platform.machine()
    if {"cpu family", "model"} <= numbers.keys():
        return f"{name} (family {numbers['cpu family']}, model {numbers['model']})"
    return name


def vector_bits(flags: set[str]) -> int:
    if "avx512f" in flags:
        return 512
    if "avx2" in flags or "avx" in flags:
        return 256
    if flags & {"sse2", "asimd", "neon"}:
        return 128
    return 0


def host_threads() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


# IREE's task system hands a dispatch's workgroups to its workers in reservations of this
# many (IREE_TASK_DISPATCH_MAX_TILES_PER_SHARD_RESERVATION, runtime/src/iree/task/tuning.h)
# once there are at least this many per worker; below that, one at a time.
IREE_TILES_PER_RESERVATION = 8


def busy_share(workgroups: int, threads: int) -> float:
    """The share of ``threads`` x the dispatch's span that ``workgroups`` equal workgroups
    keep busy when IREE's workers take them in reservations (``IREE_TILES_PER_RESERVATION``),
    each worker taking the next as it finishes. 24 workgroups on 2 threads are 3
    reservations of 8: one worker runs 16, the other 8, so 0.75; 48 are 6, 1.0. Measured on
    DistilBERT's 768-wide Linear layers in the generated GEMM kernel (AMD Zen 3, 2 threads):
    24 workgroups busy 75% of the span, 48 workgroups 100% (4.61 -> 3.51 ms per layer)."""
    if threads <= 1 or workgroups <= 0:
        return 1.0
    per = 1 if workgroups < threads * IREE_TILES_PER_RESERVATION else IREE_TILES_PER_RESERVATION
    loads = [0] * threads
    for start in range(0, workgroups, per):
        loads[loads.index(min(loads))] += min(per, workgroups - start)
    return workgroups / (threads * max(loads))


def host_fact(name: str, cpuinfo: Path = _CPUINFO, caches: Path = _CACHES) -> int:
    """One fact read off the compiling machine (0 where it cannot be read)."""
    if name == "vector_bits":
        return vector_bits(cpu_flags(cpuinfo))
    if name == "l2_bytes":
        return cache_bytes(2, caches) or 0
    if name == "threads":
        return host_threads()
    if name == "exact_int8":
        return int(has_any(EXACT_INT8_FLAGS + ("asimddp",), cpuinfo))
    if name == "bf16_tiles":
        return int(has_any(BF16_TILE_FLAGS, cpuinfo))
    raise KeyError(name)


def matmul_tile_bytes(facts: TargetFacts) -> str:
    """IREE's distribution-tile budget for data-tiled matmuls: half of a core's L2, so one
    workgroup's LHS, RHS and accumulator tiles stay in the L2 of the core that runs it (IREE's
    default, 256 KiB, is a guess for an unknown CPU). Empty (flag dropped, IREE's default
    kept) where the L2 size is unknown."""
    return str(facts.l2_bytes // 2) if facts.l2_bytes else ""


#: The vector widths xgen_mlir's 16-bit multiply-add kernel is written for
#: (``codegen/int16_gemm.py``): AVX2 (``vpmaddwd`` on 256 bits) and AVX-512BW (512).
INT16_KERNEL_VECTOR_BITS = (256, 512)


def integer_contractions(facts: TargetFacts) -> str:
    """How an int8 model's integer contractions run (``xgen-integer-gemm-kernels`` and
    ``xgen-integer-in-float``'s mode). On a target without an exact int8 dot product, where
    IREE's integer kernels are slower than f32 and the libraries' u8 x s8 ones saturate: the
    Linear layers in xgen_mlir's exact 16-bit multiply-add kernel where the target has 256- or
    512-bit vectors ("kernel": ``vpmaddwd`` does twice an FMA's multiply-adds), the rest as f32
    contractions of the same integers ("float"). With one: only the integer convs that no
    kernel library takes in f32 ("convs": IREE has no fast integer conv on any host measured).
    """
    if facts.exact_int8:
        return "convs"
    return "kernel" if facts.vector_bits in INT16_KERNEL_VECTOR_BITS else "float"


def simd_lanes(vector_bits: int) -> int:
    """f32 lanes of one vector register of a CPU with ``vector_bits`` SIMD vectors (16 with
    AVX-512, 8 with AVX2; at least 4, the SSE/NEON width, where the width is unknown)."""
    return max(vector_bits // 32, 4)


def vector_registers(vector_bits: int) -> int:
    """Vector registers a generated kernel's register blocks may plan on: 32 with AVX-512,
    16 otherwise (AVX2 and SSE have 16; NEON's 32 are not counted on)."""
    return 32 if vector_bits >= 512 else 16


def gemm_tile(vector_bits: int) -> tuple[int, int, int]:
    """The dense GEMM kernel's register tile (``codegen/dense_gemm.py``) on a CPU with
    ``vector_bits`` SIMD vectors, as (rows, n_vectors, lanes): ``rows`` rows of the input,
    each with ``n_vectors`` vectors of ``lanes`` outputs. The accumulators fill the register
    file but for the weight vectors and one broadcast input (rows x 2 + 2 + 1 <= 16 with
    AVX2: 6 rows; 12 with AVX-512, where 14 would fit but 12 divides the usual token counts
    better). The tile is the generated kernel's; whether a layer runs it at all is measured
    (``xgen_mlir.tune``)."""
    lanes = simd_lanes(vector_bits)
    n_vectors = 2
    rows = (vector_registers(vector_bits) - n_vectors - 1) // n_vectors
    return min(rows, 12), n_vectors, lanes


def block_tile(vector_bits: int) -> tuple[int, int, int]:
    """The block-sparse GEMM kernel's register tile on a CPU with ``vector_bits`` SIMD vectors,
    as (rows, m_vectors, lanes): ``rows`` weight rows' accumulators, each ``m_vectors``
    vectors of ``lanes`` f32 tokens/pixels (``codegen/block_sparse.py``). Rows are the largest
    power of two whose accumulators leave the input vectors and two spare registers free (32
    vector registers with AVX-512, 16 otherwise): 8 at 512 bits, 4 at 256 and 128 bits.
    Block pruning defaults to blocks of ``rows`` x ``4 * lanes`` (``compress.blocks``), the
    co-design contract: a block's kept rows fill the tile, its kept columns stream through it.
    The kernel itself runs ``codegen.block_sparse.TOKEN_VECTORS`` vectors of tokens per tile,
    in passes that fit each block's kept rows (``BcsrSpec.pass_vectors``); ``m_vectors`` here
    only sizes ``rows``.
    """
    lanes = simd_lanes(vector_bits)
    registers = vector_registers(vector_bits)
    m_vectors = 2
    rows = 1
    while rows * 2 * m_vectors + m_vectors + 2 <= registers:
        rows *= 2
    return rows, m_vectors, lanes
