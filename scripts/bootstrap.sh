#!/usr/bin/env bash
# Install what the demo and the tests need into ./.venv (idempotent: re-runs only when
# pyproject.toml or js/package-lock.json changed). Sourced by scripts/demo.sh and scripts/test.sh.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
STAMP=.venv/.chronozarr-installed
WANT="$(cat pyproject.toml | sha256sum | cut -c1-16)-${1:-demo}"
if [ ! -f "$STAMP" ] || ! grep -qx "$WANT" "$STAMP"; then
  .venv/bin/python -m pip install -q --upgrade pip
  # the full set: the bare `pip install chronozarr-tools` is the format library alone (pyproject.toml)
  if [ "${1:-demo}" = "test" ]; then
    .venv/bin/python -m pip install -q -e ".[all,test]"
  else
    .venv/bin/python -m pip install -q -e ".[all]"
  fi
  echo "$WANT" > "$STAMP"
fi
export PATH="$ROOT/.venv/bin:$PATH"
