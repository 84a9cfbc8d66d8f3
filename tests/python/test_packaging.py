"""What `pip install xgen-mlir` (no extras) gives: every module imports, and what needs an
optional package says which extra installs it.

The install test builds the wheel and installs it into a fresh venv that sees exactly the
distributions of the core ``dependencies`` (resolved recursively from the installed
metadata, extras left out), linked in from this venv: no network, and a module that imports
a package the core does not bring fails the test with its name.
"""

from __future__ import annotations

import ast
import email
import importlib.metadata as md
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from collections import defaultdict
from pathlib import Path
from types import SimpleNamespace

import pytest
from packaging.requirements import Requirement

import xgen_mlir
from xgen_mlir import errors

REPO = Path(__file__).resolve().parents[2]
PACKAGE = Path(xgen_mlir.__file__).resolve().parent
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
SITE = Path(sysconfig.get_paths()["purelib"]).resolve()


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _closure(requirements: list[str]) -> dict[str, md.Distribution]:
    """The installed distributions that ``requirements`` pull in, recursively. A
    requirement's own extras are followed; the optional extras of the roots are not (their
    requirements carry ``extra == ...`` markers, evaluated false). Fails naming anything
    required but not installed."""
    found: dict[str, md.Distribution] = {}
    missing: list[str] = []
    todo = [(Requirement(r), "xgen-mlir") for r in requirements]
    seen: set[tuple[str, str]] = set()
    while todo:
        req, by = todo.pop()
        name = _norm(req.name)
        for extra in sorted(req.extras) or [""]:
            if (name, extra) in seen:
                continue
            seen.add((name, extra))
            try:
                dist = found.get(name) or md.distribution(req.name)
            except md.PackageNotFoundError:
                missing.append(f"{req.name} (required by {by})")
                break
            found[name] = dist
            for text in dist.requires or []:
                sub = Requirement(text)
                if sub.marker is None or sub.marker.evaluate({"extra": extra}):
                    todo.append((sub, name))
    assert not missing, f"required but not installed here: {sorted(set(missing))}"
    return found


def _core_requirements_of_wheel(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        msg = email.message_from_bytes(z.read(meta))
    reqs = msg.get_all("Requires-Dist") or []
    return [r for r in reqs if "extra ==" not in r.replace('"', "").replace("'", "")]


def _stage(dists: dict[str, md.Distribution], staging: Path) -> None:
    """Link into ``staging`` the files of ``dists`` (packages, modules, extension modules,
    .dist-info folders): a top-level entry whole when only these distributions own files in
    it, else (a namespace package shared with others) folder by folder."""
    owners: dict[tuple[str, ...], set[str]] = defaultdict(set)
    children: dict[tuple[str, ...], set[tuple[str, ...]]] = defaultdict(set)
    for dist in md.distributions():
        root = Path(dist.locate_file("")).resolve()
        if root != SITE or not dist.files:
            continue
        name = _norm(dist.metadata["Name"])
        for f in dist.files:
            parts = f.parts
            if not parts or parts[0] == ".." or "__pycache__" in parts:
                continue
            for k in range(1, len(parts) + 1):
                owners[parts[:k]].add(name)
                children[parts[: k - 1]].add(parts[:k])
    wanted = set(dists)
    outside = [n for n, d in dists.items() if Path(d.locate_file("")).resolve() != SITE]
    assert not outside, f"core dependencies not installed in {SITE}: {outside}"

    def link(prefix: tuple[str, ...]) -> None:
        src, dst = SITE.joinpath(*prefix), staging.joinpath(*prefix)
        if not src.exists():
            return
        if owners[prefix] <= wanted or src.is_file():
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.symlink_to(src, target_is_directory=src.is_dir())
        else:
            for child in sorted(children[prefix]):
                if owners[child] & wanted:
                    link(child)

    for top in sorted(children[()]):
        if owners[top] & wanted:
            link(top)


# Run in the fresh venv: import every module of the package, report what failed.
_IMPORT_ALL = r"""
import importlib, json, pkgutil, sys
import xgen_mlir
failures = {}
names = ["xgen_mlir"]
def onerror(name):
    e = sys.exc_info()[1]
    failures[name] = f"{type(e).__name__}: {e}"
for info in pkgutil.walk_packages(xgen_mlir.__path__, "xgen_mlir.", onerror=onerror):
    names.append(info.name)
for name in names:
    if name in failures:
        continue
    try:
        importlib.import_module(name)
    except BaseException as e:
        failures[name] = f"{type(e).__name__}: {e}"
print(json.dumps({"file": xgen_mlir.__file__, "modules": names, "failures": failures}))
"""


def _run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, capture_output=True, text=True, **kw)
    assert proc.returncode == 0, f"{cmd[:4]} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


@pytest.mark.slow
def test_the_wheel_without_extras_imports_every_module(tmp_path):
    # The wheel, built from a copy of the sources (an in-tree build writes build/ and
    # *.egg-info into the checkout); setuptools comes from this venv, not the network.
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md"):
        shutil.copy2(REPO / name, src / name)
    for name in ("python", "pipelines", "dialects"):
        shutil.copytree(
            REPO / name, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info")
        )
    wheels = tmp_path / "wheels"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    _run([*pip, "wheel", str(src), "--no-deps", "--no-build-isolation", "-w", str(wheels)])
    (wheel,) = wheels.glob("xgen_mlir-*.whl")

    # A fresh venv that sees the core dependencies' closure only.
    core = _closure(_core_requirements_of_wheel(wheel))
    staging = tmp_path / "core-deps"
    staging.mkdir()
    _stage(core, staging)
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    py = venv / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env["PYTHONNOUSERSITE"] = "1"
    site = _run([str(py), "-I", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"])
    (Path(site.stdout.strip()) / "xgen_core_deps.pth").write_text(
        f"import site; site.addsitedir({str(staging)!r})\n"
    )
    _run([*pip, "--python", str(py), "install", "--no-deps", "--no-index", str(wheel)], env=env)

    out = _run([str(py), "-I", "-c", _IMPORT_ALL], env=env, cwd=tmp_path).stdout
    report = json.loads(out.strip().splitlines()[-1])
    assert Path(report["file"]).is_relative_to(venv), report["file"]  # not the checkout's
    assert len(report["modules"]) > 50, report["modules"]
    failed = "\n".join(f"  {m}: {e}" for m, e in sorted(report["failures"].items()))
    assert not failed, (
        "modules that do not import after `pip install xgen-mlir` without extras (a package "
        "missing from pyproject.toml's dependencies, or one to import lazily through "
        f"diagnostics.optional_import):\n{failed}"
    )
    # the console scripts run, and find the pipelines the wheel carries
    listed = _run([str(venv / "bin" / "xgen-opt"), "--list-pipelines"], env=env, cwd=tmp_path)
    assert "cpu" in listed.stdout


# -- fast checks of the same rules, from the sources -------------------------------------


def _third_party_module_level_imports(path: Path) -> set[str]:
    """Top-level names of the packages ``path`` imports outside functions (and outside
    ``if TYPE_CHECKING:``), other than the standard library and xgen_mlir itself."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                continue
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                visit_body(child.orelse)
                continue
            if isinstance(child, ast.Import):
                found.update(a.name.split(".")[0] for a in child.names)
            elif isinstance(child, ast.ImportFrom) and not child.level and child.module:
                found.add(child.module.split(".")[0])
            visit(child)

    def visit_body(stmts: list[ast.stmt]) -> None:
        for stmt in stmts:
            visit(ast.Module(body=[stmt], type_ignores=[]))

    visit(ast.parse(path.read_text()))
    return {m for m in found if m not in sys.stdlib_module_names and m != "xgen_mlir"}


def test_module_level_imports_are_core_dependencies():
    core = set(_closure(PYPROJECT["project"]["dependencies"]))
    providers = md.packages_distributions()
    bad = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for mod in sorted(_third_party_module_level_imports(path)):
            dists = {_norm(d) for d in providers.get(mod, [])}
            if not dists & core:
                bad.append(f"{path.relative_to(PACKAGE)}: {mod} (from {sorted(dists) or '?'})")
    assert not bad, (
        "imported at module level but not brought by pyproject.toml's dependencies (declare "
        "it, or import it inside the function through diagnostics.optional_import):\n"
        + "\n".join(bad)
    )


def _extra_requirements(extra: str, seen: frozenset[str] = frozenset()) -> set[str]:
    """The distributions an extra lists, through its references to other extras."""
    out = set()
    for text in PYPROJECT["project"]["optional-dependencies"][extra]:
        req = Requirement(text)
        if _norm(req.name) == "xgen-mlir":
            for sub in req.extras - seen:
                out |= _extra_requirements(sub, seen | {extra})
        else:
            out.add(_norm(req.name))
    return out


def _optional_import_calls() -> list[tuple[str, str, str]]:
    calls = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and getattr(node.func, "id", getattr(node.func, "attr", "")) == "optional_import"
                and len(node.args) >= 2
            ):
                module, extra = (ast.literal_eval(a) for a in node.args[:2])
                calls.append((str(path.relative_to(PACKAGE)), module, extra))
    return calls


def test_every_optional_import_names_an_extra_that_installs_it():
    calls = _optional_import_calls()
    assert {m for _, m, _ in calls} >= {"ray", "lightgbm", "PIL.Image", "transformers"}
    providers = md.packages_distributions()
    extras = PYPROJECT["project"]["optional-dependencies"]
    bad = []
    for where, module, extra in calls:
        if extra not in extras:
            bad.append(f"{where}: {module} names the extra {extra!r}, which pyproject lacks")
            continue
        dists = {_norm(d) for d in providers.get(module.split(".")[0], [])}
        if not dists & _extra_requirements(extra):
            bad.append(f"{where}: the extra {extra!r} does not install {module} ({dists})")
    assert not bad, "\n".join(bad)


def test_the_test_extra_brings_every_other_extra():
    """`make venv` installs `.[test]`: everything the tests, the demo and benchmarks use."""
    test = _extra_requirements("test")
    for extra in PYPROJECT["project"]["optional-dependencies"]:
        assert _extra_requirements(extra) <= test, extra


def _hide(monkeypatch, *modules: str) -> None:
    """Make ``import X`` fail as if X were not installed."""
    for name in list(sys.modules):
        if any(name == m or name.startswith(m + ".") for m in modules):
            monkeypatch.delitem(sys.modules, name)
    for m in modules:
        monkeypatch.setitem(sys.modules, m, None)


def _ray_pool() -> None:
    from xgen_mlir.tuning.workers import RayPool

    RayPool()


def _load_image() -> None:
    from xgen_mlir.models import imagenet

    imagenet.load_image()


def _bert_tiny() -> None:
    from xgen_mlir.models import transformers_zoo

    transformers_zoo.bert_tiny()


@pytest.mark.parametrize(
    ("hidden", "call", "extra"),
    [
        (("ray",), _ray_pool, "tune"),
        (("PIL",), _load_image, "demo"),
        (("sklearn",), _load_image, "demo"),
        (("transformers",), _bert_tiny, "transformers"),
    ],
)
def test_a_missing_optional_package_names_the_extra(monkeypatch, hidden, call, extra):
    _hide(monkeypatch, *hidden)
    with pytest.raises(errors.XGenError) as caught:
        call()
    message = str(caught.value)
    assert f"pip install 'xgen-mlir[{extra}]'" in message, message
    assert repr(hidden[0]) in message, message


def test_the_cost_model_names_the_tune_extra(monkeypatch):
    from xgen_mlir.tuning import cost_model

    _hide(monkeypatch, "lightgbm")
    monkeypatch.setattr(cost_model, "_target", lambda r: 0.0)
    records = [SimpleNamespace(features={"m": float(i)}) for i in range(cost_model.MIN_RECORDS)]
    with pytest.raises(errors.XGenError, match=re.escape("pip install 'xgen-mlir[tune]'")):
        cost_model.CostModel().fit(records)


_RUNTIME_ONLY = r"""
import importlib.abc, json, sys
import numpy as np

BLOCKED = ("torch", "torch_mlir", "iree.compiler", "onnx", "sympy")

class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name in BLOCKED or name.startswith(tuple(b + "." for b in BLOCKED)):
            raise ImportError(f"{name} is not installed on this device")

sys.meta_path.insert(0, Block())
import xgen_mlir

module = xgen_mlir.load(sys.argv[1])
out = module(np.load(sys.argv[2]))
print(json.dumps({"out": np.asarray(out).tolist()}))
try:
    xgen_mlir.compile
except ImportError as e:
    print("compile:", e)
"""


def test_a_device_with_only_the_runtime_loads_and_runs_a_module(tmp_path):
    """The compiler's dependencies (torch, torch-mlir, IREE's compiler, onnx) are imported on
    first use of compile/tune, so a deployment target with IREE's runtime, numpy and
    ml_dtypes alone can `xgen_mlir.load` a module and call it."""
    import numpy as np
    import torch

    model = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.ReLU()).eval()
    x = torch.randn(2, 8)
    path = xgen_mlir.compile(model, (x,)).save(tmp_path / "m.vmfb")
    np.save(tmp_path / "x.npy", x.numpy())
    proc = subprocess.run(
        [sys.executable, "-c", _RUNTIME_ONLY, str(path), str(tmp_path / "x.npy")],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.strip().splitlines()
    got = np.array(json.loads(lines[0])["out"], dtype=np.float32)
    np.testing.assert_allclose(got, model(x).detach().numpy(), rtol=1e-5, atol=1e-5)
    assert lines[1].startswith("compile:") and "not installed" in lines[1]


def test_iree_tools_are_found_in_an_unpacked_runtime_wheel(monkeypatch, tmp_path):
    """A runtime wheel unpacked onto sys.path has no console scripts: the tool binaries inside
    IREE's packages are used."""
    from xgen_mlir._paths import iree_tool

    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    monkeypatch.setenv("PATH", str(tmp_path))
    tool = Path(iree_tool("iree-dump-module"))
    assert tool.is_file() and tool.parent.name == "_runtime_libs", tool
    with pytest.raises(errors.XGenError, match="no-such-tool not found"):
        iree_tool("no-such-tool")
