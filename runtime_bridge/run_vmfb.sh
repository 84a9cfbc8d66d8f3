#!/usr/bin/env bash
# Run a compiled xgen_mlir module with stock IREE tools -- no xgen_mlir Python package needed.
#
#   runtime_bridge/run_vmfb.sh model.vmfb [--function=main] [--device=local-task] \
#       --input=1x3x224x224xf32=0.5 [--input=@x.npy] [--output=@y.npy]
#
# Uses IREE_TOOLS_DIR, else the project's .venv, else iree-run-module on PATH.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=runtime_bridge/find_tools.sh
source "$here/find_tools.sh"
[[ $# -ge 1 ]] || { echo "usage: $0 MODULE.vmfb [iree-run-module flags...]" >&2; exit 2; }
module="$1"; shift
[[ -f "$module" ]] || { echo "error: $module: no such file" >&2; exit 2; }
args=("--module=$module")
[[ " $* " == *" --function="* ]] || args+=("--function=main")
[[ " $* " == *" --device="* ]] || args+=("--device=local-task")
exec "$(iree_tool iree-run-module)" "${args[@]}" "$@"
