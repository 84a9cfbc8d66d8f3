"""Helpers for the target tests: tool requirements that skip locally but fail in CI, ELF reading."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
IN_CI = os.environ.get("CI", "").lower() in ("true", "1", "yes")


def need(ok: bool, what: str) -> None:
    """Skip when ``what`` is missing on a developer machine; fail loudly in CI (CI=true)."""
    if ok:
        return
    if IN_CI:
        pytest.fail(f"CI machine lacks {what} (.ci/run should install it)")
    pytest.skip(f"{what} not installed here (CI installs it; see .ci/run)")


def need_vulkan() -> None:
    import ctypes.util

    ok = ctypes.util.find_library("vulkan") is not None
    if ok:
        proc = subprocess.run(
            [str(ROOT / ".venv/bin/iree-run-module"), "--list_devices"],
            capture_output=True,
            text=True,
        )
        ok = "vulkan://" in proc.stdout
    need(ok, "a Vulkan device (apt-get install libvulkan1 mesa-vulkan-drivers)")


def need_qemu(arch: str) -> None:
    cross = "arm64" if arch == "aarch64" else arch
    need(
        shutil.which(f"qemu-{arch}-static") is not None and Path(f"/usr/{arch}-linux-gnu").is_dir(),
        f"qemu-{arch}-static and the {arch} sysroot (apt-get install qemu-user-static "
        f"libc6-{cross}-cross libstdc++6-{cross}-cross)",
    )


def need_aarch64_runtime() -> None:
    """qemu-aarch64 with its sysroot and the aarch64 IREE runtime tools (bundles run there)."""
    from xgen_mlir import errors
    from xgen_mlir.runtime import targets

    need_qemu("aarch64")
    try:
        targets.foreign_tool("aarch64", "iree-run-module")
    except errors.XGenError as e:
        need(False, f"the aarch64 IREE runtime tools ({e})")


def run_bundle(
    bundle: Path, *args: str, check: bool = True, benchmark: bool = False
) -> subprocess.CompletedProcess:
    mode = ["--benchmark"] if benchmark else []
    cmd = [str(ROOT / "runtime_bridge/run_bundle.sh"), *mode, str(bundle), *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if check and proc.returncode != 0:
        raise AssertionError(
            f"run_bundle.sh failed ({proc.returncode}):\n{proc.stdout[-800:]}\n{proc.stderr[-999:]}"
        )
    return proc


def run_bundle_npy(bundle: Path, tmp: Path, *inputs: np.ndarray) -> np.ndarray:
    args = []
    for i, x in enumerate(inputs):
        np.save(tmp / f"in{i}.npy", np.ascontiguousarray(x))
        args.append(f"--input=@{tmp / f'in{i}.npy'}")
    run_bundle(bundle, *args, f"--output=@{tmp / 'out.npy'}")
    return np.load(tmp / "out.npy")


# -- a minimal ELF reader (machine + defined symbols), so no binutils are needed -----------
ELF_MACHINES = {62: "x86_64", 183: "aarch64", 243: "riscv"}


def elf_info(data: bytes) -> tuple[str, int, set[str]]:
    """(machine, ELF class 32/64, names of defined global symbols) of a relocatable object."""
    assert data[:4] == b"\x7fELF", "not an ELF file"
    is64 = data[4] == 2
    end = "<" if data[5] == 1 else ">"
    machine = struct.unpack_from(end + "H", data, 18)[0]
    if is64:
        (shoff,) = struct.unpack_from(end + "Q", data, 40)
        shentsize, shnum = struct.unpack_from(end + "HH", data, 58)
    else:
        (shoff,) = struct.unpack_from(end + "I", data, 32)
        shentsize, shnum = struct.unpack_from(end + "HH", data, 46)
    sections = []
    for i in range(shnum):
        off = shoff + i * shentsize
        if is64:
            _, stype, _, _, offset, size, link, _, _, entsize = struct.unpack_from(
                end + "IIQQQQIIQQ", data, off
            )
        else:
            _, stype, _, _, offset, size, link, _, _, entsize = struct.unpack_from(
                end + "IIIIIIIIII", data, off
            )
        sections.append((stype, offset, size, link, entsize))
    names = set()
    for stype, offset, size, link, entsize in sections:
        if stype != 2:  # SHT_SYMTAB
            continue
        str_off = sections[link][1]
        for j in range(size // entsize):
            e = offset + j * entsize
            if is64:
                name, info, _, shndx = struct.unpack_from(end + "IBBH", data, e)
            else:
                name, _, _, info, _, shndx = struct.unpack_from(end + "IIIBBH", data, e)
            if info >> 4 == 1 and shndx != 0 and name:  # STB_GLOBAL, defined
                names.add(data[str_off + name : data.index(b"\0", str_off + name)].decode())
    return ELF_MACHINES.get(machine, str(machine)), 64 if is64 else 32, names
