"""The child process of ``mlir_import.precheck_parse``: parse a file, report that the parser
survived.

``main([torch|iree, START, [--split,] PATH])`` reads PATH (MLIR text or bytecode) and parses
it, or each ``// -----`` chunk from index START on, in the same kind of context the caller
will parse it in, printing each chunk's index before parsing it and ``done`` at the end.
Parse errors are not reported (the caller's own parse reports them); if the parser crashes,
the caller learns which chunk from the last index printed.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any


def main(argv: list[str]) -> int:
    try:  # a crash must not leave a core file behind
        import resource

        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    except (ImportError, ValueError, OSError):
        pass
    binding, start, *rest = argv
    split = "--split" in rest
    path = Path(rest[-1])
    from .._mlir import ir, iree_binding
    from .mlir_import import decode_mlir_input, new_torch_context, split_chunks

    mlir: Any = iree_binding().ir if binding == "iree" else ir
    new_context = mlir.Context if binding == "iree" else new_torch_context
    data = decode_mlir_input(path.read_bytes(), str(path))
    chunks = split_chunks(data, split) if isinstance(data, str) else [data]
    for i in range(int(start), len(chunks)):
        print(i, flush=True)
        ctx = new_context()
        handler = ctx.attach_diagnostic_handler(lambda d: True)  # keep stderr quiet
        try:
            mlir.Module.parse(chunks[i], ctx)
        except Exception:  # a parse error: the caller reports it from its own parse
            pass
        finally:
            handler.detach()
    print("done", flush=True)
    return 0


if __name__ == "__main__":  # mlir_import runs it without the package's __init__
    sys.exit(main(sys.argv[1:]))
