#!/usr/bin/env bash
# Build the bundled map viewer (js/tools/build-viewer.mjs) into cli/_viewer/, the copy that ships in
# the wheel, so `cz share` and `cz preview` work after a plain `pip install chronozarr-tools[cli]` (no Node).
# tests/cz/look/test_viewer_vendored.py fails when the copy is stale: re-run this after a viewer change.
set -euo pipefail
cd "$(dirname "$0")/.."
(cd js && { [ -d node_modules ] || npm ci --no-audit --no-fund --loglevel=error; })
rm -rf cli/_viewer
node js/tools/build-viewer.mjs cli/_viewer
