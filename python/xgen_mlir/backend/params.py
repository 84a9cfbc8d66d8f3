"""External weights: move large ``dense_resource`` constants into a parameter archive (.irpa).

IREE folds private constant weights before ``--iree-parameter-export`` sees them, so it
writes no archive (shared/STACK.md item 11). Instead, on the textual IR handed to IREE,
each large ``arith.constant dense_resource<NAME> : tensor<...>`` becomes a load of
``util.global private @... = #stream.parameter.named<"SCOPE"::"NAME"> : tensor<...>`` and
its bytes go into the archive under NAME. The module then runs with
``iree-run-module --parameters=SCOPE=weights.irpa`` (or ``xgen_mlir.load_bundle``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..dtypes import element_bytes
from ..errors import XGenError

DEFAULT_SCOPE = "model"

_CONST = re.compile(
    r"^(?P<indent>[ \t]*)(?P<res>%[\w.$-]+) = arith\.constant "
    r"dense_resource<(?P<name>[^>]+)> : (?P<type>tensor<[^>]*>)[ \t]*$",
    re.M,
)
_SECTION = re.compile(
    r"\{-#\s*dialect_resources:\s*\{\s*builtin:\s*\{(?P<body>.*?)\}\s*\}\s*#-\}", re.S
)
_ENTRY = re.compile(r'\s*(?P<key>"[^"]*"|[\w.$-]+)\s*:\s*"0x(?P<hex>[0-9A-Fa-f]*)"\s*,?')


@dataclass
class Externalized:
    """The rewritten IR text and the weights moved out of it (name -> raw bytes)."""

    text: str
    weights: dict[str, bytes] = field(default_factory=dict)
    scope: str = DEFAULT_SCOPE

    @property
    def total_bytes(self) -> int:
        return sum(len(b) for b in self.weights.values())

    def write_irpa(self, path: str | Path) -> Path:
        return write_irpa(self.weights, path)


def _nbytes(tensor_type: str) -> int | None:
    dims = tensor_type[len("tensor<") : -1].split("x")
    elem = None if dims[-1] == "i1" else element_bytes(dims[-1])  # i1 weights stay inline
    if elem is None or any(not d.isdigit() for d in dims[:-1]):
        return None
    return int(np.prod([int(d) for d in dims[:-1]], dtype=np.int64)) * elem


def externalize_weights(
    text: str, *, min_bytes: int = 0, scope: str = DEFAULT_SCOPE
) -> Externalized:
    """Move every ``dense_resource`` constant of at least ``min_bytes`` into parameters."""
    sec = _SECTION.search(text)
    if sec is None:
        return Externalized(text, {}, scope)
    blobs: dict[str, str] = {}
    pos, body = 0, sec.group("body")
    while pos < len(body.rstrip()):
        m = _ENTRY.match(body, pos)
        if m is None:
            raise XGenError("externalize_weights: cannot parse the IR's dialect_resources section")
        blobs[m.group("key").strip('"')] = m.group("hex")
        pos = m.end()

    weights: dict[str, bytes] = {}
    globals_: dict[str, str] = {}

    def rewrite(m: re.Match[str]) -> str:
        name, ttype = m.group("name").strip('"'), m.group("type")
        hexdata = blobs.get(name)
        size = _nbytes(ttype)
        # 8 hex digits of alignment header, then the raw little-endian elements.
        if (
            hexdata is None
            or size is None
            or size < max(min_bytes, 1)
            or len(hexdata) != 8 + 2 * size
        ):
            return m.group(0)
        if name not in globals_:
            sym = f"__xgen_param_{len(globals_)}"
            globals_[name] = sym
            weights[name] = bytes.fromhex(hexdata[8:])
            param = f'#stream.parameter.named<"{scope}"::"{name}">'
            decls.append(f"  util.global private @{sym} = {param} : {ttype}")
        return f"{m.group('indent')}{m.group('res')} = util.global.load @{globals_[name]} : {ttype}"

    decls: list[str] = []
    new_text = _CONST.sub(rewrite, text)
    if not weights:
        return Externalized(text, {}, scope)
    # Drop the moved blobs from the resource section; keep the others.
    kept = [f'      "{k}": "0x{h}"' for k, h in blobs.items() if k not in weights]
    section = (
        "{-#\n  dialect_resources: {\n    builtin: {\n" + ",\n".join(kept) + "\n    }\n  }\n#-}"
    )
    sec2 = _SECTION.search(new_text)
    assert sec2 is not None
    new_text = new_text[: sec2.start()] + (section if kept else "") + new_text[sec2.end() :]
    head = re.search(r"^module\b[^\n]*\{[ \t]*$", new_text, re.M)
    if head is None:
        raise XGenError("externalize_weights: no top-level 'module {' line in the IR")
    new_text = new_text[: head.end()] + "\n" + "\n".join(decls) + new_text[head.end() :]
    return Externalized(new_text, weights, scope)


def write_irpa(weights: dict[str, bytes], path: str | Path) -> Path:
    """Write ``weights`` (name -> bytes) as an IREE parameter archive."""
    import iree.runtime as rt

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    index = rt.ParameterIndex()
    for name, data in weights.items():
        index.add_buffer(name, data)
    index.create_archive_file(str(path))
    return path
