"""``cz share``: the viewer folder, its default store, the embed snippets, and the refusals
(no bundle, a non-empty folder, a failure half-way) that must leave nothing behind."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import cz.look.share
import cz.look.viewer
from cz.look.share import default_store_ref, inject_default_store
from tests.cz.look.conftest import LookStore
from tests.cz.look.helpers import run, stand_in_bundle


@pytest.fixture
def bundle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = stand_in_bundle(tmp_path / "bundle")
    monkeypatch.setenv("CZ_VIEWER_DIR", str(folder))
    return folder


@pytest.fixture
def site(tmp_path: Path, look_store: LookStore) -> Path:
    """A folder as it will be uploaded: the store, and beside it the viewer folder to write."""
    root = tmp_path / "site"
    shutil.copytree(look_store.path, root / "look.zarr")
    return root


def test_share_writes_the_bundle_with_the_store_as_default(bundle: Path, site: Path) -> None:
    out = site / "viewer"
    result = run(
        "share",
        site / "look.zarr",
        out,
        "--base-url",
        "https://bucket.example/site/viewer",
        "--json",
    )
    assert result.exit_code == 0, result.stderr
    info = json.loads(result.stdout)
    assert info["store"] == "../look.zarr/"
    assert info["files"] == ["app.js", "codec.wasm", "embed.html", "index.html"]
    assert (out / "app.js").read_bytes() == (bundle / "app.js").read_bytes()
    assert (out / "codec.wasm").read_bytes() == (bundle / "codec.wasm").read_bytes()
    page = (out / "index.html").read_text()
    assert page.index("chronozarr-share: default store") < page.index('src="app.js"')
    assert 'u.searchParams.set("store","../look.zarr/")' in page
    embed = (out / "embed.html").read_text()
    snippets = info["snippets"]
    assert snippets["iframe"].startswith(
        '<iframe src="https://bucket.example/site/viewer/index.html"'
    )
    assert 'frame.src = "https://bucket.example/site/viewer/index.html"' in snippets["script"]
    assert 'openStore("https://bucket.example/site/look.zarr/")' in snippets["reader"]
    assert snippets["iframe"] in embed  # a live preview of the iframe too
    assert "&lt;iframe" in embed  # and the escaped code to copy
    assert not [p for p in site.iterdir() if p.name.endswith(".partial")]


def test_human_output_prints_the_iframe(bundle: Path, site: Path) -> None:
    result = run("share", site / "look.zarr", site / "v")
    assert result.exit_code == 0, result.stderr
    assert '<iframe src="index.html"' in result.stdout and "embed.html" in result.stdout


def test_store_text_cannot_break_out_of_the_script(bundle: Path, site: Path) -> None:
    evil = 'https://x.example/a.zarr/"</script><script>alert(1)</script>'
    result = run("share", site / "look.zarr", site / "v", "--store-url", evil, "--json")
    assert result.exit_code == 0, result.stderr
    page = (site / "v" / "index.html").read_text()
    assert "<script>alert(1)" not in page and "\\u003c/script\\u003e" in page
    assert "<script>alert(1)" not in (site / "v" / "embed.html").read_text()


def test_refuses_a_non_empty_folder_and_replaces_it_with_overwrite(
    bundle: Path, site: Path
) -> None:
    out = site / "v"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    result = run("share", site / "look.zarr", out)
    assert result.exit_code == 1 and "not empty (give --overwrite" in result.stderr
    assert (out / "keep.txt").read_text() == "mine"
    assert run("share", site / "look.zarr", out, "--overwrite").exit_code == 0
    assert not (out / "keep.txt").exists() and (out / "index.html").is_file()


def test_a_failure_half_way_leaves_nothing(
    bundle: Path, site: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken_copy(src: object, dst: Path, **kw: object) -> None:
        Path(dst).mkdir()
        (Path(dst) / "half.js").write_text("x")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(cz.look.share.shutil, "copytree", broken_copy)
    before = sorted(p.name for p in site.iterdir())
    result = run("share", site / "look.zarr", site / "v")
    assert result.exit_code == 1 and "No space left on device" in result.stderr
    assert sorted(p.name for p in site.iterdir()) == before


def test_without_a_bundle_the_error_says_how_to_build_it(
    tmp_path: Path, site: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CZ_VIEWER_DIR", raising=False)
    monkeypatch.setattr(cz.look.viewer, "_PACKAGE", tmp_path / "nowhere" / "cz")
    monkeypatch.setattr(cz.look.viewer, "_CHECKOUT", tmp_path / "nowhere")
    result = run("share", site / "look.zarr", site / "v")
    assert result.exit_code == 1
    (line,) = result.stderr.strip().splitlines()
    assert "no viewer bundle found" in line and "npm run build:viewer" in line
    assert not (site / "v").exists()
    monkeypatch.setenv("CZ_VIEWER_DIR", str(tmp_path / "empty"))
    result = run("share", site / "look.zarr", site / "v")
    assert result.exit_code == 1 and "CZ_VIEWER_DIR=" in result.stderr


def test_a_store_that_does_not_open_is_refused(bundle: Path, tmp_path: Path) -> None:
    result = run("share", tmp_path / "absent.zarr", tmp_path / "v")
    assert result.exit_code == 1 and "no chronozarr store" in result.stderr
    assert not (tmp_path / "v").exists()


def test_never_writes_into_the_store(bundle: Path, site: Path) -> None:
    before = sorted(p.relative_to(site).as_posix() for p in site.rglob("*"))
    result = run("share", site / "look.zarr", site / "look.zarr" / "viewer")
    assert result.exit_code == 1 and "inside the store" in result.stderr
    assert sorted(p.relative_to(site).as_posix() for p in site.rglob("*")) == before


def test_bad_base_url(bundle: Path, site: Path) -> None:
    result = run("share", site / "look.zarr", site / "v", "--base-url", "bucket/site")
    assert result.exit_code == 1 and "expected an http(s):// URL" in result.stderr


def test_store_refs(tmp_path: Path) -> None:
    assert default_store_ref("https://h.example/s.zarr", tmp_path) == "https://h.example/s.zarr/"
    assert (
        default_store_ref(str(tmp_path / "a" / "s.zarr"), tmp_path / "b" / "v") == "../../a/s.zarr/"
    )
    assert default_store_ref(str(tmp_path / "s.zarr"), tmp_path / "s.zarr" / "viewer") == "../"
    page = inject_default_store("<html><head></head><body></body></html>", "x/")
    assert page.index("<script>") < page.index("</head>")


BUNDLED_PAGE = """<!doctype html><html><head>
    <script id="chronozarr-config">
      window.CHRONOZARR_VIEWER = { store: null, style: null };
    </script>
    <script>var early = window.CHRONOZARR_VIEWER.store;</script>
    <script type="module" src="viewer.js"></script>
  </head><body></body></html>
"""


def test_the_bundles_config_block_is_rewritten(bundle: Path, site: Path) -> None:
    (bundle / "index.html").write_text(BUNDLED_PAGE)
    (bundle / "style.json").write_text('{"version": 8}')
    result = run("share", site / "look.zarr", site / "v")
    assert result.exit_code == 0, result.stderr
    page = (site / "v" / "index.html").read_text()
    assert 'window.CHRONOZARR_VIEWER = {"store": "../look.zarr/", "style": "style.json"};' in page
    assert "{ store: null, style: null }" not in page
    assert "history.replaceState" not in page  # one mechanism: the config block
    assert page.count("<script") == BUNDLED_PAGE.count("<script")
    assert page.endswith(BUNDLED_PAGE[BUNDLED_PAGE.index("    <script>var early") :])
    (bundle / "style.json").unlink()
    page = inject_default_store(BUNDLED_PAGE, "https://h.example/</script>.zarr/")
    assert '"style": null' in page and "</script>.zarr" not in page
