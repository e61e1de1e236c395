"""chronozarr.io.LRU against a plain model of least-recently-used eviction."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from chronozarr.io import LRU

OPS = st.lists(
    st.tuples(st.sampled_from(["get", "put", "make"]), st.integers(0, 7), st.integers(0, 50)),
    max_size=60,
)


@given(OPS, st.one_of(st.none(), st.integers(1, 120)), st.one_of(st.none(), st.integers(1, 5)))
def test_matches_a_list_model(ops, max_bytes, max_items) -> None:
    if max_bytes is None and max_items is None:
        max_items = 3
    cache: LRU[int, str] = LRU(max_bytes, max_items=max_items)
    model: list[tuple[int, str, int]] = []  # oldest first: (key, value, nbytes)

    def touch(key: int) -> tuple[int, str, int] | None:
        for i, entry in enumerate(model):
            if entry[0] == key:
                model.append(model.pop(i))
                return entry
        return None

    def store(key: int, value: str, size: int) -> None:
        model[:] = [e for e in model if e[0] != key] + [(key, value, size)]
        while len(model) > 1 and (
            (max_bytes is not None and sum(e[2] for e in model) > max_bytes)
            or (max_items is not None and len(model) > max_items)
        ):
            model.pop(0)

    for n, (op, key, size) in enumerate(ops):
        value = f"v{n}"
        if op == "get":
            entry = touch(key)
            assert cache.get(key) == (None if entry is None else entry[1])
        elif op == "put":
            cache.put(key, value, size)
            store(key, value, size)
        else:
            entry = touch(key)
            got = cache.get_or_make(key, lambda value=value: value, size)
            if entry is None:
                store(key, value, size)
                assert got == value
            else:
                assert got == entry[1]
        assert [k for k, _, _ in model] == [k for k in model_keys(cache)]
        assert cache.nbytes == sum(e[2] for e in model)


def model_keys(cache: LRU) -> list:
    return list(cache._data)


def test_default_size_is_nbytes_or_len() -> None:
    cache: LRU[str, object] = LRU(100)
    cache.put("a", np.zeros(10, dtype=np.uint16))
    cache.put("b", b"x" * 30)
    assert cache.nbytes == 50
    cache.put("c", np.zeros(60, dtype=np.uint8))  # 110 > 100: "a" goes
    assert "a" not in cache and "b" in cache and cache.nbytes == 90


def test_an_entry_over_budget_is_kept_until_the_next() -> None:
    cache: LRU[str, bytes] = LRU(10)
    cache.put("big", b"x" * 50)
    assert cache.get("big") == b"x" * 50
    cache.put("small", b"y")
    assert "big" not in cache and len(cache) == 1


def test_needs_a_bound() -> None:
    with pytest.raises(ValueError, match="max_bytes"):
        LRU()


def test_concurrent_makers_keep_one_value() -> None:
    cache: LRU[int, object] = LRU(max_items=4)
    barrier = threading.Barrier(8)
    got: list[object] = []

    def work() -> None:
        barrier.wait()
        got.append(cache.get_or_make(1, object, 0))

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stored = cache.get(1)
    assert stored is not None
    # every thread that found it cached, or stored first, returns the stored value; a thread that
    # built it concurrently and lost the race also returns the first stored one
    assert all(g is stored for g in got)
