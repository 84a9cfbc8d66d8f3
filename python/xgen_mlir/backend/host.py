"""What the compiler reads off the machine it targets when that machine is the host.

A ``cpu`` compile targets the CPU it runs on (``--iree-llvmcpu-target-cpu=host``), so the
cache sizes IREE otherwise has to guess can be read from the OS instead.
"""

from __future__ import annotations

from pathlib import Path

_CACHES = Path("/sys/devices/system/cpu/cpu0/cache")


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


def matmul_tile_bytes(root: Path = _CACHES) -> str:
    """IREE's distribution-tile budget for data-tiled matmuls: half of a core's L2, so one
    workgroup's LHS, RHS and accumulator tiles stay in the L2 of the core that runs it.

    IREE's default (256 KiB) is a guess for an unknown CPU. On this 1 MiB-L2 EPYC it splits
    GPT-2's 128x50257x768 LM head into 6284 tiles of 32x32 that re-read the whole LHS each:
    54-61 ms, against 46-49 ms with a 512 KiB budget (1571 tiles of 128x32); GPT-2 end to end
    178 -> 166 ms, MiniLM 18.8 -> 16.9 ms, MobileBERT unchanged (its GEMMs fit either way).
    Empty (flag dropped, IREE's default kept) where the L2 size is unknown."""
    l2 = cache_bytes(2, root)
    return str(l2 // 2) if l2 else ""


_CPUINFO = Path("/proc/cpuinfo")


def has_avx512(cpuinfo: Path = _CPUINFO) -> bool:
    """Whether the host CPU has AVX-512 (16 f32 lanes per vector). xgen_mlir's own vector
    tiles for transposes, gemvs and matmuls (``fusion/*_tiling.py``) were chosen and measured
    for that width; elsewhere IREE keeps its own. False where the OS does not say."""
    try:
        text = cpuinfo.read_text()
    except OSError:
        return False
    for line in text.splitlines():
        if line.startswith("flags"):
            return "avx512f" in line.split(":", 1)[-1].split()
    return False
