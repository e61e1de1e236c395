"""Console helpers shared by the commands: results on stdout, progress and errors on stderr."""

from __future__ import annotations

import json
import sys
from typing import Any, NoReturn

import typer
from rich.console import Console
from rich.text import Text

__all__ = [
    "EXIT_BUSY",
    "EXIT_INVALID",
    "EXIT_OK",
    "EXIT_RUNTIME",
    "EXIT_USAGE",
    "err",
    "fail",
    "human_bytes",
    "internal_error",
    "is_busy",
    "out",
    "print_json",
]

EXIT_OK = 0
EXIT_RUNTIME = 1
EXIT_USAGE = 2
EXIT_INVALID = 3
#: another writer holds the target or committed it first (decision 0051); sysexits' EX_TEMPFAIL
EXIT_BUSY = 75

out = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)


def fail(message: str, code: int = EXIT_RUNTIME) -> NoReturn:
    """Print ``error: message`` on stderr and exit with ``code`` (no traceback). Under
    ``--json`` the error is ``{"error": message, "code": code}`` on stdout instead, with the
    same exit code (cz/conventions.py)."""
    from cz.conventions import json_requested

    if json_requested():
        print_json({"error": message, "code": code})
    else:  # the message is never markup: store, recipe and user text stay as typed
        err.print(Text.assemble(("error:", "bold red"), " ", message), highlight=False)
    raise typer.Exit(code)


def is_busy(exc: BaseException) -> bool:
    """True for "another writer holds or committed the target" (exit :data:`EXIT_BUSY`): the
    format library's ConcurrentWriteError or the toolkit's TargetBusyError."""
    from chronozarr.errors import ConcurrentWriteError

    return isinstance(exc, ConcurrentWriteError) or type(exc).__name__ == "TargetBusyError"


def human_bytes(n: float) -> str:
    """A byte count for people, in SI units: ``512 B``, ``1.4 MB``, ``2.0 GB``."""
    for unit in ("B", "kB", "MB", "GB", "TB"):
        text = f"{n:.0f}" if unit == "B" else f"{n:.1f}"
        if (
            abs(float(text)) < 1000
        ):  # decide on the rounded figure: 999,950 B is 1.0 MB, not 1000.0 kB
            return f"{text} {unit}"
        n /= 1000
    return f"{n:.1f} PB"


def internal_error(exc: BaseException) -> NoReturn:
    """Exit 1 with one line for an exception no command handled (see ``cz.app.main``)."""
    if isinstance(exc, MemoryError):
        message = (
            "out of memory: the input needs more memory than this machine has"
            f"{' (' + str(exc) + ')' if str(exc) else ''}; try a smaller region, fewer workers"
            " or a machine with more memory"
        )
    else:
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        message = f"internal error ({type(exc).__name__}{': ' + text if text else ''})"
        message += "; please report it (CZ_DEBUG=1 shows the traceback)"
    err.print(Text.assemble(("error:", "bold red"), " ", message), highlight=False)
    sys.exit(EXIT_RUNTIME)


def print_json(obj: Any) -> None:
    """Write JSON to stdout, unstyled, so it can be piped."""
    sys.stdout.write(json.dumps(obj, indent=2, default=str) + "\n")
    sys.stdout.flush()
