"""oneDNN as an offload backend: its plugin, built here, and the import names it resolves.

The plugin (``onednn_plugin.cc``) is compiled with the host's C++ compiler against an
installed oneDNN into the kernel cache, once per source, compiler and oneDNN, like the
generated C kernels. Which oneDNN: ``$XGEN_ONEDNN_ROOT`` if set, else pip's 3.x in this
Python's prefix (``onednn-cpu-gomp`` and ``onednn-devel-cpu-gomp``, the ``onednn`` extra: its
brgemm convs beat 2.x's JIT ones on AVX2 and AVX-512, docs/measurements.md), else the
system's (Debian's ``libdnnl-dev``, 2.x). oneDNN picks its instruction set when it runs (JIT:
AVX-512, AVX512-BF16/VNNI, AMX where the CPU has them), so one plugin serves every x86 host.

An import name is the whole operation: ``xgen_dnnl_conv_<compute>_<post>_<bias>_`` then
N, IH, IW, IC, OH, OW, OC, KH, KW, SH, SW, PT, PL, PB, PR, DH, DW, G (NHWC input and output,
HWIO weights: a ``linalg.conv_2d_nhwc_hwcf``), or ``xgen_dnnl_matmul_<compute>_<post>_<bias>_``
M, K, N. ``compute`` is f32 or bf16 (operands rounded to bf16, f32 accumulation and output;
``bf16t`` and three letters: the source, residual and output are bf16 tensors where ``b``),
or s8: an integer contraction as linalg's quantized ops are (int8 source and weights, int32
output, the source's zero point after the sizes; no bias, ``nb``), or s8f: the same integer
contraction dequantized in the primitive (f32 output: the int32 sums times a per-column
scale, an operand after the zero point, then the bias where ``b`` and the post-ops), or s8q:
requantized to int8 as well (the output's zero point after the source's, ``m128zm128``; its
scale folded into the scales); u8, u8f and u8q are those with a uint8 source (the same
sums: oneDNN's u8 x s8 kernels then need no compensation of an int8 source), and s8qu and
u8qu requantize to uint8 (the output's zero point then that of its uint8 bytes). Last, ``p``
and the number of parts: the operation's output rows split among that many workgroups, each
running its share as a single-threaded primitive on the IREE worker that runs it (so IREE's
workers are the only threads; docs/byoc.md, Threads).
"""

from __future__ import annotations

import ctypes
import functools
import os
import re
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..codegen.toolchain import cached_build
from ..errors import BackendCompileError

SOURCE = Path(__file__).with_name("onednn_plugin.cc")
PREFIX = "xgen_dnnl_"
CXX_FLAGS = ["-O2", "-std=c++17", "-shared", "-fPIC", "-fvisibility=hidden"]
# where oneDNN may be installed, in order of preference (an install prefix: include/, lib/)
ROOTS = (Path(sys.prefix), Path("/usr"))
ROOT_VARIABLE = "XGEN_ONEDNN_ROOT"
HEADER = Path("include/oneapi/dnnl/dnnl.hpp")  # under a root
PIP_PACKAGES = "onednn-cpu-gomp==2023.2.0 onednn-devel-cpu-gomp==2023.2.0"
INSTALL_HINT = f"pip install {PIP_PACKAGES}, or apt-get install libdnnl-dev"


@dataclass(frozen=True)
class Install:
    """An installed oneDNN: its prefix and version ("3.2.0")."""

    root: Path
    version: str

    @property
    def major(self) -> int:
        return int(self.version.split(".")[0])

    def flags(self) -> list[str]:
        """The compiler flags that build and link against it (a library outside the system's
        paths is found again at run time through the plugin's rpath, or beside the plugin)."""
        if self.root == Path("/usr"):
            return ["-ldnnl"]
        lib = self.root / "lib"
        return [f"-I{self.root / 'include'}", f"-L{lib}", "-ldnnl", f"-Wl,-rpath,$ORIGIN:{lib}"]

    def carried(self) -> list[Path]:
        """The shared libraries a bundle carries beside the plugin, which finds them there
        through its ``$ORIGIN`` rpath: pip's oneDNN (nothing a device's package manager
        installs); none for the system's, which a device installs as it was installed here."""
        lib = self.root / "lib" / f"libdnnl.so.{self.major}"
        return [] if self.root == Path("/usr") or not lib.is_file() else [lib]

    def runtime_library(self, carried: bool = False) -> str:
        """The library the plugin loads where it runs, and where it comes from (``carried``:
        beside the plugin, in a bundle: then what that library needs from the system)."""
        if carried:
            return (
                f"libdnnl.so.{self.major} (carried beside the plugin) needs the GNU OpenMP and "
                "C++ runtimes: libgomp.so.1, libstdc++.so.6"
            )
        if self.major >= 3:
            source = f"pip install {PIP_PACKAGES.split()[0]}; its lib/ on the library path"
        else:
            source = "Debian/Ubuntu: apt-get install libdnnl2"
        return f"libdnnl.so.{self.major}, oneDNN {self.major}'s runtime ({source})"


def _version(root: Path) -> str | None:
    """The version of the oneDNN headers under ``root`` (None: none there)."""
    try:
        text = (root / "include/oneapi/dnnl/dnnl_version.h").read_text()
    except OSError:
        return None
    parts = [
        re.search(rf"#define DNNL_VERSION_{p} (\d+)", text) for p in ("MAJOR", "MINOR", "PATCH")
    ]
    return ".".join(m.group(1) for m in parts if m) if all(parts) else None


def installation() -> Install | None:
    """The oneDNN the plugin builds against (None: none with headers is installed)."""
    return _installation(os.environ.get(ROOT_VARIABLE), ROOTS)


@functools.cache
def _installation(chosen: str | None, roots: tuple[Path, ...]) -> Install | None:
    for root in (Path(chosen),) if chosen else roots:
        version = _version(root)
        if (root / HEADER).exists() and version is not None:
            return Install(root, version)
    return None


@dataclass(frozen=True)
class Backend:
    """A kernel library reached through an executable plugin."""

    name: str
    prefix: str  # of the import names its plugin resolves
    cxx: str = "g++"

    def unavailable(self) -> str | None:
        """What the plugin's build lacks here, as "the X, which ..." (None: nothing)."""
        if shutil.which(self.cxx) is None:
            return f"the C++ compiler '{self.cxx}', not on PATH (apt-get install g++)"
        if installation() is None:
            chosen = os.environ.get(ROOT_VARIABLE)
            where = chosen or " or ".join(str(r) for r in ROOTS)
            return f"oneDNN's headers (under {where}), not installed ({INSTALL_HINT})"
        return None

    def runtime_library(self, carried: bool = False) -> str:
        """What the plugin loads from the system where it runs ("" if it cannot be built);
        ``carried``: what is left to the system once a bundle carries ``carried_libraries``."""
        found = installation()
        return found.runtime_library(carried=carried) if found else ""

    def carried_libraries(self) -> list[Path]:
        """The shared libraries a bundle copies beside the plugin (pip's oneDNN; not the
        system's)."""
        found = installation()
        return found.carried() if found else []

    def library(self) -> str:
        """The library and version the plugin is built against ("oneDNN 3.2.0"; "" if none):
        tuning records of an offload name it, and only the same library's are applied (a
        measurement of another version says nothing about this one's kernels)."""
        found = installation()
        return f"oneDNN {found.version}" if found else ""

    def plugin(self) -> Path:
        """The plugin's shared library, built on first use and cached."""
        why = self.unavailable()
        if why:
            raise BackendCompileError(f"the {self.name} offload backend needs {why}")
        found = installation()
        assert found is not None  # (unavailable() says so)
        command = [self.cxx, *CXX_FLAGS, "{src}", "-o", "{out}", *found.flags()]
        return cached_build(
            f"libxgen_{self.name}", ".so", ".cc", SOURCE.read_text(), command, "plugin"
        )

    def implementation(self, symbol: str) -> str:
        """The name of the implementation the plugin runs import ``symbol`` with on this host
        ("jit:avx2", "brgconv:avx2", ...; "" if it makes none)."""
        return str(_library(str(self.plugin())).xgen_dnnl_impl(symbol.encode()).decode())

    def other_families(self, symbol: str) -> list[str]:
        """The implementation families (``IMPL_FAMILIES``) worth measuring for import
        ``symbol`` besides the library's first choice: those the plugin makes it with, other
        than the first choice's own."""
        first = impl_family(self.implementation(symbol))
        return [f for f in IMPL_FAMILIES if f != first and self.can_build(with_impl(symbol, f))]

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
    lib.xgen_dnnl_impl.argtypes = [ctypes.c_char_p]
    lib.xgen_dnnl_impl.restype = ctypes.c_char_p
    return lib


def impl_family(name: str) -> str:
    """The family (``IMPL_FAMILIES``) of implementation ``name`` ("" if none)."""
    name = name.removeprefix("x64:")
    return next((f for f in IMPL_FAMILIES if name.startswith(f)), "")


ONEDNN = Backend("onednn", PREFIX)
BACKENDS = {ONEDNN.name: ONEDNN}


def backend_named(name: str) -> Backend:
    try:
        return BACKENDS[name]
    except KeyError:
        raise ValueError(
            f"unknown offload backend '{name}' (known: {', '.join(sorted(BACKENDS))})"
        ) from None


# oneDNN's implementation families a name may ask for (``_i<family>``): the plugin takes the
# first implementation whose name starts with it (jit: the older JIT kernels, jit:avx2,
# jit_1x1, jit_dw; br: the brgemm-based ones, brgconv, brdgmm_dw, brg matmul). Without one,
# oneDNN's own first choice. Which is fastest depends on the shape and the CPU: a tuner's
# question (tuning/choices.py measures each family that would change it).
IMPL_FAMILIES = ("jit", "br")


def with_impl(symbol: str, impl: str) -> str:
    """Import ``symbol`` (made without a family) asking for implementation family ``impl``:
    the family goes before the parts, as ``_name`` puts it."""
    head, _, parts = symbol.rpartition("_")
    return f"{head}_i{impl}_{parts}"


# the zero point of a source quantized at run time (dynamic quantization): an operand of the
# call (a tensor<1xi32> after the weights), spelled "r" in the name
RUNTIME_ZERO_POINT = "r"

# the integer compute types: an int8 (s8) or uint8 (u8) source, int8 weights, and int32 sums
# out (s8, u8), dequantized to f32 (s8f, u8f) or requantized to int8 (s8q, u8q) or to uint8
# (s8qu, u8qu)
INTEGER_COMPUTES = ("s8", "s8f", "s8q", "u8", "u8f", "u8q", "s8qu", "u8qu")


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
    impl: str = "",
    columns: bool = False,
    bias: bool | None = None,
    dst_zero_point: int | None = None,
) -> str:
    """``zero_point``: the source's, for ``compute="s8"`` (int8 in, int32 out, no bias),
    ``"s8f"`` (dequantized: f32 out) and ``"s8q"`` (requantized: int8 out, with
    ``dst_zero_point``), or ``RUNTIME_ZERO_POINT``. ``parts``, ``columns``: see
    ``conv_split``. ``impl``: see ``IMPL_FAMILIES``. ``bias``: whether an s8f or s8q op adds
    one."""
    fields = [n, ih, iw, ic, oh, ow, oc, *kernel, *strides, *pads, *dilations, groups]
    return _name(
        "conv", compute, post, fields, zero_point, parts, columns, impl, bias, dst_zero_point
    )


def matmul_symbol(
    compute: str,
    post: str,
    m: int,
    k: int,
    n: int,
    zero_point: int | str | None = None,
    parts: int = 1,
    columns: bool = False,
    impl: str = "",
    bias: bool | None = None,
    dst_zero_point: int | None = None,
) -> str:
    """``parts``, ``columns``: see ``matmul_split``. ``impl``: see ``IMPL_FAMILIES``.
    ``zero_point``, ``bias``, ``dst_zero_point``: see ``conv_symbol``."""
    return _name(
        "matmul", compute, post, [m, k, n], zero_point, parts, columns, impl, bias, dst_zero_point
    )


def compute_of(symbol: str) -> str:
    """An import name's compute type field (f32, bf16, s8, or bf16t and its tensor types)."""
    return symbol[len(PREFIX) :].split("_", 2)[1]


def with_bf16_tensors(symbol: str, source: bool, residual: bool, output: bool) -> str:
    """Bf16 import ``symbol`` with its source, residual and output passed as bf16 tensors
    where set (its type field ``bf16t`` and one letter each, ``b`` or ``f``), instead of the
    f32 ones it converts: the activations between two library operations stay bf16."""
    kind, compute, rest = symbol[len(PREFIX) :].split("_", 2)
    if compute != "bf16":
        raise ValueError(f"{symbol}: bf16 tensors go with compute type bf16, not {compute}")
    if not (source or residual or output):
        return symbol
    letters = "".join("b" if t else "f" for t in (source, residual, output))
    return f"{PREFIX}{kind}_bf16t{letters}_{rest}"


def with_uint8_tensors(symbol: str, source: bool, output: bool) -> str:
    """Integer import ``symbol`` reading its source as uint8 bytes (where ``source``: the
    int8 values plus 128, its zero point too) and requantizing to uint8 (where ``output``:
    s8q -> s8qu, the output's zero point plus 128): the same numbers, in the form VNNI's
    u8 x s8 dot product reads without compensating an int8 source."""
    kind, compute, rest = symbol[len(PREFIX) :].split("_", 2)
    if compute not in INTEGER_COMPUTES:
        raise ValueError(f"{symbol}: uint8 tensors go with an integer compute type")
    if source and (compute[0] == "u"):
        raise ValueError(f"{symbol}: its source is uint8 already")
    if output and not compute.endswith("q"):
        raise ValueError(f"{symbol}: only a requantized (s8q, u8q) output becomes uint8")
    fields = rest.split("_")
    at = len(fields) - 2  # (the zero points: before the parts, and an implementation family)
    if fields[at].startswith("i") and not fields[at][1:2].isdigit():
        at -= 1
    src, _, dst = fields[at].partition("z")
    if source:
        if src == RUNTIME_ZERO_POINT:
            raise ValueError(f"{symbol}: a zero point given at run time stays as it is")
        src = _integer_field(_parse_integer_field(src) + 128)
        compute = "u" + compute[1:]
    if output:
        dst = _integer_field(_parse_integer_field(dst) + 128)
        compute += "u"
    fields[at] = f"{src}z{dst}" if dst else src
    return f"{PREFIX}{kind}_{compute}_{'_'.join(fields)}"


def conv_parts(n: int, oh: int, threads: int) -> int:
    """How many workgroups run a conv (each a single-threaded primitive on its share): one
    per thread, along the output rows at batch 1, else along the images; never more than
    there are."""
    return max(1, min(threads, oh if n == 1 else n))


def matmul_split(
    m: int, n: int, threads: int, compute: str = "f32", direction: str = "count"
) -> tuple[int, bool]:
    """How many workgroups run an [M,K] x [K,N] matmul computing in ``compute``, and whether
    along its columns (else its rows). Along the rows every part reads all the weights,
    along the columns all the source: the parts together read P*K*N + M*K elements or
    P*M*K + K*N, so the columns read less exactly when N > M (a transformer's Linear layers
    at small batch, whose weights stream from memory on every call).

    ``direction`` "count": that count, for f32 only, with a column share a whole number of 16
    columns (an AVX-512 register of f32); bf16 and s8 on rows: their column share is computed
    into a dense buffer and copied into place, which costs more than it saves where the
    weights stay in cache (docs/byoc.md, "Rows or columns"). "columns": along the columns
    wherever N > M and, in f32, the shares stay whole registers; "rows": always the rows.
    Never more parts than rows or columns."""
    if direction not in MATMUL_SPLITS:
        raise ValueError(f"matmul split {direction!r}: one of {', '.join(MATMUL_SPLITS)}")
    wanted = direction == "columns" or (direction == "count" and compute == "f32")
    whole = n % (16 * threads) == 0 or compute != "f32"
    if wanted and threads > 1 and n > m and n >= 16 * threads and whole:
        return threads, True
    return max(1, min(threads, m)), False


# the directions matmul_split and conv_split take (the cpu target's matmul_split and
# conv_split options)
MATMUL_SPLITS = ("count", "rows", "columns")

# conv_split's count: the output channels where a conv's weights outnumber its source by this
# factor. ResNet-18 in bf16 on an Intel Xeon with AMX (2 threads, every conv in oneDNN):
# rows 3.69 ms; channels at 16x (its 7x7-pixel 512-channel convs) 3.55; at 4x (the 14x14
# 256-channel ones too) 3.66; wherever the weights are the larger 4.13-4.26. In f32 the same
# 16x: 10.73 -> 10.43 ms.
CONV_COLUMNS_MIN_RATIO = 16


def conv_split(
    n: int,
    oh: int,
    oc: int,
    source: int,
    weights: int,
    groups: int,
    threads: int,
    direction: str = "count",
) -> tuple[int, bool]:
    """How many workgroups run a conv (each a single-threaded primitive on its share) and
    whether along its output channels (the columns of its GEMM view) rather than its rows
    (output rows at batch 1, else images). Along the rows every part reads all the weights,
    along the channels all the source (``source`` and ``weights``: their element counts), so
    the channels read less where the weights are the larger: the deep layers of a conv net
    (ResNet-18's 512-channel 3x3 convs on 7x7 pixels: 2.4M weights, 25K source), whose rows
    are also too few to fill a matrix unit's tile. A channel share is computed into a dense
    buffer and copied into place (the residual added there), in every compute type, and
    its kernel runs fewer channels per source pixel: it pays only where the weights dominate.

    ``direction`` "count": the channels where the weights outnumber the source
    ``CONV_COLUMNS_MIN_RATIO`` times; "columns": wherever there are channels to share;
    "rows": the rows. Channel shares are whole 16-channel blocks
    where the channels allow; a grouped conv keeps its rows."""
    if direction not in MATMUL_SPLITS:
        raise ValueError(f"conv split {direction!r}: one of {', '.join(MATMUL_SPLITS)}")
    rows = conv_parts(n, oh, threads)
    unit = 16 if oc % 16 == 0 else 1
    can = threads > 1 and groups == 1 and oc // unit >= threads
    if can and (
        direction == "columns"
        or (direction == "count" and weights >= CONV_COLUMNS_MIN_RATIO * source)
    ):
        return threads, True
    return rows, False


def _integer_field(value: int) -> str:
    """An int as a name's field: a negative one spelled ``m128``."""
    return f"m{-value}" if value < 0 else str(value)


def _parse_integer_field(field: str) -> int:
    """``_integer_field``'s int."""
    return -int(field[1:]) if field.startswith("m") else int(field)


def _name(
    kind: str,
    compute: str,
    post: str,
    fields: list,
    zero_point: int | str | None,
    parts: int,
    columns: bool = False,
    impl: str = "",
    bias: bool | None = None,
    dst_zero_point: int | None = None,
) -> str:
    """f32/bf16 ops have a bias (``b``); s8 ones none (``nb``), s8f and s8q ones where
    ``bias``; the integer ones (s8, s8f, s8q) the source's zero point (s8q: then ``z`` and
    the output's)
    after the sizes, a negative one spelled ``m128`` (the name stays a plain identifier), one
    given at run time ``r``; then ``i`` and an implementation family, if one is asked for;
    last the number of parts (workgroups) after ``p`` (along the output's rows) or ``c`` (a
    matmul's columns, a conv's output channels)."""
    if parts < 1:
        raise ValueError(f"{parts} parts: at least one")
    if impl and impl not in IMPL_FAMILIES:
        raise ValueError(f"implementation family {impl!r}: one of {', '.join(IMPL_FAMILIES)}")
    integer = compute in INTEGER_COMPUTES
    if integer != (zero_point is not None):
        raise ValueError(f"a zero point goes with an integer compute type, not {compute}")
    requantized = compute in ("s8q", "u8q", "s8qu", "u8qu")
    if requantized != (dst_zero_point is not None):
        raise ValueError(f"an output zero point goes with compute type s8q, not {compute}")
    if bias is not None and compute not in ("s8f", "u8f") and not requantized:
        raise ValueError(f"compute type {compute} has {'no ' if integer else ''}bias, always")
    text = "_".join(str(int(f)) for f in fields)
    split = f"{'c' if columns else 'p'}{parts}"
    if impl:
        split = f"i{impl}_{split}"  # (with_impl adds it to a name made without)
    if zero_point is None:
        return f"{PREFIX}{kind}_{compute}_{post}_b_{text}_{split}"
    if isinstance(zero_point, str):
        if zero_point != RUNTIME_ZERO_POINT:
            raise ValueError(f"zero point {zero_point!r}: an int or {RUNTIME_ZERO_POINT!r}")
        zp = zero_point
    else:
        zp = _integer_field(zero_point)
    if dst_zero_point is not None:
        zp += f"z{_integer_field(dst_zero_point)}"
    b = "b" if bias else "nb"
    return f"{PREFIX}{kind}_{compute}_{post}_{b}_{text}_{zp}_{split}"
