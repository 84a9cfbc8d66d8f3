"""One fuzz case in its own process: compile a file, or load a .vmfb and call it.

Exit status: 0 the input was accepted; 3 xgen_mlir refused it with an XGenError (its first
line is printed); anything else is the campaign's business: an unhandled exception exits 1
with Python's traceback on stderr, a signal kills the process.
"""

from __future__ import annotations

import inspect
import sys


def main(mode: str, path: str) -> int:
    import xgen_mlir
    from xgen_mlir.errors import XGenError

    try:
        if mode == "compile":
            xgen_mlir.compile(path, tuning_db=False)
        elif mode == "run-vmfb":
            # Modules from outside this process are run isolated, where load() offers it: a
            # corrupted module may crash the process that calls it.
            # (Checked by name so the campaign also measures versions before these options.)
            params = inspect.signature(xgen_mlir.load).parameters
            opts: dict[str, object] = {"isolated": True} if "isolated" in params else {}
            if "call_timeout" in params:
                opts["call_timeout"] = 60.0  # a module stuck in a loop is an error, not a hang
            module = xgen_mlir.load(path, **opts)
            module(*module.random_inputs())
        else:
            raise SystemExit(f"child.py: unknown mode {mode!r}")
    except XGenError as e:
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        print(f"{type(e).__name__}: {first}")
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
