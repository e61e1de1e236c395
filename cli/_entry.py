"""The console-script entry point, importable without the toolkit's dependencies.

``pip install chronozarr-tools`` installs the ``cz`` and ``chronozarr`` commands with the format library
alone; the toolkit (typer, rich, odc-stac, ...) comes with the ``cli`` extra. Without it, the
command says so in one line (exit 1) instead of an ImportError traceback. ``--version`` works
either way.
"""

from __future__ import annotations

import sys

__all__ = ["main"]

MESSAGE = "cz: the command line needs the 'cli' extra ({module} is not installed): pip install 'chronozarr-tools[cli]'"


def main() -> None:
    """``cz``, ``chronozarr``, ``python -m cz`` and ``python -m chronozarr``."""
    args = sys.argv[1:]
    if args in (["--version"], ["-V"]):
        from chronozarr import __version__

        print(f"chronozarr {__version__}")
        return
    try:
        from cz.app import main as app_main
    except ModuleNotFoundError as exc:
        print(MESSAGE.format(module=(exc.name or "a dependency").split(".")[0]), file=sys.stderr)
        sys.exit(1)
    app_main()
