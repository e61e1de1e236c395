"""What every ``cz`` command does the same way: the conventions of the field's CLIs.

- ``-h`` is ``--help``; ``cz --version``; shell completion (``cz --install-completion``).
- ``-q/--quiet`` and ``-v/--verbose`` (``-vv`` for debug) on every command, before or after its
  name: :func:`run` takes them out of the arguments, so a command added later has them too, and
  :class:`CzGroup` says so in every command's help.
  ``CZ_LOG_LEVEL`` (``DEBUG``, ``INFO``, ``WARNING``, ``ERROR`` or a number) sets the log level
  when neither is given. Logs go to stderr; ``--quiet`` also silences progress.
- Under ``--json`` an error is JSON on stdout, ``{"error": message, "code": exit_code}``, with
  the same exit code as without (:func:`cz.output.fail` asks :func:`json_requested`); usage
  errors included (:func:`run`).
- No traceback, ever: an unexpected exception is one ``error: internal error ...`` line (exit 1),
  with the traceback only under ``-vv``/``CZ_LOG_LEVEL=DEBUG``.
- Exit 75 (sysexits' ``EX_TEMPFAIL``) when another writer holds the target or committed it
  first: nothing was written, run again later (decision 0051). Ctrl-C exits 130, SIGTERM 143,
  unless the signal came after the run's commit: the run then finishes and exits with its own
  code, saying so in one line on stderr (:mod:`cz.signals`).
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
from dataclasses import dataclass
from typing import Any

import typer
from typer.core import TyperGroup

from cz.signals import EXIT_SIGINT, EXIT_SIGTERM, after_commit, is_terminated, received

__all__ = [
    "LOG_ENV",
    "STATE",
    "CzGroup",
    "configure_logging",
    "json_requested",
    "run",
    "split_common",
]

LOG_ENV = "CZ_LOG_LEVEL"
CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"]}


@dataclass
class State:
    """How this invocation prints: set once per command from its options."""

    quiet: bool = False
    verbosity: int = 0
    json: bool = False

    @property
    def debug(self) -> bool:
        return self.verbosity >= 2 or logging.getLogger().getEffectiveLevel() <= logging.DEBUG


STATE = State()


def _env_level() -> int | None:
    raw = os.environ.get(LOG_ENV, "").strip()
    if not raw:
        return None
    if raw.isdigit():
        return int(raw)
    level = logging.getLevelName(raw.upper())
    if isinstance(level, int):
        return level
    raise typer.BadParameter(
        f"{LOG_ENV}={raw!r}: expected DEBUG, INFO, WARNING, ERROR, CRITICAL or a number"
    )


def configure_logging(verbosity: int = 0, quiet: bool = False) -> int:
    """Log to stderr at the level the options (else CZ_LOG_LEVEL, else WARNING) ask for."""
    if quiet:
        level = logging.ERROR
    elif verbosity:
        level = logging.INFO if verbosity == 1 else logging.DEBUG
    else:
        level = _env_level() or logging.WARNING
    root = logging.getLogger()
    for handler in list(root.handlers):
        if getattr(handler, "_cz", False):
            root.removeHandler(handler)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    handler._cz = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(level)
    return level


COMMON_EPILOG = (
    "Every command also takes -q/--quiet (results only), -v/--verbose (-vv: debug; default "
    f"from {LOG_ENV}) and -h/--help."
)


def split_common(args: list[str]) -> tuple[list[str], bool, int]:
    """Take -q/--quiet and -v/-vv/--verbose out of ``args`` wherever they stand (before ``--``):
    they apply to every command, before or after its name. Returns (rest, quiet, verbosity)."""
    rest: list[str] = []
    quiet, verbosity = False, 0
    for i, arg in enumerate(args):
        if arg == "--":
            rest.extend(args[i:])
            break
        if arg in ("-q", "--quiet"):
            quiet = True
        elif arg == "--verbose":
            verbosity += 1
        elif len(arg) > 1 and arg[0] == "-" and set(arg[1:]) == {"v"}:
            verbosity += len(arg) - 1
        else:
            rest.append(arg)
    return rest, quiet, verbosity


class CzGroup(TyperGroup):
    """The app's command group: takes the common options out of the arguments wherever they
    stand, applies them and ``--json``'s error mode, and says so in every command's help."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        rest, quiet, verbosity = split_common(list(args))
        before = rest[: rest.index("--")] if "--" in rest else rest
        STATE.quiet, STATE.verbosity, STATE.json = quiet, verbosity, "--json" in before
        configure_logging(verbosity, quiet)
        return super().parse_args(ctx, rest)  # type: ignore[no-any-return]

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        command = super().get_command(ctx, cmd_name)
        if command is not None and not command.epilog:
            command.epilog = COMMON_EPILOG
        return command


def json_requested() -> bool:
    """True when the running command was given ``--json``."""
    return STATE.json


def _json_error(message: str, code: int) -> None:
    sys.stdout.write(json.dumps({"error": message, "code": code}) + "\n")
    sys.stdout.flush()


def _interrupted(exc: BaseException) -> int:
    """One line and the shell's exit code for Ctrl-C (130) or SIGTERM (143, cz.signals); the
    commands' cleanup (staging, spill, ``.tmp``) has run on the way here."""
    if is_terminated(exc) or received() == signal.SIGTERM:
        sys.stderr.write("terminated (SIGTERM); temporary files removed\n")
        return EXIT_SIGTERM
    sys.stderr.write("aborted\n" if isinstance(exc, typer.Abort) else "interrupted\n")
    return EXIT_SIGINT


def run(app: typer.Typer, argv: list[str] | None = None) -> int:
    """Run the app as the console script does; returns the exit code (see the module doc)."""
    args = sys.argv[1:] if argv is None else list(argv)
    as_json = "--json" in (args[: args.index("--")] if "--" in args else args)
    try:
        result = app(args=args, prog_name="cz", standalone_mode=False)
    except typer.Exit as exc:  # the command chose its code (unless a signal stopped it)
        if received() is not None and not after_commit():
            return _interrupted(exc)
        _note_after_commit()
        return int(exc.exit_code or 0)
    except (typer.Abort, KeyboardInterrupt) as exc:  # Ctrl-C or SIGTERM (cz.signals)
        return _interrupted(exc)
    except typer.TyperException as exc:  # usage errors (exit 2): the message typer would print
        code = int(getattr(exc, "exit_code", 2))
        if as_json:
            _json_error(exc.format_message(), code)
        elif hasattr(exc, "show"):
            exc.show()
        else:
            sys.stderr.write(f"error: {exc.format_message()}\n")
        return code
    except Exception as exc:  # a bug: one line, the traceback only when debugging
        if STATE.debug:
            raise
        message = f"internal error {type(exc).__name__}: {exc} (run with -vv for the traceback)"
        if as_json:
            _json_error(message, 1)
        else:
            sys.stderr.write(f"error: {message}\n")
        return 1
    if received() is not None and not after_commit():  # typer made Ctrl-C a silent 130
        return _interrupted(KeyboardInterrupt())
    _note_after_commit()
    return int(result) if isinstance(result, int) else 0


def _note_after_commit() -> None:
    """One line when a signal arrived after the commit: the run finished anyway (cz.signals)."""
    if received() is not None and after_commit():
        name = "SIGTERM" if received() == signal.SIGTERM else "SIGINT"
        sys.stderr.write(f"received {name} after the commit; the run finished\n")
