"""A build whose items gave no valid pixel at all fails (decision 0020), unless ``--allow-empty``.

Every item masked out (clouds everywhere, SCL classes not kept), every asset skipped, or a
catalog whose rasters hold only nodata: the store would be all fill, and a pipeline that goes on
to publish it would publish nothing with exit 0. The check uses the share of valid level-0
pixels the writer read (:meth:`cz.build.spill.SpillPlanes.fractions`), so it holds whatever the
spill's layout.
"""

from __future__ import annotations

from cz.build.errors import BuildError
from cz.build.executor import CompositeStats
from cz.plan import Plan

__all__ = ["check_not_empty"]


def check_not_empty(valid_fraction: float, plan: Plan, stats: CompositeStats) -> None:
    """Raise :class:`BuildError` (one line) when no pixel of any month is valid."""
    if valid_fraction > 0:
        return
    n_items = sum(len(m.items) for m in plan.months)
    skipped = len({s.item for s in stats.skipped})
    why = f"{skipped} of them skipped as unreadable, " if skipped else ""
    raise BuildError(
        f"no valid pixel: none of the {n_items} item(s) of {len(plan.months)} month(s) gave a "
        f"valid observation ({why}the rest masked or nodata everywhere); no store was written. "
        "Check the mask classes, the AOI and the time range, or pass --allow-empty to write an "
        "empty store"
    )
