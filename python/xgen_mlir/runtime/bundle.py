"""Deployable bundles: a compiled module with everything needed to run it without xgen_mlir.

A bundle is a folder:

* ``model.vmfb``: the module (``iree-run-module --module=...``);
* ``weights.irpa``: its weights when they were compiled as external parameters
  (``compile(..., external_weights=N)``), run with ``--parameters=model=weights.irpa``;
* ``manifest.json``: entry function, input/output shapes and dtypes, target, target options,
  IREE flags, device, CPU arch, and sha256 of every file (a mismatch is refused);
* ``run.sh``: POSIX sh that checks the module against the manifest and runs stock
  ``iree-run-module`` (``--benchmark``: ``iree-benchmark-module``) with the right flags;
* bare-metal targets: the static library (``.o`` + ``.h``) and C module (``_module.c``).

``manifest.json`` is written with one top-level key per line so ``run.sh`` can read the
scalar fields with ``sed`` on devices without Python or jq.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ModuleLoadError
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


class BundleMismatchError(ModuleLoadError):
    """A bundle's files do not match its manifest (edited, truncated or mixed up)."""


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


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


def save_bundle(module: CompiledModule, directory: str | os.PathLike[str]) -> Path:
    """Write ``module`` as a bundle in ``directory`` (created; existing bundle files replaced)."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    info: dict[str, Any] = dict(module.build_info)
    files: dict[str, str] = {}
    (out / MODULE_FILE).write_bytes(module.vmfb)
    files[MODULE_FILE] = sha256(module.vmfb)
    params = ""
    if module.parameters is not None:
        data = (
            module.parameters
            if isinstance(module.parameters, bytes)
            else Path(module.parameters).read_bytes()
        )
        (out / PARAMS_FILE).write_bytes(data)
        files[PARAMS_FILE] = sha256(data)
        params = PARAMS_FILE
    elif (out / PARAMS_FILE).exists():
        (out / PARAMS_FILE).unlink()
    for name, data in module.artifacts.items():
        (out / name).write_bytes(data)
        files[name] = sha256(data)
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
        "files": files,
        "versions": _versions(),
    }
    (out / MANIFEST_FILE).write_text(json.dumps(manifest, indent=2) + "\n")
    run = out / RUN_FILE
    run.write_text(_RUN_SH)
    run.chmod(0o755)
    return out


def _spec(s: Any) -> dict[str, Any]:
    dtype = s.dtype.name if s.dtype is not None else None
    shape = [d if d is not None else -1 for d in s.shape]
    return {"shape": shape, "dtype": dtype, "mlir_type": s.mlir_type}


def read_manifest(directory: str | os.PathLike[str]) -> dict[str, Any]:
    path = Path(directory) / MANIFEST_FILE
    if not path.is_file():
        raise ModuleLoadError(f"{directory}: not a bundle (no {MANIFEST_FILE})")
    try:
        manifest = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise BundleMismatchError(f"{path}: not valid JSON: {e}") from None
    if manifest.get("format") != FORMAT:
        raise BundleMismatchError(f"{path}: unknown bundle format {manifest.get('format')!r}")
    return manifest


def verify_bundle(directory: str | os.PathLike[str]) -> dict[str, Any]:
    """Check every file of a bundle against its manifest; returns the manifest."""
    directory = Path(directory)
    manifest = read_manifest(directory)
    for name, want in manifest.get("files", {}).items():
        path = directory / name
        if not path.is_file():
            raise BundleMismatchError(f"{directory}: manifest lists {name}, which is missing")
        got = sha256(path.read_bytes())
        if got != want:
            raise BundleMismatchError(
                f"{path}: does not match {MANIFEST_FILE} (sha256 {got[:12]}..., manifest says "
                f"{want[:12]}...): the module or manifest was replaced; re-export the bundle"
            )
    if manifest["files"].get(manifest["module"]) != manifest["module_sha256"]:
        raise BundleMismatchError(f"{directory}: manifest's module_sha256 disagrees with files")
    return manifest


def load_bundle(directory: str | os.PathLike[str], device: str | None = None) -> CompiledModule:
    """Load a bundle (checked against its manifest) into the Python runtime."""
    from .module import CompiledModule

    directory = Path(directory)
    manifest = verify_bundle(directory)
    params = manifest.get("parameters") or None
    module = CompiledModule(
        (directory / manifest["module"]).read_bytes(),
        entry=manifest["entry"],
        device=device or manifest.get("device"),
        target=manifest.get("target", "cpu"),
        source=str(directory / manifest["module"]),
        parameters=directory / params if params else None,
        parameters_scope=manifest.get("parameters_scope") or "model",
    )
    module.build_info = {
        k: manifest.get(k) for k in ("arch", "emulator", "target_options", "iree_flags")
    }
    want = (
        [
            (tuple(-1 if d is None else d for d in s.shape), s.mlir_type)
            for s in module.signature.inputs
        ]
        if module.signature
        else None
    )
    have = [(tuple(s["shape"]), s["mlir_type"]) for s in manifest.get("inputs", [])]
    if want is not None and want != have:
        raise BundleMismatchError(
            f"{directory}: manifest inputs {have} differ from the module's signature {want}"
        )
    return module


__all__ = ["BundleMismatchError", "load_bundle", "read_manifest", "save_bundle", "verify_bundle"]

# The bundle's own runner: POSIX sh + sed + sha256sum (or shasum), stock IREE tools.
_RUN_SH = r"""#!/bin/sh
# Run this xgen_mlir bundle with stock IREE tools; no Python needed.
#   ./run.sh [--benchmark] [iree-run-module flags, e.g. --input=@x.npy --output=@y.npy]
# Tools: $IREE_RUN_MODULE / $IREE_BENCHMARK_MODULE, else $IREE_TOOLS_DIR/, else PATH.
# $IREE_EMULATOR (e.g. "qemu-aarch64-static -L /usr/aarch64-linux-gnu") prefixes the tool.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
field() { sed -n "s/^  \"$1\": \"\(.*\)\",\{0,1\}\$/\1/p" "$here/manifest.json" | head -n 1; }
mode=run
if [ "${1:-}" = "--benchmark" ]; then mode=benchmark; shift; fi
module="$here/$(field module)"
want=$(field module_sha256)
[ -f "$module" ] || { echo "error: $module: missing" >&2; exit 3; }
if command -v sha256sum >/dev/null 2>&1; then got=$(sha256sum "$module" | cut -d' ' -f1)
else got=$(shasum -a 256 "$module" | cut -d' ' -f1); fi
if [ "$got" != "$want" ]; then
  echo "error: $module does not match manifest.json (sha256 $got, manifest says $want);" \
       "the module or manifest was replaced: re-export the bundle" >&2
  exit 3
fi
tooldir=${IREE_TOOLS_DIR:+$IREE_TOOLS_DIR/}
if [ "$mode" = benchmark ]; then tool=${IREE_BENCHMARK_MODULE:-${tooldir}iree-benchmark-module}
else tool=${IREE_RUN_MODULE:-${tooldir}iree-run-module}; fi
params=$(field parameters)
case " $* " in *" --input"*) inputs="" ;; *) inputs=$(field default_inputs) ;; esac
case " $* " in *" --device="*) device="" ;; *) device="--device=$(field device)" ;; esac
# shellcheck disable=SC2086  # $inputs / $IREE_EMULATOR are word lists
exec ${IREE_EMULATOR:-} "$tool" --module="$module" --function="$(field entry)" $device \
  ${params:+--parameters=$(field parameters_scope)=$here/$params} $inputs "$@"
"""
