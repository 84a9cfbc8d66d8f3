#!/usr/bin/env bash
# Fetch IREE's stock runtime tools (iree-run-module, iree-benchmark-module, ...) built for
# another CPU arch from PyPI's iree-base-runtime wheel, into .venv/cache/iree-runtime-ARCH/.
#
#   runtime_bridge/fetch_runtime.sh aarch64
#
# PyPI carries wheels for x86_64 and aarch64 only; for riscv64 build IREE's runtime yourself.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
arch="${1:?usage: $0 ARCH (aarch64)}"
[[ "$arch" == arm64 ]] && arch=aarch64
[[ "$arch" == aarch64 ]] || { echo "error: no iree-base-runtime wheel for $arch on PyPI" >&2; exit 2; }
py="$root/.venv/bin/python"; [[ -x "$py" ]] || py=python3
version="$("$py" -c 'from importlib.metadata import version; print(version("iree-base-runtime"))' 2>/dev/null || echo 3.13.0)"
cache="${XGEN_TOOLS_CACHE:-$root/.venv/cache}/iree-runtime-$arch"
mkdir -p "$cache"
if [[ ! -x "$cache/iree/_runtime_libs/iree-run-module" ]]; then
  "$py" -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.11 \
    --platform "manylinux_2_28_$arch" "iree-base-runtime==$version" -d "$cache"
  "$py" - "$cache" <<'PY'
import sys, zipfile, pathlib
cache = pathlib.Path(sys.argv[1])
wheel = sorted(cache.glob("iree_base_runtime-*.whl"))[-1]
with zipfile.ZipFile(wheel) as z:
    for m in z.namelist():
        if m.startswith("iree/_runtime_libs/iree-"):
            z.extract(m, cache); (cache / m).chmod(0o755)
PY
fi
echo "$cache/iree/_runtime_libs"
