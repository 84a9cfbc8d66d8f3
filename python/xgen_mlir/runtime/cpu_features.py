"""Never a SIGILL: a CPU module's required features against the host's, before any code runs.

``compile()`` records in the module (its entry function's reflection, ``xgen.cpu_features``)
the LLVM features the llvm-cpu target was resolved to (backend/cpu_target.py). Loading it on
a CPU that lacks one (AMX on an AMD host, AVX512-BF16 on an older Xeon) would end in an
illegal instruction in the middle of a call; here the load is refused, naming the features.

Only features that change which instructions the generated code may use are checked, each
under the name /proc/cpuinfo gives it (x86 ``flags``, arm64 ``Features``); the others in LLVM's
list (``crc32``, ``x87``, ``64bit``, ``reserve-x18`` ...) have no cpuinfo flag or cannot be
missing on a CPU of that arch.
"""

from __future__ import annotations

from ..errors import ModuleLoadError
from ..target import cpu_flags, cpu_model
from .targets import _FORMAT_ARCH, host_arch

REFLECTION_KEY = "xgen.cpu_features"  # comma-separated LLVM features ('+' ones)
CPU_KEY = "xgen.cpu"  # the LLVM CPU name
FORMAT_KEY = "xgen.cpu_format"  # IREE's executable format (embedded-elf-x86_64, ...)

_SAME_NAME = (
    "adx aes avx avx2 avx512f avx512bw avx512cd avx512dq avx512ifma avx512vl avx512vbmi "
    "bmi2 f16c fma fma4 gfni movbe popcnt sse sse2 ssse3 sse4a vaes vpclmulqdq xop"
).split()
# LLVM feature -> /proc/cpuinfo flag, where the names differ.
_RENAMED = {
    "sse3": "pni",
    "sse4.1": "sse4_1",
    "sse4.2": "sse4_2",
    "pclmul": "pclmulqdq",
    "bmi": "bmi1",
    "lzcnt": "abm",
    "sha": "sha_ni",
    "avx512bf16": "avx512_bf16",
    "avx512vnni": "avx512_vnni",
    "avx512vbmi2": "avx512_vbmi2",
    "avx512bitalg": "avx512_bitalg",
    "avx512vpopcntdq": "avx512_vpopcntdq",
    "avx512fp16": "avx512_fp16",
    "avx512vp2intersect": "avx512_vp2intersect",
    "avxvnni": "avx_vnni",
    "amx-tile": "amx_tile",
    "amx-bf16": "amx_bf16",
    "amx-int8": "amx_int8",
    "amx-fp16": "amx_fp16",
    "amx-complex": "amx_complex",
    # arm64 (Features line)
    "neon": "asimd",
    "dotprod": "asimddp",
    "i8mm": "i8mm",
    "bf16": "bf16",
    "sve": "sve",
    "sve2": "sve2",
    "fullfp16": "fphp",
    "fp16fml": "asimdfhm",
    "sme": "sme",
}
CPUINFO_NAME = {**{f: f for f in _SAME_NAME}, **_RENAMED}


class CpuFeatureError(ModuleLoadError):
    """The module was compiled for CPU features this host does not have."""


def required_flags(features: str) -> dict[str, str]:
    """{LLVM feature: cpuinfo flag} for the checked features in a recorded feature list."""
    names = [f.strip().lstrip("+") for f in features.split(",") if f.strip()]
    return {n: CPUINFO_NAME[n] for n in names if n in CPUINFO_NAME}


def missing_features(features: str, host: set[str] | None = None) -> list[str]:
    """The recorded features this host lacks, as ``llvm-name (cpuinfo-name)``. An unknown host
    (no /proc/cpuinfo flags) lacks nothing: the check cannot be made there."""
    host = cpu_flags() if host is None else host
    if not host:
        return []
    return [
        f"{llvm} ({flag})" if llvm != flag else llvm
        for llvm, flag in required_flags(features).items()
        if flag not in host
    ]


def check_cpu_features(
    features: str, cpu: str, fmt: str, source: str, host: set[str] | None = None
) -> None:
    """Raise :class:`CpuFeatureError` naming every feature the module needs that this CPU
    lacks. A module for another arch (``fmt``) is not checked here: no CPU of this arch runs
    it (targets.check_device says so)."""
    arch = _FORMAT_ARCH.get(fmt.split("-", 2)[-1], "") if fmt else host_arch()
    if arch != host_arch():
        return
    missing = missing_features(features, host)
    if missing:
        raise CpuFeatureError(
            f"{source}: compiled for CPU '{cpu or 'generic'}' with feature(s) this CPU "
            f"({cpu_model()}) lacks: {', '.join(missing)} ({len(missing)} missing). Running it "
            "would stop with an illegal instruction (SIGILL); recompile it here (target 'cpu' "
            "resolves 'host' to this CPU) or for a CPU model this host has (target 'x86_64', "
            "cpu=...)."
        )
