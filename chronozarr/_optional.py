"""Optional dependencies: import one lazily, or say in one line which extra installs it.

``pip install chronozarr-tools`` is the format library alone (numpy, numcodecs, crc32c). Remote stores
need the ``remote`` extra (obstore), the xarray backend and lazy reading the ``xarray`` extra
(dask, xarray, pyproj). A missing one raises :class:`~chronozarr.errors.MissingExtraError`
naming the extra, never a bare ImportError.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from chronozarr.errors import MissingExtraError

__all__ = ["require"]


def require(module: str, extra: str, feature: str) -> ModuleType:
    """Import ``module``; if it (or its top-level package) is absent, raise MissingExtraError."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        top = module.split(".")[0]
        if exc.name is not None and exc.name.split(".")[0] != top:
            raise  # the module exists but one of *its* imports is broken: show that
        raise MissingExtraError(feature, extra, top) from None
