"""Compiling generated C kernels into objects IREE links into its dispatches.

The objects must be freestanding (no libc, no TLS, position independent): IREE's embedded ELF
loader links them into each dispatch library. Objects are cached by a hash of source + flags,
so recompiling a model reuses them. The cache is a folder anyone may have written to (a crash,
a full disk, another tool): each object has a SHA-256 of its bytes beside it (``.o.sha256``),
and one that does not match is rebuilt, with a warning naming it, instead of reaching IREE's
linker. Objects are written to a temporary name and renamed; temporaries a killed writer left
are removed once they are an hour old.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import BackendCompileError, CacheError
from ..fileio import atomic_write_bytes, remove_stale_temporaries

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
def predefined_macros(toolchain: Toolchain) -> frozenset[str]:
    """The macros the C compiler defines with the target's flags (``__AVX512VNNI__``...):
    what a kernel may use is what the compiler will emit for the target, not what the
    compiling machine has. Empty where the compiler cannot be run."""
    command = [toolchain.cc, *toolchain.cflags, *toolchain.extra, "-dM", "-E", "-x", "c", "-"]
    try:
        done = subprocess.run(command, input="", capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return frozenset()
    if done.returncode != 0:
        return frozenset()
    return frozenset(ln.split()[1] for ln in done.stdout.splitlines() if ln.startswith("#define "))


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
    """The kernel cache (``$XGEN_CACHE_DIR/kernels``, default ``~/.cache/xgen_mlir/kernels``);
    a CacheError when it cannot be made or written."""
    root = os.environ.get("XGEN_CACHE_DIR") or Path.home() / ".cache" / "xgen_mlir"
    path = Path(root) / "kernels"
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise _cache_error(path, e) from None
    if not os.access(path, os.R_OK | os.W_OK | os.X_OK):
        raise _cache_error(path, PermissionError("not readable and writable"))
    _sweep(path)
    return path


def _cache_error(path: Path, e: OSError) -> CacheError:
    why = e.strerror or str(e)
    return CacheError(
        f"kernel cache {path} is not usable ({why}); set XGEN_CACHE_DIR to a writable folder"
    )


@functools.cache
def _sweep(path: Path) -> None:
    """Once per process and folder: drop temporaries killed writers left."""
    remove_stale_temporaries(path)


def _digest(data: bytes) -> bytes:
    return hashlib.sha256(data).hexdigest().encode()


def _valid(obj: Path) -> bool:
    """Whether the cached ``obj`` is there and matches its checksum. A mismatch (a truncated,
    emptied or overwritten object) is warned about; an entry without a checksum (a crash
    between the two renames, or an older cache) is rebuilt quietly."""
    checksum = obj.with_name(obj.name + ".sha256")
    try:
        if not obj.exists() or not checksum.exists():
            return False
        ok = _digest(obj.read_bytes()) == checksum.read_bytes().strip()
    except OSError as e:
        raise _cache_error(obj.parent, e) from None
    if not ok:
        warnings.warn(
            f"kernel cache entry {obj} does not match its checksum; rebuilding it", stacklevel=3
        )
    return ok


def compile_object(source: str, toolchain: Toolchain, name: str) -> Path:
    """Compile ``source`` to a cached object file; the error names the compiler and kernel."""
    if not toolchain.available():
        raise BackendCompileError(
            f"pattern kernel {name} needs the C compiler '{toolchain.cc}', which is not on PATH "
            "(install it, e.g. `apt-get install gcc`, or compile without pattern codegen)"
        )
    flags = [*FREESTANDING, *toolchain.cflags, *toolchain.extra]
    command = [toolchain.cc, *flags, "-c", "{src}", "-o", "{out}"]
    return cached_build(name, ".o", ".c", source, command, what="kernel")


def cached_build(
    name: str, suffix: str, src_suffix: str, source: str, command: list[str], what: str
) -> Path:
    """Run ``command`` ("{src}" and "{out}" stand for the paths) on ``source``, cached under a
    hash of the command (and this CPU, for ``=native`` flags) and the source; the output is
    checksummed and renamed into place as described above."""
    host = _host_cpu() if any("=native" in f for f in command) else ""
    key = hashlib.sha256("\0".join([*command, host, source]).encode()).hexdigest()[:24]
    out = cache_dir() / f"{name}-{key}{suffix}"
    if _valid(out):
        return out
    src = out.with_suffix(src_suffix)
    try:
        fd, tmp_name = tempfile.mkstemp(
            prefix=f"{out.stem}.", suffix=f".tmp{suffix}", dir=out.parent
        )
        os.close(fd)
    except OSError as e:
        raise _cache_error(out.parent, e) from None
    tmp = Path(tmp_name)
    try:
        atomic_write_bytes(src, source.encode())  # a concurrent compile never reads half of it
        proc = subprocess.run(
            [{"{src}": str(src), "{out}": str(tmp)}.get(a, a) for a in command],
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            raise BackendCompileError(
                f"{command[0]} failed on {what} {name} ({src}):\n{proc.stderr[-2000:]}"
            )
        with open(tmp, "rb") as f:
            data = f.read()
            os.fsync(f.fileno())
        # checksum first: a reader that finds the output finds its checksum
        atomic_write_bytes(out.with_name(out.name + ".sha256"), _digest(data) + b"\n")
        tmp.replace(out)
    except OSError as e:
        raise _cache_error(out.parent, e) from None
    finally:
        tmp.unlink(missing_ok=True)
    return out
