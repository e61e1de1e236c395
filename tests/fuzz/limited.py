"""Run a check in a child process whose address space is capped (decision 0013).

A recipe alias bomb parsed by unfixed code once took all 24 GB of a machine: a test that feeds
one must never run it in the pytest process. :func:`run_limited` calls ``module:function`` in
a fresh interpreter, imports first, then ``RLIMIT_AS`` at the child's size plus ``mem_mib``
and a wall-clock timeout, so a regression fails the test with a MemoryError in the child (or a
timeout) instead of taking the machine.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

__all__ = ["run_limited"]

REPO = Path(__file__).resolve().parents[2]

_CHILD = """\
import importlib, json, resource, sys
from tests.fuzz.run import _vm_bytes
mod, fn = sys.argv[1].split(":")
func = getattr(importlib.import_module(mod), fn)  # imports before the cap
cap = _vm_bytes() + int(sys.argv[3]) * 1024 * 1024
resource.setrlimit(resource.RLIMIT_AS, (cap, resource.getrlimit(resource.RLIMIT_AS)[1]))
print(json.dumps(func(*json.loads(sys.argv[2]))))
"""


def run_limited(call: str, *args: Any, mem_mib: int = 512, timeout: float = 120) -> Any:
    """The JSON result of ``call(*args)`` (``"package.module:function"``, JSON arguments and
    result) run in a child capped at ``mem_mib`` MiB above its size after imports. A child that
    fails (a MemoryError, an exception) fails the caller with the end of its stderr; one that
    runs past ``timeout`` seconds is killed (subprocess.TimeoutExpired)."""
    res = subprocess.run(
        [sys.executable, "-c", _CHILD, call, json.dumps(args), str(mem_mib)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if res.returncode != 0:
        raise AssertionError(f"{call} failed in the limited child: {res.stderr[-2000:]}")
    return json.loads(res.stdout.strip().splitlines()[-1])
