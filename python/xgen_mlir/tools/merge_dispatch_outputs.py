"""The backend's duplicate-output merge (``backend/shared_packs.py``) on a file of IREE IR after
dispatch creation (``iree-compile --compile-to=dispatch-creation``), printed as text: for the
lit tests, and for looking at what it does.

    python -m xgen_mlir.tools.merge_dispatch_outputs IN.mlir [-o OUT.mlir]
"""

from __future__ import annotations


def main(argv: list[str] | None = None) -> int:
    import argparse
    import sys

    from iree.compiler import ir

    from ..backend.shared_packs import merge_duplicate_outputs

    p = argparse.ArgumentParser(prog="python -m xgen_mlir.tools.merge_dispatch_outputs")
    p.add_argument("input", help=".mlir/.mlirbc after dispatch creation, or - for stdin")
    p.add_argument("-o", "--output", default="-")
    args = p.parse_args(argv)
    data = sys.stdin.buffer.read() if args.input == "-" else open(args.input, "rb").read()
    try:
        module = ir.Module.parse(data, ir.Context())
    except ir.MLIRError as e:
        print(f"{args.input}: not IREE IR after dispatch creation: {e}", file=sys.stderr)
        return 1
    merged = merge_duplicate_outputs(module)
    print(f"merged {merged} duplicate dispatch outputs", file=sys.stderr)
    text = str(module)
    if args.output == "-":
        sys.stdout.write(text)
    else:
        open(args.output, "w").write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
