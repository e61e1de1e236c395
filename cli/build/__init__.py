"""``cz build`` and ``cz append``: from a monthly plan to a chronozarr store, at any size.

Modules: :mod:`~cz.build.options` (options, progress, result), :mod:`~cz.build.tasks` (one
(month, block) composite), :mod:`~cz.build.blocks` (the grid's blocks and their items),
:mod:`~cz.build.executor` (pass 1 on threads or dask), :mod:`~cz.build.spill` and
:mod:`~cz.build.views` (the spilled composites as the writer's lazy input),
:mod:`~cz.build.store_args` (recipe to store arguments and provenance), :mod:`~cz.build.target`
(staging and commit), :mod:`~cz.build.pipeline` (build), :mod:`~cz.build.appending` (append),
:mod:`~cz.build.lazy` (composites as a lazy xarray for notebooks). The store's provenance
metadata is written by the format library (:mod:`chronozarr.provenance`).

A build runs in two passes so that memory never grows with the region or the number of months:

1. **Composites.** The grid is cut into blocks of the store's cell size. Each (month, block) is
   one task (:func:`compute_block`): read the month's items that touch the block (odc-stac,
   :mod:`cz.load`), correct, mosaic per solar day and take the median (:mod:`cz.composite`).
   The task returns the raw composite and its coverage, compressed (zstd level 1), and the
   caller writes them to a *spill* folder of small files next to the target. Tasks run on a
   local thread pool or, with ``scheduler``, on a dask.distributed cluster (results come back to
   the client, so the workers need no shared disk). At most ``2 x workers`` tasks are in flight.
2. **Store.** ``chronozarr.encode`` (or ``chronozarr.append``) streams the store cell by cell
   from lazy views of the spill (:class:`SpillPlanes`): data, mask and coverage are three
   array-likes with ``compute`` that the writer reads in (months, cell) batches. Gap-fill is
   applied while reading: a month depends only on the raw composites of the ``max_age`` months
   before it (:func:`cz.composite.carry_forward_source`), which the spill holds (and, for an
   append, the store itself: a pixel with coverage > 0 holds its raw composite).

Why not one lazy dask graph fed to ``encode``: ``encode`` computes data, mask and coverage in
separate ``compute`` calls and in batches of months, so a graph that loads pixels would load each
month three times, plus the ``max_age`` months before every batch for gap-fill. The spill makes
every (month, block) computed exactly once, in parallel, anywhere; its files cost one fast
compression of level 0 and are deleted when the build ends. For notebooks,
:func:`lazy_composites` exposes the same per-(month, block) work as a dask-backed xarray.

Where the store goes. A local build writes into a staging folder next to the target
(``.NAME.building-*``) and renames it into place only when complete (the writer already puts
the root zarr.json last); a failed build removes the staging folder and leaves the target as it
was. A URL target (``s3://...``) is built locally first, then published with
:func:`cz.publish.publish` (chunks first, root last).

Provenance. ``chronozarr.provenance`` in the root holds the small summary (sources, composite,
gap-fill, notes, the recipe choices an append must match, skipped items). The item ids behind
each month live in the store's root-level array ``provenance_items`` (Zarr v3 ``string``, dims
``["time"]``, one chunk per month holding one JSON document), so the root zarr.json a browser
loads first stays small. See :func:`chronozarr.provenance.write_provenance_items` for the order that keeps it at least
as long as the time axis.
"""

from chronozarr.provenance import PROVENANCE_ITEMS, read_provenance_items, write_provenance_items
from cz.build.appending import append_months
from cz.build.errors import AppendRefusedError, BuildError, RecipeMismatchError
from cz.build.lazy import lazy_composites
from cz.build.options import BuildOptions, BuildResult, Progress
from cz.build.pipeline import build
from cz.build.spill import SpillPlanes
from cz.build.store_args import store_bands
from cz.build.tasks import BlockResult, BlockTask, CompositeContext, compute_block
from cz.months import parse_months

__all__ = [
    "PROVENANCE_ITEMS",
    "AppendRefusedError",
    "BlockResult",
    "BlockTask",
    "BuildError",
    "BuildOptions",
    "BuildResult",
    "CompositeContext",
    "Progress",
    "RecipeMismatchError",
    "SpillPlanes",
    "append_months",
    "build",
    "compute_block",
    "lazy_composites",
    "parse_months",
    "read_provenance_items",
    "store_bands",
    "write_provenance_items",
]
