"""Deployable bundles: a compiled module with everything needed to run it without xgen_mlir.

A bundle is a folder:

* ``model.vmfb``: the module (``iree-run-module --module=...``);
* ``weights.irpa``: its weights when they were compiled as external parameters
  (``compile(..., external_weights=N)``), run with ``--parameters=model=weights.irpa``;
* ``manifest.json``: entry function, input/output shapes and dtypes, target, target options,
  IREE flags, device, CPU arch, and sha256 of every file (a mismatch is refused);
* ``run.sh``: POSIX sh that checks the module against the manifest and runs stock
  ``iree-run-module`` (``--benchmark``: ``iree-benchmark-module``) with the right flags;
* ``libxgen_<backend>.so``: the executable plugin of each kernel library the module's
  dispatches call (BYOC offload, docs/byoc.md), given to the tools as
  ``--executable_plugin=`` and to ``load_bundle``'s module; beside it the library it links
  where that came from pip (oneDNN's ``libdnnl.so.3``, found through the plugin's ``$ORIGIN``
  rpath; ``carry_libraries=False`` leaves it out); the manifest's ``plugin_requires`` names
  what the device must still have (the system's oneDNN, or the runtimes the carried one
  needs);
* bare-metal targets: the static library (``.o`` + ``.h``) and C module (``_module.c``).

``manifest.json`` is written with one top-level key per line so ``run.sh`` can read the
scalar fields with ``sed`` on devices without Python or jq.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ModuleLoadError, XGenError
from ..fileio import atomic_replace_dir
from .plugins import REFLECTION_KEY as PLUGINS_KEY
from .plugins import carried_libraries, plugin_paths, runtime_library
from .signature import check_entry_name
from .targets import executable_formats, normalize_arch

if TYPE_CHECKING:
    from .module import CompiledModule

FORMAT = "xgen-bundle/1"
MODULE_FILE, PARAMS_FILE, MANIFEST_FILE, RUN_FILE = (
    "model.vmfb",
    "weights.irpa",
    "manifest.json",
    "run.sh",
)
# A file a manifest may name: a plain name in the bundle's folder (no folders, no "..", no
# leading dot); run.sh applies the same rule.
_FILE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
_SHA256 = re.compile(r"[0-9a-f]{64}")
# default_inputs is split into words by run.sh: only --input=1x3x32x32xf32=0 style words.
_DEFAULT_INPUTS = re.compile(r"[A-Za-z0-9_=. -]*")


class BundleMismatchError(ModuleLoadError):
    """A bundle's files do not match its manifest (edited, truncated or mixed up), or its
    manifest is malformed or names files outside the bundle."""


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _versions() -> dict[str, str]:
    from importlib.metadata import version

    out = {}
    for dist in ("iree-base-compiler", "iree-base-runtime", "xgen-mlir"):
        try:
            out[dist] = version(dist)
        except Exception:
            out[dist] = "unknown"
    return out


def _flag_for(spec: Any) -> str:
    dims = [1 if d is None else d for d in spec.shape]
    return "x".join([*map(str, dims), spec.mlir_type[len("tensor<") : -1].split("x")[-1]]) + "=0"


def _write(path: Path, data: bytes, mode: int = 0o644) -> None:
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    path.chmod(mode)


def _replaceable(out: Path) -> None:
    """Saving replaces the whole folder: refuse one that holds anything but a bundle."""
    if not out.is_dir():
        raise XGenError(f"{out}: exists and is not a folder; give a folder for the bundle")
    present = {p.name for p in out.iterdir()}
    if not present:
        return
    ours = {MODULE_FILE, PARAMS_FILE, MANIFEST_FILE, RUN_FILE}
    try:
        listed = json.loads((out / MANIFEST_FILE).read_text()).get("files", {})
        ours |= {n for n in listed if isinstance(n, str)}
    except (OSError, ValueError, AttributeError):
        pass
    ours |= {n + ".sha256" for n in ours}  # module.save() checksums of the bundle's files
    others = sorted(present - ours)
    if others or MANIFEST_FILE not in present:
        shown = ", ".join(others[:5]) + (" ..." if len(others) > 5 else "")
        raise XGenError(
            f"{out}: holds files that are not part of a bundle ({shown or 'no manifest.json'}); "
            f"saving a bundle replaces the whole folder, so give a new or empty folder"
        )


def save_bundle(
    module: CompiledModule, directory: str | os.PathLike[str], carry_libraries: bool = True
) -> Path:
    """Write ``module`` as a bundle in ``directory``, atomically: the files are written to a
    hidden folder beside it, which then takes the place of ``directory`` (an existing bundle
    there is replaced only once the new one is complete; a folder holding other files is
    refused). ``carry_libraries``: copy the shared libraries the BYOC plugins link from
    outside the system (pip's oneDNN, 54 MB) beside them, so that the bundle runs where
    they are not installed."""
    out = Path(directory)
    if out.is_symlink():
        out = out.resolve()
    check_entry_name(module.entry)
    if out.exists():
        _replaceable(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    try:
        _write_bundle(module, tmp, carry_libraries)
        umask = os.umask(0)
        os.umask(umask)
        tmp.chmod(0o777 & ~umask)
        atomic_replace_dir(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


def _add_file(
    out: Path, files: dict[str, str], name: str, data: bytes, mode: int = 0o644, what: str = ""
) -> None:
    """Write one more file of the bundle and list its sha256; a name that is not a plain
    file name, or is taken, is refused."""
    if not _FILE_NAME.fullmatch(name) or name in (MANIFEST_FILE, RUN_FILE) or name in files:
        raise XGenError(f"{what} name {name!r} cannot be a file of a bundle")
    _write(out / name, data, mode)
    files[name] = sha256(data)


def _write_bundle(module: CompiledModule, out: Path, carry_libraries: bool = True) -> None:
    """The bundle's files in ``out``; the manifest last, so a half-written folder has none."""
    info: dict[str, Any] = dict(module.build_info)
    files: dict[str, str] = {}
    _write(out / MODULE_FILE, module.vmfb)
    files[MODULE_FILE] = sha256(module.vmfb)
    params = ""
    if module.parameters is not None:
        data = (
            module.parameters
            if isinstance(module.parameters, bytes)
            else Path(module.parameters).read_bytes()
        )
        _write(out / PARAMS_FILE, data)
        files[PARAMS_FILE] = sha256(data)
        params = PARAMS_FILE
    for name, data in module.artifacts.items():
        _add_file(out, files, name, data, what="artifact")
    plugins: dict[str, str] = {}
    libraries: dict[str, list[str]] = {}  # carried beside each backend's plugin
    needs = module.reflection.get(PLUGINS_KEY, "")
    backends = [n for n in needs.split(",") if n]
    paths = plugin_paths(needs, module.plugins, module.source)
    for backend, path in zip(backends, paths, strict=True):
        name = f"libxgen_{backend}.so"
        _add_file(out, files, name, Path(path).read_bytes(), 0o755, f"plugin of {backend!r}")
        plugins[backend] = name
        for lib in carried_libraries(backend) if carry_libraries else []:
            _add_file(out, files, lib.name, lib.read_bytes(), 0o755, f"library of {backend!r}")
            libraries.setdefault(backend, []).append(lib.name)
    sig = module.signature
    arch = info.get("arch", "host")
    formats = sorted(executable_formats(module.vmfb))
    manifest = {
        "format": FORMAT,
        "module": MODULE_FILE,
        "module_sha256": files[MODULE_FILE],
        "parameters": params,
        "parameters_scope": module.parameters_scope if params else "",
        "entry": module.entry,
        "target": module.target,
        "device": module.device,
        "arch": "none" if arch == "none" else normalize_arch(arch),
        "emulator": info.get("emulator", ""),
        "default_inputs": " ".join(f"--input={_flag_for(s)}" for s in sig.inputs) if sig else "",
        "inputs": [_spec(s) for s in sig.inputs] if sig else [],
        "outputs": [_spec(s) for s in sig.outputs] if sig else [],
        "target_options": dict(info.get("target_options", {})),
        "iree_flags": list(info.get("iree_flags", [])),
        "executable_formats": formats,
        # the CPU the module's code was compiled for (load() refuses a host that lacks one)
        "cpu_features": module.cpu_features,
        # BYOC: executable plugin files by backend, the same as one line for run.sh, the
        # libraries carried beside them, and what they load that must be installed where
        # the bundle runs
        "plugins": plugins,
        "executable_plugins": " ".join(plugins.values()),
        "plugin_libraries": libraries,
        "plugin_requires": "; ".join(
            filter(None, (runtime_library(b, carried=b in libraries) for b in plugins))
        ),
        "files": files,
        "versions": _versions(),
    }
    _write(out / RUN_FILE, _RUN_SH.encode(), 0o755)
    _write(out / MANIFEST_FILE, (json.dumps(manifest, indent=2) + "\n").encode())


def _spec(s: Any) -> dict[str, Any]:
    dtype = s.dtype.name if s.dtype is not None else None
    shape = [d if d is not None else -1 for d in s.shape]
    return {"shape": shape, "dtype": dtype, "mlir_type": s.mlir_type}


# -- reading: every field a reader uses is checked before it is used --------------------------
_REQUIRED: dict[str, type | tuple[type, ...]] = {
    "format": str,
    "module": str,
    "module_sha256": str,
    "parameters": str,
    "entry": str,
    "files": dict,
    "inputs": list,
}
_OPTIONAL: dict[str, type | tuple[type, ...]] = {
    "parameters_scope": str,
    "target": str,
    "device": str,
    "arch": str,
    "emulator": str,
    "default_inputs": str,
    "outputs": list,
    "target_options": dict,
    "iree_flags": list,
    "executable_formats": list,
    "cpu_features": str,
    "versions": dict,
    "plugins": dict,
    "executable_plugins": str,
    "plugin_libraries": dict,
    "plugin_requires": str,
}
_JSON_TYPES = {dict: "an object", list: "a list", str: "a string", int: "a number"}


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, float):
        return "a number"
    return _JSON_TYPES.get(type(value), type(value).__name__)


def check_file_name(name: Any, what: str, path: Path) -> str:
    """A file name from a manifest: a plain name inside the bundle, else BundleMismatchError."""
    if not isinstance(name, str) or not name:
        raise BundleMismatchError(f"{path}: {what} must be a file name, got {name!r}")
    if name.startswith(("/", "\\")) or re.match(r"[A-Za-z]:[\\/]", name):
        raise BundleMismatchError(f"{path}: {what} {name!r} is an absolute path; refused")
    if ".." in re.split(r"[\\/]", name):
        raise BundleMismatchError(f"{path}: {what} {name!r} points outside the bundle; refused")
    if not _FILE_NAME.fullmatch(name):
        raise BundleMismatchError(
            f"{path}: {what} {name!r} is not a plain file name in the bundle's folder "
            f"(letters, digits, '_', '.', '-'); refused"
        )
    return name


def _check_manifest(manifest: Any, path: Path) -> dict[str, Any]:
    if not isinstance(manifest, dict):
        raise BundleMismatchError(
            f"{path}: the manifest must be a JSON object, got {_json_kind(manifest)}"
        )
    if manifest.get("format") != FORMAT:
        raise BundleMismatchError(
            f"{path}: unknown bundle format {manifest.get('format')!r} (expected {FORMAT!r})"
        )
    missing = [k for k in _REQUIRED if k not in manifest]
    if missing:
        raise BundleMismatchError(f"{path}: missing key(s) {', '.join(map(repr, missing))}")
    for key, kind in {**_REQUIRED, **_OPTIONAL}.items():
        if key in manifest and not isinstance(manifest[key], kind):
            want = _JSON_TYPES.get(kind, str(kind)) if isinstance(kind, type) else str(kind)
            raise BundleMismatchError(
                f"{path}: {key!r} must be {want}, got {_json_kind(manifest[key])}"
            )
    files = manifest["files"]
    for name, digest in files.items():
        check_file_name(name, "file", path)
        if not isinstance(digest, str) or not _SHA256.fullmatch(digest):
            raise BundleMismatchError(
                f"{path}: files[{name!r}] must be a sha256 (64 hex digits), got {digest!r}"
            )
    module = check_file_name(manifest["module"], "'module'", path)
    if files.get(module) != manifest["module_sha256"]:
        raise BundleMismatchError(
            f"{path}: the module {module!r} must be listed in 'files' with its "
            f"module_sha256; it is {'listed with another sha256' if module in files else 'not'}"
        )
    if manifest["parameters"]:
        params = check_file_name(manifest["parameters"], "'parameters'", path)
        if params not in files:
            raise BundleMismatchError(f"{path}: parameters {params!r} is not listed in 'files'")
    plugin_files = list(manifest.get("plugins", {}).values())
    if manifest.get("executable_plugins", "").split() != plugin_files:
        raise BundleMismatchError(
            f"{path}: 'executable_plugins' must list the files of 'plugins', in order"
        )
    for backend, name in manifest.get("plugins", {}).items():
        check_file_name(name, f"plugins[{backend!r}]", path)
        if name not in files:
            raise BundleMismatchError(f"{path}: plugin {name!r} is not listed in 'files'")
    for backend, names in manifest.get("plugin_libraries", {}).items():
        if backend not in manifest.get("plugins", {}) or not isinstance(names, list):
            raise BundleMismatchError(
                f"{path}: plugin_libraries[{backend!r}] must be a list of files of a plugin's"
                " backend"
            )
        for name in names:
            check_file_name(name, f"plugin_libraries[{backend!r}]", path)
            if name not in files:
                raise BundleMismatchError(f"{path}: library {name!r} is not listed in 'files'")
    try:
        check_entry_name(manifest["entry"])
    except XGenError as e:
        raise BundleMismatchError(f"{path}: {e}") from None
    for i, spec in enumerate(manifest["inputs"]):
        ok = (
            isinstance(spec, dict)
            and isinstance(spec.get("shape"), list)
            and all(isinstance(d, int) and not isinstance(d, bool) for d in spec["shape"])
            and isinstance(spec.get("mlir_type"), str)
        )
        if not ok:
            raise BundleMismatchError(
                f"{path}: inputs[{i}] must be an object with 'shape' (list of integers) and "
                f"'mlir_type' (string), got {json.dumps(spec)[:120]}"
            )
    if not _DEFAULT_INPUTS.fullmatch(manifest.get("default_inputs", "")):
        raise BundleMismatchError(f"{path}: 'default_inputs' holds characters run.sh refuses")
    if not re.fullmatch(r"[a-z0-9_]*", manifest.get("arch", "")):
        raise BundleMismatchError(f"{path}: 'arch' {manifest.get('arch')!r} is not an arch name")
    return manifest


def read_manifest(directory: str | os.PathLike[str]) -> dict[str, Any]:
    """The bundle's manifest, checked: a JSON object with every key a reader needs, of the
    right type, naming only plain files inside the bundle; else BundleMismatchError."""
    path = Path(directory) / MANIFEST_FILE
    if not path.is_file():
        raise ModuleLoadError(f"{directory}: not a bundle (no {MANIFEST_FILE})")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise BundleMismatchError(f"{path}: cannot read: {e}") from None
    try:
        manifest = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as e:
        raise BundleMismatchError(f"{path}: not valid JSON: {e}") from None
    return _check_manifest(manifest, path)


def _bundle_file(directory: Path, name: str) -> Path:
    """``directory/name``, refusing a symbolic link (a bundle holds its own files)."""
    path = directory / name
    if path.is_symlink():
        root = directory.resolve()
        target = path.resolve()
        where = "outside the bundle" if not target.is_relative_to(root) else "inside the bundle"
        raise BundleMismatchError(
            f"{path}: is a symbolic link (to {target}, {where}); a bundle holds its own files, "
            f"copy it with its files (cp -rL)"
        )
    if not path.is_file():
        raise BundleMismatchError(f"{directory}: manifest lists {name}, which is missing")
    return path


def verify_bundle(directory: str | os.PathLike[str]) -> dict[str, Any]:
    """Check every file of a bundle against its manifest; returns the manifest."""
    directory = Path(directory)
    manifest = read_manifest(directory)
    for name, want in manifest["files"].items():
        path = _bundle_file(directory, name)
        got = _sha256_file(path)
        if got != want:
            raise BundleMismatchError(
                f"{path}: does not match {MANIFEST_FILE} (sha256 {got[:12]}..., manifest says "
                f"{want[:12]}...): the module or manifest was replaced; re-export the bundle"
            )
    return manifest


def load_bundle(
    directory: str | os.PathLike[str],
    device: str | None = None,
    isolated: bool = False,
    call_timeout: float | None = None,
) -> CompiledModule:
    """Load a bundle (every file checked against its manifest) into the Python runtime.
    ``isolated=True`` (and ``call_timeout``): calls run in a child process, as with
    ``load(..., isolated=True)``."""
    from .module import CompiledModule

    directory = Path(directory)
    manifest = verify_bundle(directory)
    module_path = _bundle_file(directory, manifest["module"])
    data = module_path.read_bytes()
    if sha256(data) != manifest["module_sha256"]:  # replaced since it was checked
        raise BundleMismatchError(f"{module_path}: changed while the bundle was being loaded")
    try:  # iree-dump-module, in its own process, verifies the flatbuffer first
        executable_formats(data)
    except ModuleLoadError as e:
        raise ModuleLoadError(f"{module_path}: {e}") from None
    params = manifest["parameters"] or None
    plugins = {
        backend: str(_bundle_file(directory, name))
        for backend, name in manifest.get("plugins", {}).items()
    }
    module = CompiledModule(
        data,
        entry=manifest["entry"],
        device=device or manifest.get("device"),
        target=manifest.get("target", "cpu"),
        source=str(module_path),
        parameters=_bundle_file(directory, params) if params else None,
        parameters_scope=manifest.get("parameters_scope") or "model",
        isolated=isolated,
        call_timeout=call_timeout,
        plugins=plugins,
    )
    module.build_info = {
        k: manifest.get(k) for k in ("arch", "emulator", "target_options", "iree_flags")
    }
    module.check_cpu_features()  # compiled for CPU features this host lacks: refused here
    sig = module.signature
    assert sig is not None  # CompiledModule refuses a module whose signature it cannot read
    want = [(tuple(-1 if d is None else d for d in s.shape), s.mlir_type) for s in sig.inputs]
    have = [(tuple(s["shape"]), s["mlir_type"]) for s in manifest["inputs"]]
    if want != have:
        raise BundleMismatchError(
            f"{directory}: manifest inputs {have} differ from the module's signature {want}"
        )
    return module


__all__ = ["BundleMismatchError", "load_bundle", "read_manifest", "save_bundle", "verify_bundle"]

# The bundle's own runner: POSIX sh + sed + sha256sum (or shasum), stock IREE tools. Every
# path is quoted (a bundle may live in a folder with spaces); every manifest value is checked
# before it is used; every file the manifest lists is checked against its sha256 first.
_RUN_SH = r"""#!/bin/sh
# Run this xgen_mlir bundle with stock IREE tools; no Python needed.
#   ./run.sh [--benchmark] [iree-run-module flags, e.g. --input=@x.npy --output=@y.npy]
# Tools: $IREE_RUN_MODULE / $IREE_BENCHMARK_MODULE, else $IREE_TOOLS_DIR/, else PATH.
# $IREE_EMULATOR (e.g. "qemu-aarch64-static -L /usr/aarch64-linux-gnu") prefixes the tool.
# Executable plugins (BYOC offload: manifest.json's executable_plugins) go to the tool as
# --executable_plugin=; the libraries they load (plugin_requires) must be installed here.
# Before running, every file listed in manifest.json is checked against its sha256 (exit 3).
set -eu
set -f  # manifest values are never glob patterns
here=$(cd "$(dirname "$0")" && pwd)
manifest="$here/manifest.json"
die() { code=$1; shift; echo "error: $*" >&2; exit "$code"; }
[ -f "$manifest" ] || die 3 "$manifest: missing"
field() { sed -n "s/^  \"$1\": \"\(.*\)\",\{0,1\}\$/\1/p" "$manifest" | head -n 1; }
if command -v sha256sum >/dev/null 2>&1; then digest() { sha256sum < "$1" | cut -d' ' -f1; }
elif command -v shasum >/dev/null 2>&1; then digest() { shasum -a 256 < "$1" | cut -d' ' -f1; }
else die 6 "neither sha256sum nor shasum is installed: cannot check the bundle's files"; fi
plain_name() { case "$1" in ""|.*|*[!A-Za-z0-9_.-]*) return 1 ;; esac; return 0; }
check() {  # NAME SHA256: a plain file of this folder with that content
  plain_name "$1" || die 3 "manifest.json names '$1', which is not a plain file name in the" \
    "bundle (an absolute path, ../ or other characters): refused"
  f="$here/$1"
  [ ! -L "$f" ] || die 3 "$f: is a symbolic link; a bundle holds its own files (copy with cp -rL)"
  [ -f "$f" ] || die 3 "$f: listed in manifest.json but missing"
  got=$(digest "$f")
  [ "$got" = "$2" ] || die 3 "$f does not match manifest.json (sha256 $got, manifest says $2);" \
    "the module or manifest was replaced: re-export the bundle"
}
listed=" "
entries='s/^    "\(.*\)": "\([0-9a-f]\{64\}\)",\{0,1\}$/\1 \2/p'
files=$(sed -n "/^  \"files\": {\$/,/^  }/$entries" "$manifest")
while IFS= read -r line; do
  [ -n "$line" ] || continue
  check "${line% *}" "${line##* }"
  listed="$listed${line% *} "
done <<EOF_FILES
$files
EOF_FILES
name=$(field module)
is_listed() { case "$listed" in *" $1 "*) return 0 ;; esac; return 1; }
plain_name "$name" || die 3 "manifest.json: module '$name' is not a plain file name: refused"
is_listed "$name" || die 3 "manifest.json: module '$name' is not among its checked files"
module="$here/$name"
check "$name" "$(field module_sha256)"
params=$(field parameters)
if [ -n "$params" ]; then
  is_listed "$params" || die 3 "manifest.json: parameters '$params' are not among its checked files"
fi
entry=$(field entry)
case "$entry" in ""|[!A-Za-z_]*|*[!A-Za-z0-9_.\$-]*)
  die 3 "manifest.json: bad entry name '$entry'" ;; esac
mode=run
if [ "${1:-}" = "--benchmark" ]; then mode=benchmark; shift; fi
tooldir=${IREE_TOOLS_DIR:+$IREE_TOOLS_DIR/}
if [ "$mode" = benchmark ]; then tool=${IREE_BENCHMARK_MODULE:-${tooldir}iree-benchmark-module}
else tool=${IREE_RUN_MODULE:-${tooldir}iree-run-module}; fi
inputs=$(field default_inputs)
case "$inputs" in *[!A-Za-z0-9_=.\ -]*)
  die 3 "manifest.json: default_inputs holds characters other than flags" ;; esac
case " $* " in *" --input"*) inputs="" ;; esac
# shellcheck disable=SC2086  # the default --input= flags are a word list (checked above)
set -- $inputs "$@"
if [ -n "$params" ]; then set -- "--parameters=$(field parameters_scope)=$here/$params" "$@"; fi
for plugin in $(field executable_plugins); do
  plain_name "$plugin" || die 3 "manifest.json: plugin '$plugin' is not a plain file name: refused"
  is_listed "$plugin" || die 3 "manifest.json: plugin '$plugin' is not among its checked files"
  set -- "--executable_plugin=$here/$plugin" "$@"
done
case " $* " in *" --device="*) ;; *) set -- "--device=$(field device)" "$@" ;; esac
# shellcheck disable=SC2086  # $IREE_EMULATOR is a word list
exec ${IREE_EMULATOR:-} "$tool" --module="$module" --function="$entry" "$@"
"""
