# Locate a stock IREE runtime tool: $IREE_TOOLS_DIR, the project's .venv, then PATH.
iree_tool() {
  local name="$1" root
  root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  for cand in "${IREE_TOOLS_DIR:-}/$name" "$root/.venv/bin/$name"; do
    [[ -x "$cand" ]] && { echo "$cand"; return; }
  done
  command -v "$name" || {
    echo "error: $name not found; pip install iree-base-runtime==3.13.* or set IREE_TOOLS_DIR" >&2
    return 1
  }
}
