"""Helpers of the look tests: run the CLI in-process, read PNG pixels back with Pillow."""

from __future__ import annotations

from typing import Any

import numpy as np
from typer.testing import CliRunner

from cz import output
from cz.app import app


def run(*args: Any) -> Any:
    """``cz ARGS`` in-process; an exception escaping the command fails the test (no traceback
    may ever reach a user)."""
    output.out.width = 200
    output.err.width = 200
    return CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)


def read_png(path: Any, frame: int = 0) -> np.ndarray:
    """(rows, cols, 4) uint8 RGBA of one frame of a PNG/APNG/GIF, decoded by Pillow."""
    from PIL import Image

    with Image.open(path) as im:
        im.seek(frame)
        return np.asarray(im.convert("RGBA")).copy()


def data_pixels(img: np.ndarray, box: dict[str, int], h: int, w: int) -> np.ndarray:
    """(h, w, 4): the picture's data pixels, each block of ``scale`` x ``scale`` checked uniform."""
    s = box["scale"]
    region = img[box["top"] : box["top"] + h * s, box["left"] : box["left"] + w * s]
    assert region.shape == (h * s, w * s, 4)
    blocks = region.reshape(h, s, w, s, 4)
    first = blocks[:, :1, :, :1]
    assert (blocks == first).all(), "an upscaled data pixel is not uniform"
    return first[:, 0, :, 0]


def levels(values: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """The display level of a stretch, written independently of cz.look.stretch."""
    return np.rint(np.clip((values - lo) / (hi - lo), 0, 1) * 255)


def stand_in_bundle(folder: Any) -> Any:
    """A tiny self-contained 'viewer bundle' (index.html + app.js + a .wasm file): what the
    locator, preview and share need of the real one, for tests that do not render."""
    from pathlib import Path

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "index.html").write_text(
        '<!doctype html><html><head><meta charset="utf-8"><title>stand-in</title>\n'
        '<script type="module" src="app.js"></script></head><body></body></html>\n'
    )
    (folder / "app.js").write_text(
        'document.body.textContent = new URL(location.href).searchParams.get("store");\n'
    )
    (folder / "codec.wasm").write_bytes(b"\0asm\x01\0\0\0")
    return folder
