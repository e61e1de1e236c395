"""A group's item references travel packed (decision 0065) and arrive as they were made.

Oracle: the references themselves (dataclass equality), pickled the ordinary way.
"""

from __future__ import annotations

import pickle
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from cz.build.sources import PackedRefs
from cz.load import ItemRef

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=8,
)
_ref = st.builds(
    ItemRef,
    st.text(min_size=1, max_size=12),
    st.dictionaries(st.text(max_size=6), _json, max_size=4),
    st.dictionaries(st.text(max_size=4), st.text(max_size=4), max_size=3),
    st.integers(-1000, 1000),
    st.text(max_size=10),
    st.none() | st.tuples(st.integers(0, 5), st.floats(0, 9), st.floats(0, 9), st.floats(0, 9)),
)


@given(st.lists(st.lists(_ref, max_size=4).map(tuple), max_size=6), st.data())
def test_packed_refs_arrive_as_made(months: list[tuple[ItemRef, ...]], data: Any) -> None:
    packed = PackedRefs()
    for refs in months:
        packed.append(refs)
    arrived = pickle.loads(pickle.dumps(packed))
    assert len(arrived) == len(months)
    order = data.draw(st.permutations(range(len(months))))  # any month first, each once
    for t in order:
        assert arrived[t] == months[t]
    if months:
        assert arrived[-1] == months[-1] and list(arrived[::2]) == months[::2]
    # what travels is bytes, not the references' objects
    assert all(isinstance(b, bytes) for b in packed.__getstate__())
