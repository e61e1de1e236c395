"""Entry points the fuzz harness drives, each returning a digest of what it produced.

Every function takes the store path and returns ``("ok", digest)`` or ``("finding", digest)``,
or raises. The CLI entries run the real typer app in this (forked) process with stdout and
stderr on files, and report the exit code and whether a traceback was printed.
"""

from __future__ import annotations

import hashlib
import sys
import traceback
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["ENTRIES", "run_cli"]


def _digest(*arrays: Any) -> str:
    h = hashlib.sha256()
    for a in arrays:
        if a is None:
            h.update(b"None")
            continue
        a = np.asarray(a)
        h.update(str(a.dtype).encode() + str(a.shape).encode())
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:16]


def _open(store: str) -> tuple[str, str]:
    import chronozarr

    r = chronozarr.open_store(store)
    return "ok", hashlib.sha256(repr((r.n_time, r.band_names, r.levels)).encode()).hexdigest()[:16]


def _read(store: str) -> tuple[str, str]:
    import chronozarr

    r = chronozarr.open_store(store)
    return "ok", _digest(*(r.read(t, level) for t in range(r.n_time) for level in (0, 1)))


def _read_cell(store: str) -> tuple[str, str]:
    import chronozarr

    r = chronozarr.open_store(store)
    return "ok", _digest(r.read_cell(r.n_time - 1, 0, 0), r.read_cell(1, 0, 0, level=1))


def _valid(store: str) -> tuple[str, str]:
    import chronozarr

    r = chronozarr.open_store(store)
    return "ok", _digest(r.valid(0), r.valid(r.n_time - 1, 1), r.volatility())


def _validate_deep(store: str) -> tuple[str, str]:
    import chronozarr

    report = chronozarr.validate(store, deep=True)
    rules = sorted({f.rule for f in report.findings})
    return ("ok" if not report.findings else "finding"), ",".join(rules)[:200]


def run_cli(args: list[str]) -> tuple[int, bool]:
    """Run ``cz ARGS`` as its console script would; (exit code, traceback printed)."""
    from cz.app import main

    argv = sys.argv
    sys.argv = ["cz", *args]
    try:
        main()
        return 0, False
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        return code, False
    except BaseException:  # what Python would print as a traceback and exit 1 with
        traceback.print_exc()
        return 1, True
    finally:
        sys.argv = argv


def _cli(args: list[str]) -> tuple[str, str]:
    code, tb = run_cli(args)
    if tb:
        raise _Traceback(f"cz {args[0]} printed a traceback")
    if code == 0:
        return "ok", "exit 0"
    if code == 3:
        return "finding", "exit 3"
    raise _CliError(code)


class _Traceback(Exception):
    """The CLI let an exception escape (Python prints its traceback)."""


class _CliError(Exception):
    """The CLI exited 1 or 2 with a message (a typed error at the command line)."""

    def __init__(self, code: int):
        self.code = code
        super().__init__(f"exit {code}")


def _cli_validate(store: str) -> tuple[str, str]:
    return _cli(["validate", store])


def _cli_validate_deep(store: str) -> tuple[str, str]:
    return _cli(["validate", "--deep", store])


def _cli_inspect(store: str) -> tuple[str, str]:
    return _cli(["inspect", store])


ENTRIES: dict[str, Callable[[str], tuple[str, str]]] = {
    "open_store": _open,
    "read": _read,
    "read_cell": _read_cell,
    "valid": _valid,
    "validate_deep": _validate_deep,
    "cz_validate": _cli_validate,
    "cz_validate_deep": _cli_validate_deep,
    "cz_inspect": _cli_inspect,
}
