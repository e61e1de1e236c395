"""The mutators do what their description says (a mutator that silently does nothing makes the
fuzz figures count correct reads as survived attacks)."""

from __future__ import annotations

import json
import random
from pathlib import Path

from tests.fuzz.mutate import mutate


def _first_seed(base: Path, tmp_path: Path, prefix: str) -> tuple[Path, str]:
    for seed in range(500):
        case = tmp_path / f"case-{seed}"
        what = mutate(base, case, random.Random(seed))
        if what.startswith(prefix):
            return case, what
    raise AssertionError(f"no seed below 500 draws a {prefix!r} mutation")


def test_v2_keys_moves_every_chunk(fuzz_bases: dict[str, Path], tmp_path: Path) -> None:
    case, _ = _first_seed(fuzz_bases["none-zstd"], tmp_path, "v2-keys")
    store = case / "store"
    arrays = [
        p.parent
        for p in store.rglob("zarr.json")
        if json.loads(p.read_text())["node_type"] == "array"
    ]
    assert arrays
    for array in arrays:
        assert json.loads((array / "zarr.json").read_text())["chunk_key_encoding"]["name"] == "v2"
        assert not (array / "c").exists(), f"{array.relative_to(store)} still has v3 chunk keys"
    dotted = [p for a in arrays for p in a.iterdir() if p.is_file() and p.name != "zarr.json"]
    assert dotted and all("." in p.name or p.name.isdigit() for p in dotted)
