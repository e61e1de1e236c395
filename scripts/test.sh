#!/usr/bin/env bash
# Every test: lint, format check, type check, the Python suite (warnings are errors), the JS suite.
# Installs what it needs; under CI=true also the Debian packages the server/browser tests use.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${CI:-}" = "true" ] && [ "$(id -u)" = "0" ]; then
  if [ -f scripts/apt-packages.txt ]; then
    missing=""
    for p in $(grep -v '^#' scripts/apt-packages.txt); do
      dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
    done
    if [ -n "$missing" ]; then
      apt-get update -qq
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
    fi
  fi
fi
source scripts/bootstrap.sh test
ruff check .
ruff format --check .
# mypy: strict for the format library, default strictness for the toolkit (pyproject.toml
# [tool.mypy]). The folder cli/ installs as the package cz, which mypy cannot see through
# setuptools' editable finder, so it reads cli/ through a link named cz.
mkdir -p .mypy_cache/cz-path && ln -sfn ../../cli .mypy_cache/cz-path/cz
MYPYPATH=.mypy_cache/cz-path mypy -p chronozarr -p cz
if [ -f js/package.json ]; then
  (cd js && { [ -d node_modules ] && [ node_modules -nt package-lock.json ] || npm ci --no-audit --no-fund --loglevel=error; })
fi
# The 20 slowest tests are printed, so a suite drifting towards its 15-minute budget shows why.
# Two workers (pytest-xdist; PYTEST_WORKERS=0 runs one process): the suite spends much of its time
# waiting on subprocesses and servers, which the second worker fills. tests/conftest.py keeps the
# tests that share the session dask cluster (tests/remote/) on one worker (--dist loadgroup) and
# hands the slow tests out first, so the two workers end together. Temporary
# folders go to the checkout's own .pytest-tmp/ (emptied at the start of each run), not to the
# machine's /tmp/pytest-of-USER, whose old folders every run there would otherwise sweep first.
python -m pytest -n "${PYTEST_WORKERS:-2}" --dist loadgroup --basetemp=.pytest-tmp --durations=20 "$@"
if [ -f js/package.json ]; then
  (cd js && npm test)
fi
