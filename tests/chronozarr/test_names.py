"""Nothing a store's metadata names makes a reader leave the store (decision 0013; spec 3.2, 3.7).

Regressions of main: ``variable``, level paths, mask/coverage/volatility names with ``..``,
absolute paths, schemes, percent-escapes or 5,000 characters reached the storage layer (an
OSError, a request outside the store's prefix over HTTP, or a silent read of a sibling folder),
and ``validate`` raised instead of reporting a finding.
"""

from __future__ import annotations

import json
import string
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import chronozarr
from chronozarr.errors import CorruptStoreError
from chronozarr.format import check_name, name_problem
from tests.fuzz.mutate import HOSTILE_NAMES

SAFE = st.text(string.ascii_letters + string.digits + "_-.", min_size=1, max_size=40).filter(
    lambda s: s not in (".", "..")
)


@given(st.lists(SAFE, min_size=1, max_size=4))
def test_plain_node_paths_are_accepted(segments: list[str]) -> None:
    name = "/".join(segments)
    assert check_name(name, "x") == name


@given(SAFE, st.sampled_from(["\\", ":", "%2e", "?", "#", "\x00", "\n", " ", "~", "\u00e9"]))
def test_a_character_outside_the_rule_is_refused_anywhere(base: str, token: str) -> None:
    for name in (token + base, base + token, f"{base}/{base}{token}"):
        assert name_problem(name) is not None, name


@given(SAFE)
def test_dot_segments_and_empty_segments_are_refused(base: str) -> None:
    for name in (
        "..",
        f"../{base}",
        f"{base}/..",
        f"{base}/../{base}",
        f"./{base}",
        f"/{base}",
        f"{base}/",
        f"{base}//{base}",
        "",
    ):
        assert name_problem(name) is not None, name


def _edit(store: Path, fn) -> None:
    """Edit the root's chronozarr block (and so what the reader sees first)."""
    root = json.loads((store / "zarr.json").read_text())
    fn(root["attributes"])
    (store / "zarr.json").write_text(json.dumps(root))


FIELDS = {
    "variable": lambda a, v: a["chronozarr"].__setitem__("variable", v),
    "level-path": lambda a, v: a["chronozarr"]["levels"][0].__setitem__("path", v),
    "mask": lambda a, v: a["chronozarr"].__setitem__("mask_variable", v),
    "volatility": lambda a, v: a["chronozarr"].__setitem__("volatility_path", v),
    "multiscales": lambda a, v: a["multiscales"][0]["datasets"][0].__setitem__("path", v),
}
UNSAFE = [n for n in HOSTILE_NAMES if name_problem(n) is not None]


def test_every_hostile_name_of_the_fuzz_harness_is_unsafe() -> None:
    assert UNSAFE == HOSTILE_NAMES


@pytest.mark.parametrize("field", sorted(FIELDS))
@pytest.mark.parametrize("name", ["..", "../secret/0", "/etc", "http://127.0.0.1:9/x", "%2e%2e"])
def test_reader_and_validator_refuse_unsafe_names(store_copy, field: str, name: str) -> None:
    store = store_copy("delta-sharded-gzip")
    _edit(store, lambda a: FIELDS[field](a, name))
    with pytest.raises(CorruptStoreError, match="not a safe store name"):
        chronozarr.open_store(store)
    report = chronozarr.validate(store)
    assert any(f.rule == "name.unsafe" and f.section == "3.2" for f in report.errors), report
