#!/usr/bin/env bash
# The offline demo, no network needed: generate the synthetic Sentinel-2 STAC catalog (once),
# build the store of recipes/demo.yaml from it, validate the store (deep), show what was built,
# and draw a quicklook PNG of one month.
set -euo pipefail
source "$(dirname "$0")/bootstrap.sh" demo
OUT="${1:-out/demo.zarr}"
python -m cz.demo out/demo-catalog
cz build recipes/demo.yaml --out "$OUT" --overwrite
cz validate "$OUT" --deep
cz inspect "$OUT"
cz quicklook "$OUT" --time 2023-06 --out "${OUT%.zarr}-2023-06.png"
echo "look at it in a browser:  cz preview $OUT"
echo "  (the viewer: cd js && npm ci && npm run build:viewer; a source checkout also serves examples/viewer/)"
