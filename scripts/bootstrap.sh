#!/usr/bin/env bash
# Create/refresh the project's virtual environment (.venv) with everything the README's two
# commands need. Idempotent: does nothing when pyproject.toml has not changed since last time.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null || PY=python3
VENV=.venv
STAMP=$VENV/.xgen-bootstrap-stamp
WANT=$(sha256sum pyproject.toml scripts/bootstrap.sh | sha256sum | cut -c1-16)
if [[ -f $STAMP && "$(cat "$STAMP")" == "$WANT" ]]; then
  exit 0
fi
echo "[bootstrap] setting up $VENV (first run downloads ~2.5 GB of wheels)" >&2
[[ -x $VENV/bin/python ]] || "$PY" -m venv "$VENV"
PIP="$VENV/bin/python -m pip install --disable-pip-version-check -q"
# torch first, pinned: anything that asks for an unpinned torch would pull CUDA wheels.
$PIP "torch==2.13.0"
# test brings every other extra (tune, demo, transformers, onednn, bench): the tests, `make demo`
# and benchmarks/ need them all; named here too so that trimming `test` cannot drop one.
$PIP -e ".[test,tune,demo,transformers,onednn,bench]"
NODEPS=$($VENV/bin/python -c 'import tomllib;print(" ".join(tomllib.load(open("pyproject.toml","rb"))["tool"]["xgen"]["no-deps"]["packages"]))')
# shellcheck disable=SC2086
$PIP --no-deps $NODEPS
echo "$WANT" > "$STAMP"
echo "[bootstrap] done" >&2
