"""A rule broken many times is listed a few times and counted (decision 0013): a root whose
``chronozarr.times`` lists thousands of timesteps its arrays do not hold breaks spec 4.2 once
per timestep, and the report (and ``cz validate``, ``tests/cz/commands/test_store.py``) printed one line for each, a million lines
for a million times (past 120 s in ``cz validate --deep``).

The oracle is the spec's rule, counted here: in a star-delta store whose only anchor is 0, every
timestep t >= 1 without a ``delta_reference`` entry is one finding of ``temporal.delta_reference``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import chronozarr
from chronozarr.validate.context import FINDINGS_PER_RULE
from tests.chronozarr.helpers import edit_chronozarr
from tests.conftest import monthly, synthetic_series

EXTRA = 3000  # timesteps listed by the root beyond the three the arrays hold


def many_times_store(path: Path) -> Path:
    chronozarr.encode(
        synthetic_series(n_time=3, n_band=1, height=10, width=10, seed=5),
        path,
        times=monthly(3),
        bands=["b"],
        crs="EPSG:32631",
        transform=[10.0, 0.0, 500000.0, 0.0, -10.0, 4000000.0],
        chunk_size=8,
        encoding="star-delta",
        anchor_interval=6,
    )
    edit_chronozarr(path, lambda cz: cz["times"].extend(monthly(3 + EXTRA)[3:]))
    return path


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> chronozarr.Report:
    return chronozarr.validate(
        many_times_store(tmp_path_factory.mktemp("many") / "s.zarr"), deep=True
    )


def test_a_rule_is_listed_a_few_times_and_counted(report: chronozarr.Report) -> None:
    listed = [f for f in report.findings if f.rule == "temporal.delta_reference"]
    # timesteps 1 and 2 have their entries; 3 .. 3 + EXTRA - 1 have none (spec 4.2)
    assert len(listed) == FINDINGS_PER_RULE
    assert report.omitted["temporal.delta_reference"] == EXTRA - FINDINGS_PER_RULE
    assert [f.message for f in listed][:2] == [
        "timestep 3 has no delta_reference entry",
        "timestep 4 has no delta_reference entry",
    ]
    assert report.error_count == len(report.errors) + EXTRA - FINDINGS_PER_RULE
    assert report.to_json()["errors"] == report.error_count and not report.ok
    assert (
        max(sum(f.rule == r for f in report.findings) for r in {f.rule for f in report.findings})
        <= FINDINGS_PER_RULE
    )


def test_every_message_is_short_whatever_the_lists(report: chronozarr.Report) -> None:
    """The anchor_indices finding quoted the whole expected list: 1.3 MB in one line for a
    root listing 10^6 times. Lists are cut to their first items and their length."""
    (anchors,) = [f for f in report.findings if f.rule == "temporal.anchor_indices"]
    n_anchors = len(range(0, 3 + EXTRA, 6))  # anchor_interval 6 over 3 + EXTRA timesteps
    assert f"... ({n_anchors:,} in all)], got [0]" in anchors.message
    assert max(len(f.message) for f in report.findings) < 400
