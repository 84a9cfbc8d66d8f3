"""The import graph of the package has no upward arrows (docs/architecture.md).

Every ``xgen_mlir`` import, at module level or inside a function, goes from a unit (a
top-level module or sub-package) to a unit of a lower layer, or stays inside its unit."""

from __future__ import annotations

import ast
from pathlib import Path

import xgen_mlir

ROOT = Path(xgen_mlir.__file__).parent

# Bottom to top; a unit may import units of lower layers only (the order is the picture in
# docs/architecture.md).
LAYERS = [
    ["errors"],
    ["_paths", "_mlir", "diagnostics", "target", "fileio", "dtypes"],
    ["tunedb"],  # measured configs per (op signature, host)
    ["irutil", "analysis", "codegen", "compress", "models"],
    ["dialects", "pipelines", "byoc"],  # byoc: external kernel libraries' plugins
    ["frontend", "fusion"],
    ["passes"],
    ["backend"],
    ["runtime"],
    ["report"],
    ["compiler"],
    ["bisect", "tuning"],  # compile and run a model many times: dispatch by dispatch, or
    # each tunable op per candidate config
    ["tools", "__init__"],  # __init__: the public face (compile, load, errors)
]
LEVEL = {unit: i for i, units in enumerate(LAYERS) for unit in units}


def _imports(path: Path) -> set[str]:
    """The units ``path`` imports (relative imports resolved, absolute xgen_mlir ones too)."""
    parts = list(path.relative_to(ROOT).parts)
    package = parts[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            base = package[: len(package) - (node.level - 1)]
            target = base + [p for p in (node.module or "").split(".") if p]
            names = [target[0]] if target else [a.name for a in node.names]
        elif node.module and node.module.startswith("xgen_mlir."):
            names = [node.module.split(".")[1]]
        else:
            continue
        found.update(n.removesuffix(".py") for n in names)
    return found


def _unit(path: Path) -> str:
    return path.relative_to(ROOT).parts[0].removesuffix(".py")


def test_every_unit_has_a_layer():
    units = {_unit(p) for p in ROOT.rglob("*.py")}
    assert units <= set(LEVEL), f"units with no layer: {sorted(units - set(LEVEL))}"


def test_no_upward_imports():
    upward = []
    for path in sorted(ROOT.rglob("*.py")):
        src = _unit(path)
        for dst in _imports(path):
            if dst != src and LEVEL[dst] >= LEVEL[src]:
                upward.append(f"{path.relative_to(ROOT)} imports {dst}")
    assert not upward, "imports that go up or sideways between layers:\n" + "\n".join(upward)
