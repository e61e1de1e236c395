"""``cz convert`` and ``cz export``: bring your own rasters into a store, and take them out.

Modules, one concern each: :mod:`~cz.convert.sources` (folders, globs, manifests, dates in file
names), :mod:`~cz.convert.probe` (file headers), :mod:`~cz.convert.grid` (one grid, or the
target grid of a resampling), :mod:`~cz.convert.dtypes` (the dtype rules),
:mod:`~cz.convert.plan` (every check, before writing), :mod:`~cz.convert.dataset` (NetCDF/Zarr
variables through xarray), :mod:`~cz.convert.stream` (lazy window reads for the writer),
:mod:`~cz.convert.run` (encode/append), :mod:`~cz.convert.export` (COGs) and
:mod:`cz.commands.convert` (the typer commands). See docs/convert.md.
"""

from cz.convert.errors import ConvertError
from cz.convert.export import export
from cz.convert.plan import ConvertOptions
from cz.convert.run import convert, plan_source, store_spec

__all__ = ["ConvertError", "ConvertOptions", "convert", "export", "plan_source", "store_spec"]
