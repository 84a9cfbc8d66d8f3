"""Looking inside compiled modules with IREE's stock tools (no re-compilation)."""

from __future__ import annotations

import subprocess
import tempfile

from .._paths import iree_tool
from ..errors import ModuleLoadError, XGenError

_DISPATCH = "vm.call.variadic @hal.command_buffer.dispatch"


def module_metadata(vmfb: bytes) -> str:
    """IREE's description of a module (imports, exports, read-only data), from its parser."""
    with tempfile.NamedTemporaryFile(suffix=".vmfb") as f:
        f.write(vmfb)
        f.flush()
        proc = subprocess.run(
            [iree_tool("iree-dump-module"), "--output=metadata", f.name],
            capture_output=True,
            text=True,
            errors="replace",
        )
    if proc.returncode != 0:
        raise ModuleLoadError(f"not a valid IREE module: {proc.stderr.strip()[:300]}")
    return proc.stdout


def disassemble(vmfb: bytes) -> str:
    with tempfile.NamedTemporaryFile(suffix=".vmfb") as f:
        f.write(vmfb)
        f.flush()
        proc = subprocess.run(
            [iree_tool("iree-dump-module"), "--output=disassembly", f.name],
            capture_output=True,
            text=True,
        )
    if proc.returncode != 0:
        raise XGenError(f"iree-dump-module failed: {proc.stderr.strip()[:500]}")
    return proc.stdout


def dispatch_count(vmfb: bytes, include_init: bool = False) -> int:
    """Kernel launches per call of the module: dispatches recorded in every VM function but
    the module initializer (``@__init() -> ()``, which runs once at load time: weight packing
    for data tiling, constant evaluation). ``include_init`` counts those too (the count the
    project reported before 2026-11-21, session 2)."""
    total = init = 0
    in_init = False
    for line in disassemble(vmfb).splitlines():
        if line.startswith("vm.func "):
            in_init = line.startswith("vm.func @__init() -> () {")
        if _DISPATCH in line:
            total += 1
            init += in_init
    return total if include_init else total - init
