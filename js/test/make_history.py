"""Write the stores of js/test/history.test.js and the Python reader's answers.

    python make_history.py OUT_DIR

OUT_DIR/history.zarr: 13 months x 2 bands x 21 x 19 uint16, star-delta, mask and coverage, cells
of 8, with the time-series companion (docs/spec.md C25) in time blocks of 4 and blocks of 8 pixels,
grown by an append of 2 months (its open time block rewritten); OUT_DIR/plain.zarr: the same
series without the companion. OUT_DIR/expected.json: for each pixel, the Python reader's
``pixel_series`` from the companion and from the chunks (stored values per band, mask, coverage).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import chronozarr  # noqa: E402

PIXELS = [(0, 0), (20, 18), (9, 13), (15, 2)]


def main(out: Path) -> None:
    rng = np.random.default_rng(7)
    n, h, w = 15, 21, 19
    data = rng.integers(1, 4000, (n, 2, h, w), dtype=np.uint16)
    mask = (rng.random((n, h, w)) > 0.3).astype(np.uint8)
    coverage = rng.integers(0, 9, (n, h, w), dtype=np.uint8)
    times = [f"{2020 + m // 12}-{m % 12 + 1:02d}-01" for m in range(n)]
    kw = dict(
        bands=["red", "nir"], crs="EPSG:32631", transform=[10.0, 0, 500000.0, 0, -10.0, 5100000.0],
        chunk_size=8, encoding="star-delta", anchor_interval=3,
    )  # fmt: skip
    hist = out / "history.zarr"
    chronozarr.encode(
        data[:13], hist, times=times[:13], mask=mask[:13], coverage=coverage[:13], history=True,
        history_time=4, **kw,
    )  # fmt: skip
    chronozarr.append(hist, data[13:], times=times[13:], mask=mask[13:], coverage=coverage[13:])
    chronozarr.encode(data, out / "plain.zarr", times=times, mask=mask, coverage=coverage, **kw)
    reader = chronozarr.open_store(hist)
    expected = []
    for row, col in PIXELS:
        for use in (True, False):
            s = reader.pixel_series(row, col, use_history=use)
            assert (s.stored == data[:, :, row, col]).all()
            expected.append({
                "row": row, "col": col, "source": s.source,
                "stored": s.stored.T.tolist(), "mask": s.mask.tolist(),
                "coverage": s.coverage.tolist(),
            })  # fmt: skip
    (out / "expected.json").write_text(json.dumps({"n_time": n, "pixels": expected}))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
