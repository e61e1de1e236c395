"""Where the browser viewer is: the bundled viewer (self-contained, copyable) or, for a source
checkout without a bundle, the module viewer of ``examples/viewer/`` when its page still loads
unbundled modules through an import map (preview only).

The bundle is a folder with ``index.html``, one bundled JS file, CSS, WASM and an offline map
style (``cd js && npm run build:viewer`` writes it to ``js/dist/viewer/``). A wheel ships it as
package data under ``cz/_viewer/``. It is looked for, in order:

1. ``$CZ_VIEWER_DIR`` (a folder with ``index.html``), for a bundle built elsewhere;
2. ``cz/_viewer/`` inside the installed package;
3. ``js/dist/viewer/`` of the source checkout the package runs from.

Every viewer reads its store from ``?store=URL`` (relative URLs resolve against the page).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from cz.look.errors import LookError

__all__ = ["BUILD_HINT", "Viewer", "ViewerNotFoundError", "find_bundle", "locate_viewer"]

BUILD_HINT = (
    "build it with `bash scripts/vendor-viewer.sh` (writes cli/_viewer/) or "
    "`cd js && npm ci && npm run build:viewer` (writes js/dist/viewer/)"
)

_PACKAGE = Path(__file__).resolve().parents[1]  # the cz package folder (cli/ in a checkout)
_CHECKOUT = _PACKAGE.parent


class ViewerNotFoundError(LookError):
    """No viewer bundle (or, for preview, no usable source viewer) was found."""


@dataclass(frozen=True)
class Viewer:
    """A viewer to serve: URL prefix -> folder ``mounts``, and the page's path below the root.

    ``kind`` is ``"bundle"`` (one folder, self-contained: what ``cz share`` copies) or
    ``"source"`` (the repository's module viewer, which needs ``js/`` beside it).
    """

    kind: str
    page: str
    mounts: dict[str, Path] = field(default_factory=dict)

    @property
    def folder(self) -> Path:
        """The bundle folder (kind ``bundle`` only)."""
        return self.mounts["/"]


def _is_bundle(folder: Path) -> bool:
    return (folder / "index.html").is_file()


def find_bundle() -> Path | None:
    """The viewer bundle folder, or None (search order in the module docstring)."""
    env = os.environ.get("CZ_VIEWER_DIR")
    if env:
        folder = Path(env).expanduser()
        if not _is_bundle(folder):
            raise ViewerNotFoundError(f"CZ_VIEWER_DIR={env}: no index.html there; {BUILD_HINT}")
        return folder.resolve()
    for folder in (_PACKAGE / "_viewer", _CHECKOUT / "js" / "dist" / "viewer"):
        if _is_bundle(folder):
            return folder.resolve()
    return None


def _source_viewer() -> Viewer | None:
    """``examples/viewer/`` of a checkout whose ``js/node_modules`` is installed."""
    page = _CHECKOUT / "examples" / "viewer" / "index.html"
    # only a page whose import map resolves its modules into js/node_modules runs unbundled
    if (
        page.is_file()
        and 'type="importmap"' in page.read_text(encoding="utf-8", errors="replace")
        and (_CHECKOUT / "js" / "node_modules" / "zarrita").is_dir()
    ):
        return Viewer(
            "source",
            "examples/viewer/index.html",
            {"/examples/viewer/": page.parent, "/js/": _CHECKOUT / "js"},
        )
    return None


def locate_viewer(*, allow_source: bool = False) -> Viewer:
    """The viewer bundle; with ``allow_source``, the checkout's module viewer when there is no
    bundle. Raises :class:`ViewerNotFoundError` with a one-line message saying how to build it."""
    bundle = find_bundle()
    if bundle is not None:
        return Viewer("bundle", "index.html", {"/": bundle})
    if allow_source:
        source = _source_viewer()
        if source is not None:
            return source
    raise ViewerNotFoundError(f"no viewer bundle found; {BUILD_HINT}, or set CZ_VIEWER_DIR")
