#!/usr/bin/env bash
# The offline demo, no network needed: generate the synthetic Sentinel-2 STAC catalog (once),
# build the store of recipes/demo.yaml from it, validate the store (deep) and show what was built.
set -euo pipefail
source "$(dirname "$0")/bootstrap.sh" demo
OUT="${1:-out/demo.zarr}"
python -m cz.demo out/demo-catalog
cz build recipes/demo.yaml --out "$OUT" --overwrite
cz validate "$OUT" --deep
cz inspect "$OUT"
