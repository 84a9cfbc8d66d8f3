"""Which device can run which module, and the tools that run foreign-architecture modules.

A ``.vmfb`` names the formats of its executables (``embedded-elf-arm_64``, ``vulkan-spirv-fb``,
``static``, ...). Reading them from the bytes (no device needed) lets us refuse, with a clear
error, a module that a device cannot run, before IREE fails with a low-level status.
"""

from __future__ import annotations

import ctypes.util
import os
import platform
import re
import shutil
import subprocess
import sys
import threading
import weakref
import zipfile
from pathlib import Path
from typing import Any

from ..errors import ModuleLoadError, XGenError
from ..fileio import atomic_write_bytes


class TargetMismatchError(ModuleLoadError):
    """A module was asked to run on a device (or host) it was not compiled for."""


class MissingToolError(XGenError):
    """A tool needed for this target is not installed here; the message says what to install."""


_ARCH_ALIASES = {
    "amd64": "x86_64",
    "x86_64": "x86_64",
    "arm64": "aarch64",
    "aarch64": "aarch64",
    "riscv64": "riscv64",
}
# IREE's executable-format arch names -> ours.
_FORMAT_ARCH = {
    "x86_64": "x86_64",
    "arm_64": "aarch64",
    "riscv_64": "riscv64",
    "arm_32": "arm",
    "riscv_32": "riscv32",
    "x86_32": "x86",
}
# HAL executable format names, as IREE's module metadata lists them among a module's
# read-only strings (the values the module queries ``hal.executable.format`` for).
_FORMATS = re.compile(
    r"(?:embedded-elf|system-elf|system-dll)-[a-z0-9_]+|vulkan-spirv-fb|cuda-nvptx-fb"
    r"|rocm-hsaco-fb|vmvx-bytecode-fb|metal-msl-fb|static"
)
_RODATA_STRING = re.compile(r"^\s*\.rodata\[\s*\d+\] embedded\s+\d+ bytes `([^`]*)`", re.M)
GPU_FORMATS = {"vulkan": "vulkan-spirv-fb", "cuda": "cuda-nvptx-fb", "hip": "rocm-hsaco-fb"}

# apt packages (Debian/Ubuntu) that provide each emulator and its target sysroot.
_QEMU_APT = {
    "aarch64": "qemu-user-static libc6-arm64-cross libstdc++6-arm64-cross",
    "riscv64": "qemu-user-static libc6-riscv64-cross libstdc++6-riscv64-cross",
}
_SYSROOT = {"aarch64": "/usr/aarch64-linux-gnu", "riscv64": "/usr/riscv64-linux-gnu"}
# PyPI platform tags of iree-base-runtime wheels that carry the stock tools for an arch.
_WHEEL_PLATFORM = {"aarch64": "manylinux_2_28_aarch64"}


def host_arch() -> str:
    return _ARCH_ALIASES.get(platform.machine().lower(), platform.machine().lower())


def normalize_arch(arch: str) -> str:
    """``aarch64-linux-gnu`` / ``arm64`` / ``riscv64-unknown-elf`` -> aarch64 / riscv64."""
    if arch in ("host", ""):
        return host_arch()
    head = arch.split("-", 1)[0].lower()
    return _ARCH_ALIASES.get(head, head)


def executable_formats(vmfb: bytes) -> set[str]:
    """The executable formats a module carries (empty for modules with no dispatches), read
    from IREE's own parse of the module (``iree-dump-module --output=metadata``: its read-only
    strings), not from the raw bytes, where weights could hold anything."""
    from .inspect import module_metadata

    strings = _RODATA_STRING.findall(module_metadata(vmfb))
    return {s for s in strings if _FORMATS.fullmatch(s)}


def _describe(fmt: str) -> str:
    if fmt == "static":
        return "a static library (bare-metal: link it into firmware with IREE's runtime)"
    for prefix in ("embedded-elf-", "system-elf-", "system-dll-"):
        if fmt.startswith(prefix):
            return f"{_FORMAT_ARCH.get(fmt[len(prefix) :], fmt[len(prefix) :])} CPUs ({fmt})"
    return f"{fmt}"


def check_device(vmfb: bytes, device: str, source: str = "module") -> None:
    """Raise :class:`TargetMismatchError` if ``device`` here cannot run ``vmfb``."""
    formats = executable_formats(vmfb)
    if not formats:
        return
    if device in GPU_FORMATS:
        ok = GPU_FORMATS[device] in formats
    else:  # local-task / local-sync: CPU executables for this machine's arch
        arch = host_arch()
        ok = (
            any(
                f.split("-", 2)[-1] in _FORMAT_ARCH and _FORMAT_ARCH[f.split("-", 2)[-1]] == arch
                for f in formats
                if f.startswith(("embedded-elf-", "system-elf-", "system-dll-"))
            )
            or "vmvx-bytecode-fb" in formats
        )
    if ok:
        return
    what = ", ".join(sorted(_describe(f) for f in formats))
    hint = ""
    if "static" in formats:
        hint = " Use module.save_artifacts(DIR) for the object, header and C module."
    elif any(f.startswith("embedded-elf-") for f in formats) and device not in GPU_FORMATS:
        hint = (
            " Save a bundle (module.save_bundle(DIR)) and run it on such a device, or here "
            "under qemu with runtime_bridge/run_bundle.sh DIR."
        )
    elif device in GPU_FORMATS:
        hint = f" Compile with target='{device}' to run on device '{device}'."
    else:
        hint = " Pick the device it was compiled for (device='vulkan' / 'cuda')."
    raise TargetMismatchError(
        f"{source}: compiled for {what}; it cannot run on device '{device}' of this "
        f"{host_arch()} machine.{hint}"
    )


def require_vulkan() -> None:
    """A Vulkan loader must exist for device 'vulkan' (else IREE fails obscurely)."""
    if ctypes.util.find_library("vulkan") is None:
        raise MissingToolError(
            "device 'vulkan': no Vulkan loader (libvulkan.so.1) on this machine. Install a "
            "loader and a driver: Debian/Ubuntu `apt-get install libvulkan1 mesa-vulkan-drivers` "
            "(Mesa's llvmpipe runs Vulkan on the CPU), or your GPU vendor's driver."
        )


class VulkanLease:
    """A hold on the process's shared Vulkan device: modules and schedulers keep one, the
    registry only a weak reference, so the device is freed with its last holder."""

    def __init__(self, device: Any) -> None:
        self.device = device


_VULKAN: weakref.ref[VulkanLease] | None = None
_VULKAN_LOCK = threading.Lock()


def vulkan_lease() -> VulkanLease:
    """The shared Vulkan device, made when no live module or scheduler holds one.

    Not ``iree.runtime``'s cached device, which lives as long as the process: IREE's Vulkan
    device runs a completion-watcher thread that waits in ``vkWaitSemaphores``, and on Mesa's
    lavapipe (22.x, the CPU Vulkan of CI machines) that wait polls the clock: two threads at
    94-98% of a core each while the device lives (found with gdb in libvulkan_lvp.so). One
    device per module would multiply them (ten such threads in one test process, measured);
    one cached device kept them for good. A shared device that ends with its last holder
    bounds them to two, and only while a Vulkan model is loaded."""
    global _VULKAN
    import iree.runtime as rt

    require_vulkan()
    with _VULKAN_LOCK:
        lease = _VULKAN() if _VULKAN is not None else None
        if lease is None:
            try:
                lease = VulkanLease(rt.get_device("vulkan", cache=False))
            except Exception as e:
                raise ModuleLoadError(f"device 'vulkan' is not available here: {e}") from None
            _VULKAN = weakref.ref(lease)
        return lease


def emulator(arch: str) -> list[str]:
    """The command prefix that runs ``arch`` Linux binaries here ([] on a native host)."""
    arch = normalize_arch(arch)
    if arch == host_arch():
        return []
    qemu = shutil.which(f"qemu-{arch}-static") or shutil.which(f"qemu-{arch}")
    sysroot = _SYSROOT.get(arch)
    if qemu is None or sysroot is None or not Path(sysroot).is_dir():
        pkgs = _QEMU_APT.get(arch, f"qemu-user-static and a {arch} libc")
        raise MissingToolError(
            f"running {arch} modules on this {host_arch()} machine needs qemu user-mode "
            f"emulation and a {arch} sysroot; install them: apt-get install {pkgs}"
        )
    return [qemu, "-L", sysroot]


def tools_cache_dir(arch: str) -> Path:
    """Where stock IREE tools for a foreign arch are kept (override: $XGEN_TOOLS_CACHE)."""
    root = os.environ.get("XGEN_TOOLS_CACHE")
    base = Path(root) if root else Path(sys.prefix) / "cache"
    return base / f"iree-runtime-{normalize_arch(arch)}"


def foreign_tool(arch: str, name: str, *, fetch: bool = True) -> Path:
    """Stock ``name`` (iree-run-module, ...) built for ``arch``.

    Looks in ``$IREE_TOOLS_DIR_<ARCH>``, then the cache; with ``fetch``, downloads the
    ``iree-base-runtime`` wheel for that arch from PyPI (``pip download``) into the cache.
    """
    arch = normalize_arch(arch)
    env_dir = os.environ.get(f"IREE_TOOLS_DIR_{arch.upper()}")
    if env_dir and (Path(env_dir) / name).is_file():
        return Path(env_dir) / name
    cache = tools_cache_dir(arch)
    tool = cache / "iree" / "_runtime_libs" / name
    if tool.is_file():
        return tool
    plat = _WHEEL_PLATFORM.get(arch)
    if plat is None:
        raise MissingToolError(
            f"no stock IREE runtime tools for {arch}: PyPI has no iree-base-runtime wheel for "
            f"it. Build IREE's runtime for {arch} (cmake -DIREE_BUILD_COMPILER=OFF) and set "
            f"IREE_TOOLS_DIR_{arch.upper()} to the folder holding {name}."
        )
    if not fetch:
        raise MissingToolError(f"{name} for {arch} is not in {cache}; fetch it first")
    fetch_runtime_wheel(arch)
    if not tool.is_file():
        raise MissingToolError(f"the {arch} iree-base-runtime wheel has no {name}")
    return tool


def fetch_runtime_wheel(arch: str) -> Path:
    """``pip download`` the iree-base-runtime wheel for ``arch`` (same version as ours), unzip."""
    from importlib.metadata import version

    arch = normalize_arch(arch)
    cache = tools_cache_dir(arch)
    cache.mkdir(parents=True, exist_ok=True)
    ver = version("iree-base-runtime")
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--quiet",
        "--no-deps",
        "--only-binary=:all:",
        "--python-version",
        "3.11",
        "--platform",
        _WHEEL_PLATFORM[arch],
        f"iree-base-runtime=={ver}",
        "-d",
        str(cache),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wheels = sorted(cache.glob(f"iree_base_runtime-{ver}-*.whl"))
    if proc.returncode != 0 or not wheels:
        raise MissingToolError(
            f"could not download the {arch} iree-base-runtime {ver} wheel from PyPI "
            f"({proc.stderr.strip()[-300:]}); set IREE_TOOLS_DIR_{arch.upper()} instead"
        )
    with zipfile.ZipFile(wheels[-1]) as z:
        for member in z.namelist():
            wanted = member.startswith(("iree/_runtime_libs/iree-", "iree/_runtime_libs/lib"))
            if not wanted or ".." in Path(member).parts:
                continue
            # Atomically: a tool is taken as present when its file exists, so an interrupted
            # unzip must not leave a truncated one behind.
            target = atomic_write_bytes(cache / member, z.read(member))
            target.chmod(0o755)
    return cache


# Vulkan profiles made for one vendor's GPUs (pipelines/vulkan.toml option `gpu`), and the words
# that vendor's devices carry in their names. The portable baseline runs anywhere.
_VENDOR_PROFILES = {
    "amd": (("rdna", "gfx", "rx7", "rx6", "mi300", "cdna"), ("amd", "radeon", "radv")),
    "nvidia": (("ampere", "turing", "ada", "hopper", "sm_", "rtx", "a100", "h100"), ("nvidia",)),
    "arm": (("valhall", "mali"), ("mali",)),
    "qualcomm": (("adreno",), ("adreno", "qualcomm", "turnip")),
}


def vendor_of_profile(profile: str) -> str | None:
    """The GPU vendor a Vulkan target profile is for (None: portable, e.g. vp_android_*)."""
    p = profile.lower()
    for vendor, (prefixes, _) in _VENDOR_PROFILES.items():
        if p.startswith(prefixes):
            return vendor
    return None


def check_vulkan_profile(profile: str, device_names: list[str], source: str) -> None:
    """Refuse to load a module built for one vendor's GPUs on a device of another: IREE loads
    it and it returns wrong numbers with no error (measured: an `rdna3` build on llvmpipe)."""
    vendor = vendor_of_profile(profile)
    if vendor is None or not device_names:
        return
    words = _VENDOR_PROFILES[vendor][1]
    if any(w in name.lower() for name in device_names for w in words):
        return
    raise TargetMismatchError(
        f"{source}: compiled for the Vulkan profile '{profile}' ({vendor} GPUs), but this "
        f"machine's Vulkan device is {device_names[0]!r}. Compile with target_options="
        f"{{'gpu': 'vp_android_baseline_2022'}} (portable) or the profile of this GPU."
    )


def vulkan_device_names() -> list[str]:
    """Names of the Vulkan devices the loader finds (empty if it finds none)."""
    import iree.runtime as rt

    try:
        return [str(d.get("name", "")) for d in rt.get_driver("vulkan").query_available_devices()]
    except (RuntimeError, ValueError):
        return []
