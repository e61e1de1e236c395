"""``python -m chronozarr``: the ``cz`` command (the toolkit, from the ``cli`` extra).

Without the extra it prints one line naming it; ``python -m chronozarr --version`` always works.
"""

import importlib
import sys

from chronozarr import __version__


def _main() -> None:
    try:  # imported by name: the format library does not depend on the toolkit package
        entry = importlib.import_module("cz._entry")
    except ModuleNotFoundError:  # the cz package itself is absent (a partial install)
        if sys.argv[1:] in (["--version"], ["-V"]):
            print(f"chronozarr {__version__}")
            return
        print(
            "chronozarr: the command line needs the 'cli' extra: pip install 'chronozarr-tools[cli]'",
            file=sys.stderr,
        )
        sys.exit(1)
    entry.main()


_main()
