"""Pinned bytes: the writer and append produce exactly the objects they produced when pinned.

A restructure of ``chronozarr`` (decision 0006) must not change one written byte. Each case below
builds a small store with the public API; the sha256 of every object (relative path -> hash) is
compared with ``bytes_pinned.json`` beside this file. The cases cover both encodings (and the
``auto`` choice), sharded and unsharded layouts, mask and coverage planes, every data dtype
(uint8/uint16/int16/float32), the three codecs and two appends.

A deliberate format change re-pins with ``python -m tests.chronozarr.test_bytes_pinned`` (it writes
the JSON) and says why in its commit; a restructure never does.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import chronozarr
from tests.conftest import monthly, synthetic_series

PINNED = Path(__file__).with_name("bytes_pinned.json")
H, W, CS = 21, 19, 8  # three levels of 3 x 3, 2 x 2 and 1 x 1 cells, edge cells partial
TRANSFORM = [10.0, 0.0, 500000.0, 0.0, -10.0, 4000000.0]


def _planes(n_time: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    mask = (rng.random((n_time, H, W)) > 0.2).astype(np.uint8)
    coverage = rng.integers(0, 9, size=(n_time, H, W)).astype(np.uint8)
    return mask, coverage


def _encode(path: Path, data: np.ndarray, **kw: Any) -> None:
    chronozarr.encode(
        data,
        path,
        times=monthly(data.shape[0]),
        bands=[
            {"name": f"B{i + 1:02d}", "scale": 1e-4, "offset": 0.0} for i in range(data.shape[1])
        ],
        crs="EPSG:32631",
        transform=TRANSFORM,
        chunk_size=CS,
        workers=1,
        **kw,
    )


def _star_unsharded_mask_coverage(path: Path) -> None:
    mask, cov = _planes(7, 1)
    data = synthetic_series(7, 2, H, W, "uint16", seed=1)
    _encode(path, data, encoding="star-delta", anchor_interval=3, mask=mask, coverage=cov)


def _none_sharded_uint16(path: Path) -> None:
    data = synthetic_series(7, 2, H, W, "uint16", seed=2)
    _encode(path, data, encoding="none", shard_time=3, provenance={"source": "pinned"})


def _auto_sharded_uint8(path: Path) -> None:
    data = synthetic_series(6, 1, H, W, "uint8", seed=3)
    _encode(path, data, encoding="auto", shard=True)


def _star_unsharded_gzip(path: Path) -> None:
    data = synthetic_series(5, 1, H, W, "uint16", seed=8)
    _encode(path, data, encoding="star-delta", codec="gzip", codec_options={"level": 4})


def _none_int16_coverage_blosc(path: Path) -> None:
    _mask, cov = _planes(5, 4)
    data = synthetic_series(5, 2, H, W, "int16", seed=4)
    _encode(
        path,
        data,
        encoding="none",
        nodata=-9999,
        coverage=cov,
        codec="blosc",
        codec_options={"cname": "lz4", "clevel": 3, "shuffle": "shuffle"},
    )


def _float32_sharded_mask(path: Path) -> None:
    mask, _cov = _planes(4, 5)
    data = synthetic_series(4, 3, H, W, "float32", seed=5)
    _encode(path, data, encoding="none", shard_time=2, mask=mask, nodata=-1.0)


def _star_sharded_append(path: Path) -> None:
    mask, cov = _planes(9, 6)
    data = synthetic_series(9, 2, H, W, "uint16", seed=6)
    _encode(
        path,
        data[:6],
        encoding="star-delta",
        anchor_interval=2,
        shard_time=4,
        mask=mask[:6],
        coverage=cov[:6],
    )
    chronozarr.append(
        path, data[6:], times=monthly(9)[6:], mask=mask[6:], coverage=cov[6:], workers=1
    )


def _none_unsharded_append(path: Path) -> None:
    data = synthetic_series(8, 1, H, W, "uint16", seed=7)
    _encode(path, data[:5], encoding="none")
    chronozarr.append(path, data[5:], times=monthly(8)[5:], workers=2)


CASES: dict[str, Callable[[Path], None]] = {
    "star-unsharded-mask-coverage": _star_unsharded_mask_coverage,
    "none-sharded-uint16-provenance": _none_sharded_uint16,
    "auto-sharded-uint8": _auto_sharded_uint8,
    "star-unsharded-gzip": _star_unsharded_gzip,
    "none-int16-coverage-blosc": _none_int16_coverage_blosc,
    "float32-sharded-mask": _float32_sharded_mask,
    "star-sharded-append": _star_sharded_append,
    "none-unsharded-append": _none_unsharded_append,
}


GZIP_MAGIC = b"\x1f\x8b\x08"


def _comparable(blob: bytes) -> bytes:
    """The bytes as pinned. numcodecs' GZip writes the current time into the gzip header's MTIME
    field (RFC 1952 2.3, bytes 4-7), so a gzip object is pinned with that field zeroed (unsharded
    gzip only: a shard of gzip chunks would carry one MTIME per chunk)."""
    if blob.startswith(GZIP_MAGIC) and len(blob) >= 10:
        return blob[:4] + b"\0\0\0\0" + blob[8:]
    return blob


def digests(path: Path) -> dict[str, str]:
    """relative object path -> sha256 of its (comparable) bytes, for every file under ``path``."""
    return {
        p.relative_to(path).as_posix(): hashlib.sha256(_comparable(p.read_bytes())).hexdigest()
        for p in sorted(path.rglob("*"))
        if p.is_file()
    }


@pytest.mark.parametrize("name", sorted(CASES))
def test_written_bytes_are_pinned(name: str, tmp_path: Path) -> None:
    pinned = json.loads(PINNED.read_text())[name]
    store = tmp_path / name
    CASES[name](store)
    got = digests(store)
    assert sorted(got) == sorted(pinned), "the set of objects changed"
    changed = sorted(k for k in pinned if got[k] != pinned[k])
    assert not changed, f"{len(changed)} object(s) changed bytes: {changed[:8]}"


def test_pin_detects_a_changed_byte(tmp_path: Path) -> None:
    """The digest covers content: one flipped byte in one chunk changes exactly that entry."""
    store = tmp_path / "s"
    _none_unsharded_append(store)
    before = digests(store)
    victim = store / "0" / "data" / "c" / "0" / "0" / "0" / "0"
    raw = bytearray(victim.read_bytes())
    raw[-1] ^= 0xFF
    victim.write_bytes(bytes(raw))
    after = digests(store)
    assert [k for k in before if before[k] != after[k]] == ["0/data/c/0/0/0/0"]


def _repin() -> None:  # pragma: no cover - run by hand for a deliberate format change only
    import tempfile

    out: dict[str, dict[str, str]] = {}
    with tempfile.TemporaryDirectory() as d:
        for name, build in sorted(CASES.items()):
            build(Path(d) / name)
            out[name] = digests(Path(d) / name)
    PINNED.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")
    print(f"wrote {PINNED} ({sum(len(v) for v in out.values())} objects)", file=sys.stderr)


if __name__ == "__main__":
    _repin()
