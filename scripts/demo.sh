#!/usr/bin/env bash
# The offline demo: build a store from the bundled demo, validate it (deep) and show what was built.
set -euo pipefail
source "$(dirname "$0")/bootstrap.sh" demo
OUT="${1:-out/demo.zarr}"
python -m cz.demo "$OUT"
cz validate "$OUT" --deep
cz inspect "$OUT"
