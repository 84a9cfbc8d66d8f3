#!/usr/bin/env bash
# Time a compiled module with stock iree-benchmark-module (Google-benchmark output).
#
#   runtime_bridge/benchmark_vmfb.sh model.vmfb --input=1x3x224x224xf32=0.5 [--function=main]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=runtime_bridge/find_tools.sh
source "$here/find_tools.sh"
[[ $# -ge 1 ]] || { echo "usage: $0 MODULE.vmfb [iree-benchmark-module flags...]" >&2; exit 2; }
module="$1"; shift
[[ -f "$module" ]] || { echo "error: $module: no such file" >&2; exit 2; }
args=("--module=$module" "--benchmark_repetitions=${REPS:-5}")
[[ " $* " == *" --function="* ]] || args+=("--function=main")
[[ " $* " == *" --device="* ]] || args+=("--device=local-task")
exec "$(iree_tool iree-benchmark-module)" "${args[@]}" "$@"
