"""Compiling generated C kernels into objects IREE links into its dispatches.

The objects must be freestanding (no libc, no TLS, position independent): IREE's embedded ELF
loader links them into each dispatch library. Objects are cached by a hash of source + flags,
so recompiling a model reuses them.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import BackendCompileError

# -fvisibility=hidden: calls into the object must bind locally (IREE's embedded ELF loader does
# not process PLT relocations; a default-visibility symbol is called through the PLT on arm64).
FREESTANDING = [
    "-O3",
    "-ffreestanding",
    "-fPIC",
    "-fvisibility=hidden",
    "-fno-stack-protector",
    "-fno-math-errno",
    "-ffp-contract=fast",
    "-fno-tree-loop-distribute-patterns",
    "-nostdlib",
]


@dataclass(frozen=True)
class Toolchain:
    cc: str = "gcc"
    cflags: tuple[str, ...] = ("-march=native",)
    extra: tuple[str, ...] = field(default=())

    def available(self) -> bool:
        return shutil.which(self.cc) is not None


@dataclass
class ToolchainOptions:
    """The pass options of every pass that compiles generated C into IREE dispatches."""

    cc: str = "gcc"
    cflags: str = "-march=native"  # comma separated (pass options split on spaces)
    object_format: str = "embedded-elf-x86_64"  # IREE executable format the object links into

    def toolchain(self) -> Toolchain:
        return Toolchain(self.cc, tuple(f for f in self.cflags.split(",") if f))


@functools.cache
def _host_cpu() -> str:
    """This CPU's model and feature flags: ``-march=native`` objects are cached per CPU, so a
    cache shared between machines (a network home) never hands one an object built for
    instructions it lacks."""
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        import platform

        return platform.processor() or platform.machine()
    keep = ("model name", "flags", "Features", "isa", "CPU part")
    return "\n".join(sorted({ln for ln in lines if ln.split(":", 1)[0].strip() in keep}))


def cache_dir() -> Path:
    root = os.environ.get("XGEN_CACHE_DIR") or Path.home() / ".cache" / "xgen_mlir"
    path = Path(root) / "kernels"
    path.mkdir(parents=True, exist_ok=True)
    return path


def compile_object(source: str, toolchain: Toolchain, name: str) -> Path:
    """Compile ``source`` to a cached object file; the error names the compiler and kernel."""
    if not toolchain.available():
        raise BackendCompileError(
            f"pattern kernel {name} needs the C compiler '{toolchain.cc}', which is not on PATH "
            "(install it, e.g. `apt-get install gcc`, or compile without pattern codegen)"
        )
    flags = [*FREESTANDING, *toolchain.cflags, *toolchain.extra]
    host = _host_cpu() if any("=native" in f for f in flags) else ""
    key = hashlib.sha256("\0".join([toolchain.cc, *flags, host, source]).encode()).hexdigest()[:24]
    obj = cache_dir() / f"{name}-{key}.o"
    if obj.exists():
        return obj
    src = obj.with_suffix(".c")
    src.write_text(source)
    tmp = obj.with_suffix(f".{os.getpid()}.tmp.o")
    proc = subprocess.run(
        [toolchain.cc, *flags, "-c", str(src), "-o", str(tmp)], capture_output=True, text=True
    )
    if proc.returncode != 0:
        raise BackendCompileError(
            f"{toolchain.cc} failed on kernel {name} ({src}):\n{proc.stderr[-2000:]}"
        )
    tmp.replace(obj)
    return obj
