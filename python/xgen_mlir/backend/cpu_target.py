"""The CPU an llvm-cpu module is compiled for, as IREE resolves it from the flags.

``--iree-llvmcpu-target-cpu=host`` (or a CPU model plus ``--iree-llvmcpu-target-cpu-features``)
is resolved by LLVM inside ``iree-compile``; the resolved feature list is what the generated
code may use. Asking IREE itself (a tiny module compiled to its ``preprocessing`` phase, whose
``hal.executable.target`` names ``cpu`` and ``cpu_features``) keeps this exact for every way of
naming a CPU, with no table of ours. ``compile()`` records the result in the module (runtime
checks it at load: docs/precision.md) and checks a target option's ``needs`` against it.
"""

from __future__ import annotations

import functools
import re
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .._paths import iree_tool
from ..errors import BackendCompileError

# Flags that decide the llvm-cpu target machine.
_TARGET_FLAGS = (
    "--iree-llvmcpu-target-cpu=",
    "--iree-llvmcpu-target-cpu-features=",
    "--iree-llvmcpu-target-triple=",
)
_PROBE = """func.func @probe(%a: tensor<4xf32>) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
      iterator_types = ["parallel"]} ins(%a : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%x: f32, %y: f32):
    %z = arith.addf %x, %x : f32
    linalg.yield %z : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}
"""
_TARGET = re.compile(
    r'hal\.executable\.target<"llvm-cpu", "([^"]+)", \{cpu = "([^"]*)", cpu_features = "([^"]*)"'
)


@dataclass(frozen=True)
class CpuTarget:
    """What an llvm-cpu module's code may assume of the CPU."""

    format: str  # IREE's executable format, e.g. embedded-elf-x86_64
    cpu: str  # LLVM CPU name ('host' resolved: znver4, sapphirerapids, ...; '' generic)
    features: tuple[str, ...]  # LLVM features enabled (the '+' ones, last mention wins)


def target_flags(flags: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """The flags among ``flags`` that decide the llvm-cpu target machine (last one wins)."""
    return tuple(f for f in flags if f.startswith(_TARGET_FLAGS))


def enabled_features(text: str) -> tuple[str, ...]:
    """``+a,+b,-a`` -> (b,): LLVM's rule, a later mention overrides an earlier one."""
    state: dict[str, bool] = {}
    for item in filter(None, (t.strip() for t in text.split(","))):
        name = item.lstrip("+-")
        state.pop(name, None)
        state[name] = not item.startswith("-")
    return tuple(sorted(n for n, on in state.items() if on))


@functools.cache
def resolve_cpu_target(flags: tuple[str, ...]) -> CpuTarget:
    """The CPU IREE compiles for with these llvm-cpu flags (others are ignored)."""
    chosen = target_flags(flags)
    with tempfile.TemporaryDirectory(prefix="xgen-cpu-") as tmp:
        src = Path(tmp) / "probe.mlir"
        src.write_text(_PROBE)
        cmd = [
            iree_tool("iree-compile"),
            str(src),
            "--iree-hal-target-backends=llvm-cpu",
            *chosen,
            "--compile-to=preprocessing",
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    m = _TARGET.search(proc.stdout)
    if proc.returncode != 0 or m is None:
        raise BackendCompileError(
            f"IREE could not resolve the CPU target of the flags {list(chosen)}: "
            f"{(proc.stderr or proc.stdout).strip()[:500]}"
        )
    return CpuTarget(m.group(1), m.group(2), enabled_features(m.group(3)))
