"""``cz share``: a static viewer folder to upload next to a store, and its embed snippets.

OUT_DIR receives a copy of the viewer bundle (:mod:`cz.look.viewer`) whose ``index.html``
opens the store by default (its ``chronozarr-config`` block names the store, and the bundle's
offline basemap when it has one; a link with another ``?store=`` still wins), and
``embed.html`` with an ``<iframe>`` and a script snippet. The folder is staged beside
OUT_DIR and renamed into place: a failure leaves nothing half-written.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

from cz.look.errors import LookError
from cz.look.viewer import Viewer

__all__ = ["default_store_ref", "embed_snippets", "inject_default_store", "share"]

_MARKER = "chronozarr-share: default store"


def _js_string(text: str) -> str:
    """A JavaScript string literal safe inside an HTML <script> (no '<', '>' or '&' at all)."""
    return json.dumps(text).replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _is_url(text: str) -> bool:
    return urlsplit(text).scheme in ("http", "https")


def default_store_ref(store: str, out_dir: Path) -> str:
    """The store as the page should name it: a URL as given, a local store as a path relative
    to OUT_DIR (so OUT_DIR uploaded next to the store finds it), ending in ``/``."""
    if _is_url(store):
        return store if store.endswith("/") else store + "/"
    rel = os.path.relpath(Path(store).resolve(), out_dir.resolve())
    return Path(rel).as_posix().rstrip("/") + "/"


_CONFIG_BLOCK = re.compile(
    r'(<script\b[^>]*\bid="chronozarr-config"[^>]*>)(.*?)(</script>)', re.S | re.I
)


def inject_default_store(page: str, store_ref: str, *, style: str | None = None) -> str:
    """``index.html`` naming ``store_ref`` as its default store.

    The bundled viewer keeps its configuration in ``<script id="chronozarr-config">`` (``store``:
    the default store, used when the link has no ``?store=``; ``style``: the basemap): that block
    is rewritten. A page without it gets a classic inline script before its first script that
    adds ``?store=`` when absent (module scripts run later, so the viewer reads it).
    """
    literal = _js_string(store_ref)
    match = _CONFIG_BLOCK.search(page)
    if match:
        config = (
            f'{{"store": {literal}, "style": {"null" if style is None else _js_string(style)}}}'
        )
        body = f"\n      /* {_MARKER} */\n      window.CHRONOZARR_VIEWER = {config};\n    "
        return page[: match.start(2)] + body + page[match.end(2) :]
    script = (
        f"<script>/* {_MARKER} */(function(){{var u=new URL(location.href);"
        f'if(!u.searchParams.has("store")){{u.searchParams.set("store",{literal});'
        'history.replaceState(null,"",u.href);}})();</script>\n'
    )
    at = page.find("<script")
    if at < 0:
        at = page.find("</head>")
    if at < 0:
        raise LookError("the viewer's index.html has neither <script> nor </head>")
    return page[:at] + script + page[at:]


def embed_snippets(page_url: str, store_url: str, title: str) -> dict[str, str]:
    """The ``<iframe>``, a script that inserts it into ``#chronozarr-viewer``, and the reader
    call for a web developer's own code (npm package ``chronozarr``)."""
    src = html.escape(page_url, quote=True)
    name = html.escape(title, quote=True)
    iframe = (
        f'<iframe src="{src}" title="{name}" width="100%" height="520" '
        'style="border:0" loading="lazy" allow="fullscreen"></iframe>'
    )
    js_src = _js_string(page_url)
    js_title = _js_string(title)
    script = (
        '<div id="chronozarr-viewer" style="width:100%;height:520px"></div>\n'
        "<script>\n"
        "  (function () {\n"
        '    var frame = document.createElement("iframe");\n'
        f"    frame.src = {js_src};\n"
        f"    frame.title = {js_title};\n"
        '    frame.style.cssText = "width:100%;height:100%;border:0";\n'
        '    frame.allow = "fullscreen";\n'
        '    document.getElementById("chronozarr-viewer").appendChild(frame);\n'
        "  })();\n"
        "</script>"
    )
    reader = (
        '<script type="module">\n'
        '  import { openStore } from "chronozarr-tools"; // npm install chronozarr-tools (js/)\n'
        f"  const store = await openStore({_js_string(store_url)});\n"
        "  console.log(store.nTime, store.bandNames);\n"
        "</script>"
    )
    return {"iframe": iframe, "script": script, "reader": reader}


def _embed_page(snippets: dict[str, str], note: str) -> str:
    blocks = "\n".join(
        f"<h2>{html.escape(k)}</h2>\n<pre><code>{html.escape(v)}</code></pre>"
        for k, v in snippets.items()
    )
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        "<title>chronozarr embed snippets</title></head><body>\n"
        f"<h1>Embed this store</h1>\n<p>{html.escape(note)}</p>\n{blocks}\n"
        f"<h2>preview</h2>\n{snippets['iframe']}\n</body></html>\n"
    )


def _check_share(
    store: str, out_dir: Path, viewer: Viewer, base_url: str | None, overwrite: bool
) -> Path:
    """Every refusal of :func:`share`, before anything is written; returns OUT_DIR's parent."""
    if viewer.kind != "bundle":
        raise LookError("cz share needs the bundled viewer (a self-contained folder)")
    if base_url is not None and not _is_url(base_url):
        raise LookError(f"--base-url {base_url!r}: expected an http(s):// URL")
    if out_dir.exists() and not out_dir.is_dir():
        raise LookError(f"{out_dir}: exists and is not a folder")
    if out_dir.is_dir() and any(out_dir.iterdir()) and not overwrite:
        raise LookError(f"{out_dir}: not empty (give --overwrite to replace it)")
    if not _is_url(store) and out_dir.resolve().is_relative_to(Path(store).resolve()):
        raise LookError(f"{out_dir}: inside the store {store}; write the viewer beside it")
    parent = out_dir.resolve().parent
    if not parent.is_dir():
        raise LookError(f"{out_dir}: the folder {parent} does not exist")
    return parent


def share(
    store: str,
    out_dir: Path,
    viewer: Viewer,
    *,
    base_url: str | None = None,
    store_url: str | None = None,
    overwrite: bool = False,
    title: str = "chronozarr viewer",
) -> dict[str, Any]:
    """Write the viewer folder and the snippets into ``out_dir``; returns what was written.

    ``base_url`` is the public URL OUT_DIR will have (for absolute snippets); ``store_url``
    overrides how the page names the store (default: :func:`default_store_ref`).
    """
    parent = _check_share(store, out_dir, viewer, base_url, overwrite)
    ref = store_url or default_store_ref(store, out_dir)
    page_text = (viewer.folder / "index.html").read_text(encoding="utf-8")
    base = None if base_url is None else base_url.rstrip("/") + "/"
    page_url = f"{base}index.html" if base else "index.html"
    public_store = ref if _is_url(ref) or not base else urljoin(base, ref)
    snippets = embed_snippets(page_url, public_store, title)
    note = (
        f"Upload this folder so that its index.html is at {page_url}."
        if base
        else "Paths are relative: give cz share --base-url URL for absolute snippets."
    )
    staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", suffix=".partial", dir=parent))
    try:
        target = staging / "site"
        shutil.copytree(viewer.folder, target, symlinks=False)
        # the bundle's offline basemap, when it has one: a shared page requests no third party
        style = "style.json" if (viewer.folder / "style.json").is_file() else None
        page = inject_default_store(page_text, ref, style=style)
        (target / "index.html").write_text(page, encoding="utf-8")
        (target / "embed.html").write_text(_embed_page(snippets, note), encoding="utf-8")
        if out_dir.exists():
            old = staging / "old"
            out_dir.rename(old)
        target.rename(out_dir)
    except OSError as exc:  # the folder cannot be written or replaced
        raise LookError(f"{out_dir}: cannot write the viewer ({exc})") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    files = sorted(p.relative_to(out_dir).as_posix() for p in out_dir.rglob("*") if p.is_file())
    return {
        "out_dir": str(out_dir),
        "store": ref,
        "page": page_url,
        "files": files,
        "bytes": sum((out_dir / f).stat().st_size for f in files),
        "snippets": snippets,
    }
