"""oneDNN as an offload backend: its plugin, built here, and the import names it resolves.

The plugin (``onednn_plugin.cc``) is compiled with the host's C++ compiler against the
system's oneDNN (Debian's ``libdnnl-dev``) into the kernel cache, once per source and
compiler, like the generated C kernels. oneDNN picks its instruction set when it runs (JIT:
AVX-512, AVX512-BF16/VNNI, AMX where the CPU has them), so one plugin serves every x86 host.

An import name is the whole operation: ``xgen_dnnl_conv_<compute>_<post>_<bias>_`` then
N, IH, IW, IC, OH, OW, OC, KH, KW, SH, SW, PT, PL, PB, PR, DH, DW, G (NHWC input and output,
HWIO weights: a ``linalg.conv_2d_nhwc_hwcf``), or ``xgen_dnnl_matmul_<compute>_<post>_<bias>_``
M, K, N. ``compute`` is f32 or bf16 (operands rounded to bf16, f32 accumulation and output),
or s8: an integer contraction as linalg's quantized ops are (int8 source and weights, int32
output, the source's zero point after the sizes; no bias, ``nb``). Last, ``p`` and the number
of parts: the operation's output rows split among that many workgroups, each running its
share as a single-threaded primitive on the IREE worker that runs it (so IREE's workers are
the only threads; docs/byoc.md, Threads).
"""

from __future__ import annotations

import ctypes
import functools
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..codegen.toolchain import cached_build
from ..errors import BackendCompileError

SOURCE = Path(__file__).with_name("onednn_plugin.cc")
PREFIX = "xgen_dnnl_"
HEADER = Path("/usr/include/oneapi/dnnl/dnnl.hpp")
CXX_FLAGS = ["-O2", "-std=c++17", "-shared", "-fPIC", "-fvisibility=hidden"]


@dataclass(frozen=True)
class Backend:
    """A kernel library reached through an executable plugin."""

    name: str
    prefix: str  # of the import names its plugin resolves
    # what the plugin loads from the system where it runs (a bundle carries the plugin, not
    # this library, and names it)
    runtime_library: str = ""
    cxx: str = "g++"

    def unavailable(self) -> str | None:
        """What the plugin's build lacks here, as "the X, which ..." (None: nothing)."""
        if shutil.which(self.cxx) is None:
            return f"the C++ compiler '{self.cxx}', not on PATH (apt-get install g++)"
        if not HEADER.exists():
            return f"oneDNN's headers ({HEADER}), not installed (apt-get install libdnnl-dev)"
        return None

    def plugin(self) -> Path:
        """The plugin's shared library, built on first use and cached."""
        why = self.unavailable()
        if why:
            raise BackendCompileError(f"the {self.name} offload backend needs {why}")
        command = [self.cxx, *CXX_FLAGS, "{src}", "-o", "{out}", "-ldnnl"]
        return cached_build(
            f"libxgen_{self.name}", ".so", ".cc", SOURCE.read_text(), command, "plugin"
        )

    def can_build(self, symbol: str) -> bool:
        """Whether the plugin makes a primitive for import ``symbol`` on this host (asked
        through the plugin itself, so the compiler never offloads what the runtime refuses).
        The plugin refuses an s8 primitive on a CPU without VNNI: there oneDNN's u8 x s8
        kernels use ``vpmaddubsw``, which saturates pairs of products at int16, and their sums
        are wrong for large activations (seen on an AVX2-only AMD EPYC: a static int8 CNN off
        IREE's exact integer output). The check is in the plugin, so a module compiled on a
        CPU with VNNI also fails to load on one without, rather than compute wrong numbers."""
        return bool(_library(str(self.plugin())).xgen_dnnl_can_build_quietly(symbol.encode()))


@functools.cache
def _library(path: str) -> ctypes.CDLL:
    lib = ctypes.CDLL(path)
    for name in ("xgen_dnnl_can_build", "xgen_dnnl_can_build_quietly"):
        getattr(lib, name).argtypes = [ctypes.c_char_p]
        getattr(lib, name).restype = ctypes.c_int
    return lib


ONEDNN = Backend(
    "onednn", PREFIX, "libdnnl.so.2, oneDNN's runtime (Debian/Ubuntu: apt-get install libdnnl2)"
)
BACKENDS = {ONEDNN.name: ONEDNN}


def backend_named(name: str) -> Backend:
    try:
        return BACKENDS[name]
    except KeyError:
        raise ValueError(
            f"unknown offload backend '{name}' (known: {', '.join(sorted(BACKENDS))})"
        ) from None


# the zero point of a source quantized at run time (dynamic quantization): an operand of the
# call (a tensor<1xi32> after the weights), spelled "r" in the name
RUNTIME_ZERO_POINT = "r"


def conv_symbol(
    compute: str,
    post: str,
    n: int,
    ih: int,
    iw: int,
    ic: int,
    oh: int,
    ow: int,
    oc: int,
    kernel: Sequence[int],
    strides: Sequence[int],
    pads: Sequence[int],  # top, left, bottom, right
    dilations: Sequence[int],
    groups: int = 1,
    zero_point: int | str | None = None,
    parts: int = 1,
) -> str:
    """``zero_point``: the source's, for ``compute="s8"`` (int8 in, int32 out, no bias), or
    ``RUNTIME_ZERO_POINT``. ``parts``: see ``conv_parts``."""
    fields = [n, ih, iw, ic, oh, ow, oc, *kernel, *strides, *pads, *dilations, groups]
    return _name("conv", compute, post, fields, zero_point, parts)


def matmul_symbol(
    compute: str,
    post: str,
    m: int,
    k: int,
    n: int,
    zero_point: int | str | None = None,
    parts: int = 1,
    columns: bool = False,
) -> str:
    """``parts``, ``columns``: see ``matmul_split``."""
    return _name("matmul", compute, post, [m, k, n], zero_point, parts, columns)


def conv_parts(n: int, oh: int, threads: int) -> int:
    """How many workgroups run a conv (each a single-threaded primitive on its share): one
    per thread, along the output rows at batch 1, else along the images; never more than
    there are."""
    return max(1, min(threads, oh if n == 1 else n))


def matmul_split(m: int, n: int, threads: int, compute: str = "f32") -> tuple[int, bool]:
    """How many workgroups run an [M,K] x [K,N] matmul computing in ``compute``, and whether
    along its columns (else its rows). Along the rows every part reads all the weights,
    along the columns all the source: the parts together read P*K*N + M*K elements or
    P*M*K + K*N, so the columns read less exactly when N > M (a transformer's Linear layers
    at small batch, whose weights stream from memory on every call). A column share stays a
    whole number of 16 columns (an AVX-512 register of f32); otherwise the rows, never more
    parts than rows. Only for f32: oneDNN's bf16 and s8 kernels ran slower on a column
    share than on a row share of the same GEMM (docs/byoc.md, "Rows or columns")."""
    if compute == "f32" and threads > 1 and n > m and n % (16 * threads) == 0:
        return threads, True
    return max(1, min(threads, m)), False


def _name(
    kind: str,
    compute: str,
    post: str,
    fields: list,
    zero_point: int | str | None,
    parts: int,
    columns: bool = False,
) -> str:
    """f32/bf16 ops have a bias (``b``); s8 ones none (``nb``) and the source's zero point
    after the sizes, a negative one spelled ``m128`` (the name stays a plain identifier), one
    given at run time ``r``; last the number of parts (workgroups) after ``p`` (along the
    output's rows) or ``c`` (a matmul's columns)."""
    if parts < 1:
        raise ValueError(f"{parts} parts: at least one")
    if (compute == "s8") != (zero_point is not None):
        raise ValueError(f"a zero point goes with compute type s8, not {compute}")
    text = "_".join(str(int(f)) for f in fields)
    split = f"{'c' if columns else 'p'}{parts}"
    if zero_point is None:
        return f"{PREFIX}{kind}_{compute}_{post}_b_{text}_{split}"
    if isinstance(zero_point, str):
        if zero_point != RUNTIME_ZERO_POINT:
            raise ValueError(f"zero point {zero_point!r}: an int or {RUNTIME_ZERO_POINT!r}")
        zp = zero_point
    else:
        zp = f"m{-zero_point}" if zero_point < 0 else str(zero_point)
    return f"{PREFIX}{kind}_{compute}_{post}_nb_{text}_{zp}_{split}"
