"""The ``cz`` (alias ``chronozarr``) command-line application.

Each command lives in a module of :mod:`cz.commands` exposing ``register(app)``. Exit codes, for every command:
0 success, 1 runtime error, 2 usage error, 3 invalid store (``validate``).
"""

from __future__ import annotations

import os
import sys
from typing import Annotated

import typer

from cz.commands import append, build, convert, look, publish, store, worker
from cz.conventions import COMMON_EPILOG, CONTEXT_SETTINGS, CzGroup, run

app = typer.Typer(
    name="cz",
    help="chronozarr: satellite time series as Zarr v3 stores a browser scrubs like video.",
    no_args_is_help=True,
    add_completion=True,  # cz --install-completion / --show-completion (bash, zsh, fish, pwsh)
    pretty_exceptions_enable=False,
    cls=CzGroup,  # -q/-v on every command, JSON errors under --json (cz/conventions.py)
    epilog=COMMON_EPILOG,
    context_settings=CONTEXT_SETTINGS,  # -h as --help
)


def _version(value: bool) -> None:
    if value:
        from chronozarr import __version__

        typer.echo(f"chronozarr {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", "-V", is_eager=True, callback=_version, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """chronozarr: satellite time series as Zarr v3 stores a browser scrubs like video."""


store.register(app)
build.register(app)
append.register(app)
publish.register(app)
look.register(app)
convert.register(app)
worker.register(app)


def main() -> None:
    """Console-script entry point (``cz`` and ``chronozarr``).

    The last line of defence of "the CLI never prints a traceback" (decision 0013): an exception no
    command turned into a message becomes one line on stderr and exit 1, with the exception type
    so it can be reported; ``CZ_DEBUG=1`` shows the traceback instead.
    """
    from cz.signals import install

    install()  # SIGTERM runs the cleanup Ctrl-C runs (decision 0020)
    try:
        sys.exit(run(app))  # conventions: exit codes, --json errors, -q/-v
    except SystemExit:
        raise
    except KeyboardInterrupt:  # a signal outside run(): its code, never the default handler's
        from cz.signals import EXIT_SIGINT, EXIT_SIGTERM, Terminated, after_commit

        if after_commit():
            sys.exit(0)
        sys.exit(EXIT_SIGTERM if isinstance(sys.exc_info()[1], Terminated) else EXIT_SIGINT)
    except BaseException as exc:  # anything a command let escape: one line, not a traceback
        if os.environ.get("CZ_DEBUG"):
            raise
        from cz.output import internal_error

        internal_error(exc)


if __name__ == "__main__":
    main()
