"""The viewer bundle shipped in the wheel (cli/_viewer/) is the build of today's viewer sources.

`cz share` and `cz preview` copy and serve cli/_viewer/ after a plain `pip install`, so a stale copy
would publish an old viewer. The build is deterministic (js/tools/build-viewer.mjs), so a rebuild must
give the same bytes; `bash scripts/vendor-viewer.sh` refreshes the copy.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

import pytest

from cz.look.viewer import locate_viewer

REPO = Path(__file__).resolve().parents[3]
VENDORED = REPO / "cli" / "_viewer"


def _digests(folder: Path) -> dict[str, str]:
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def test_vendored_viewer_equals_a_fresh_build(tmp_path: Path) -> None:
    if shutil.which("node") is None or not (REPO / "js" / "node_modules" / "esbuild").is_dir():
        pytest.skip("node or js/node_modules absent: cannot rebuild the viewer to compare")
    out = tmp_path / "viewer"
    subprocess.run(
        ["node", str(REPO / "js" / "tools" / "build-viewer.mjs"), str(out)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    assert _digests(out) == _digests(VENDORED), (
        "cli/_viewer is stale: bash scripts/vendor-viewer.sh"
    )


def test_the_installed_package_finds_its_own_bundle(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CZ_VIEWER_DIR", raising=False)
    viewer = locate_viewer()
    assert (viewer.folder / "index.html").is_file()
    assert viewer.folder.resolve() == VENDORED.resolve()
