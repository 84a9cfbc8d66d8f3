#!/usr/bin/env bash
# Run (or benchmark) an xgen_mlir bundle with stock IREE tools -- no xgen_mlir Python package.
#
#   runtime_bridge/run_bundle.sh [--benchmark] BUNDLE_DIR [iree-run-module flags...]
#   runtime_bridge/run_bundle.sh out/arm64-mlp --input=@x.npy --output=@y.npy
#
# Reads BUNDLE_DIR/manifest.json (sed, no jq/Python), refuses a module that does not match it,
# adds --function/--device/--parameters, and picks the tools for the bundle's CPU arch:
#   host arch          -> iree-run-module from $IREE_TOOLS_DIR, the project's .venv, or PATH
#   another arch (aarch64 on x86-64) -> that arch's stock tools ($IREE_TOOLS_DIR_AARCH64, or the
#                         cache filled by runtime_bridge/fetch_runtime.sh) under qemu user mode
# The actual run is the bundle's own run.sh, which works on a device by itself.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=runtime_bridge/find_tools.sh
source "$here/find_tools.sh"
mode=()
if [[ "${1:-}" == "--benchmark" ]]; then mode=(--benchmark); shift; fi
[[ $# -ge 1 ]] || { echo "usage: $0 [--benchmark] BUNDLE_DIR [iree-run-module flags...]" >&2; exit 2; }
bundle="$1"; shift
[[ -f "$bundle/manifest.json" && -f "$bundle/run.sh" ]] || {
  echo "error: $bundle: not a bundle (needs manifest.json and run.sh; write one with" \
       "module.save_bundle(DIR) or xgen-compile --bundle DIR)" >&2; exit 2; }
field() { sed -n "s/^  \"$1\": \"\(.*\)\",\{0,1\}\$/\1/p" "$bundle/manifest.json" | head -n 1; }
arch="$(field arch)"
# The arch names a variable below (${!dir_var}): only a plain name may get that far.
[[ "$arch" =~ ^[a-z0-9_]*$ ]] || {
  echo "error: $bundle/manifest.json: arch '$arch' is not an arch name: refused" >&2; exit 3; }
host="$(uname -m)"; [[ "$host" == arm64 ]] && host=aarch64
case "$(field target)" in embedded)
  echo "error: $bundle is a bare-metal bundle (static library + C module): link model.o," \
       "model.h and model_module.c into firmware with IREE's runtime; it does not run here" >&2
  exit 4 ;;
esac
tool=iree-run-module; [[ ${#mode[@]} -gt 0 ]] && tool=iree-benchmark-module
if [[ "$arch" == none || "$arch" == "$host" ]]; then
  path="$(iree_tool "$tool")"
else
  upper="$(echo "$arch" | tr '[:lower:]' '[:upper:]')"
  dir_var="IREE_TOOLS_DIR_$upper"
  dir="${!dir_var:-$here/../.venv/cache/iree-runtime-$arch/iree/_runtime_libs}"
  path="$dir/$tool"
  if [[ ! -x "$path" ]]; then
    if [[ "$arch" == aarch64 ]]; then
      echo "error: no $arch $tool in $dir; run runtime_bridge/fetch_runtime.sh $arch" \
           "(downloads IREE's $arch runtime wheel from PyPI) or set $dir_var" >&2
    else
      echo "error: no $arch $tool here: PyPI has no IREE runtime wheel for $arch; build IREE's" \
           "runtime for $arch (cmake -DIREE_BUILD_COMPILER=OFF, $arch toolchain) and set" \
           "$dir_var to the folder holding $tool, or run the bundle's run.sh on the device" >&2
    fi
    exit 5
  fi
  qemu="$(command -v "qemu-$arch-static" || command -v "qemu-$arch" || true)"
  sysroot="/usr/$arch-linux-gnu"
  [[ -n "$qemu" && -d "$sysroot" ]] || {
    pkg=arm64; [[ "$arch" == riscv64 ]] && pkg=riscv64
    echo "error: running $arch code on this $host machine needs qemu user mode and a $arch" \
         "sysroot: apt-get install qemu-user-static libc6-$pkg-cross libstdc++6-$pkg-cross" >&2
    exit 5; }
  export IREE_EMULATOR="$qemu -L $sysroot"
fi
if [[ ${#mode[@]} -gt 0 ]]; then export IREE_BENCHMARK_MODULE="$path"; else export IREE_RUN_MODULE="$path"; fi
exec sh "$bundle/run.sh" "${mode[@]}" "$@"
