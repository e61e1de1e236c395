"""Where the viewer comes from: $CZ_VIEWER_DIR, the package's _viewer/, the checkout's
js/dist/viewer/, and (preview only) the checkout's module page when it has an import map."""

from __future__ import annotations

from pathlib import Path

import pytest

import cz.look.viewer as viewer
from tests.cz.look.helpers import stand_in_bundle


@pytest.fixture
def nowhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake install: package folder tmp/checkout/cli, checkout tmp/checkout, nothing built."""
    checkout = tmp_path / "checkout"
    (checkout / "cli").mkdir(parents=True)
    monkeypatch.delenv("CZ_VIEWER_DIR", raising=False)
    monkeypatch.setattr(viewer, "_PACKAGE", checkout / "cli")
    monkeypatch.setattr(viewer, "_CHECKOUT", checkout)
    return checkout


def test_search_order(nowhere: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert viewer.find_bundle() is None
    built = stand_in_bundle(nowhere / "js" / "dist" / "viewer")
    assert viewer.find_bundle() == built.resolve()
    shipped = stand_in_bundle(nowhere / "cli" / "_viewer")
    assert viewer.find_bundle() == shipped.resolve()  # package data before the checkout
    elsewhere = stand_in_bundle(tmp_path / "elsewhere")
    monkeypatch.setenv("CZ_VIEWER_DIR", str(elsewhere))
    found = viewer.locate_viewer()
    assert (found.kind, found.page, found.folder) == ("bundle", "index.html", elsewhere.resolve())


def test_source_viewer_only_for_preview_and_only_with_an_import_map(nowhere: Path) -> None:
    page = nowhere / "examples" / "viewer" / "index.html"
    page.parent.mkdir(parents=True)
    (nowhere / "js" / "node_modules" / "zarrita").mkdir(parents=True)
    page.write_text('<script type="importmap">{"imports": {}}</script>')
    found = viewer.locate_viewer(allow_source=True)
    assert found.kind == "source" and found.page == "examples/viewer/index.html"
    assert found.mounts == {"/examples/viewer/": page.parent, "/js/": nowhere / "js"}
    with pytest.raises(viewer.ViewerNotFoundError, match="npm run build:viewer"):
        viewer.locate_viewer()  # share needs the bundle
    page.write_text('<script type="module" src="viewer.js"></script>')  # a bundle's source page
    with pytest.raises(viewer.ViewerNotFoundError, match="no viewer bundle found"):
        viewer.locate_viewer(allow_source=True)
