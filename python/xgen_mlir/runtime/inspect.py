"""Looking inside compiled modules with IREE's stock tools (no re-compilation)."""

from __future__ import annotations

import subprocess
import tempfile

from .._paths import iree_tool
from ..errors import ModuleLoadError

_DISPATCH = "vm.call.variadic @hal.command_buffer.dispatch"


def _dump(vmfb: bytes, output: str) -> str:
    """``iree-dump-module --output=OUTPUT`` of a module; a module IREE cannot parse is a
    ModuleLoadError."""
    with tempfile.NamedTemporaryFile(suffix=".vmfb") as f:
        f.write(vmfb)
        f.flush()
        proc = subprocess.run(
            [iree_tool("iree-dump-module"), f"--output={output}", f.name],
            capture_output=True,
            text=True,
            errors="replace",
        )
    if proc.returncode != 0:
        raise ModuleLoadError(f"not a valid IREE module: {proc.stderr.strip()[:300]}")
    return proc.stdout


def module_metadata(vmfb: bytes) -> str:
    """IREE's description of a module (imports, exports, read-only data), from its parser."""
    return _dump(vmfb, "metadata")


def disassemble(vmfb: bytes) -> str:
    return _dump(vmfb, "disassembly")


def dispatch_count(vmfb: bytes, include_init: bool = False) -> int:
    """Kernel launches per call of the module: dispatches recorded in every VM function but
    the module initializer (``@__init() -> ()``, which runs once at load time: weight packing
    for data tiling, constant evaluation). ``include_init`` counts those too (the count the
    project reported before 2026-11-21)."""
    total = init = 0
    in_init = False
    for line in disassemble(vmfb).splitlines():
        if line.startswith("vm.func "):
            in_init = line.startswith("vm.func @__init() -> () {")
        if _DISPATCH in line:
            total += 1
            init += in_init
    return total if include_init else total - init
