"""A real dask.distributed cluster for tests: ``dask scheduler`` and ``dask worker`` processes
on 127.0.0.1 (free ports), started and stopped by the test (decision 0017).

Workers get the environment the test passes (the moto endpoint and credentials), exactly as a
user's workers would get theirs; a worker can be killed (SIGKILL) to test lost workers.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from tests.cz.helpers import free_port


def _dask_cli() -> str:
    exe = Path(sys.executable).with_name("dask")
    return str(exe) if exe.exists() else (shutil.which("dask") or "dask")


@dataclass
class DaskProcs:
    address: str
    workdir: Path
    env: dict[str, str]
    scheduler: subprocess.Popen[bytes] | None = None
    workers: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def add_worker(self, name: str, memory: str = "1.5GiB") -> subprocess.Popen[bytes]:
        with open(self.workdir / f"worker-{name}.log", "wb") as log:  # the child keeps its copy
            proc = subprocess.Popen(
                [
                    _dask_cli(), "worker", self.address, "--nthreads", "1", "--nworkers", "1",
                    "--memory-limit", memory, "--no-dashboard", "--host", "127.0.0.1",
                    "--name", name, "--local-directory", str(self.workdir / f"w-{name}"),
                    "--no-nanny",
                ],
                stdout=log, stderr=subprocess.STDOUT, env=self.env, start_new_session=True,
            )  # fmt: skip
        self.workers.append(proc)
        return proc

    def kill(self, proc: subprocess.Popen[bytes]) -> None:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)

    def logs(self) -> str:
        return "\n".join(p.read_text(errors="replace")[-3000:] for p in self.workdir.glob("*.log"))


def _wait_workers(address: str, n: int, deadline: float) -> None:
    from distributed import Client

    with Client(address, timeout="20s", set_as_default=False) as client:  # the scheduler is up
        if n:
            client.wait_for_workers(n, timeout=max(1.0, deadline - time.monotonic()))


@contextmanager
def dask_cluster(
    workdir: Path, n_workers: int, env: Mapping[str, str] | None = None
) -> Iterator[DaskProcs]:
    """A scheduler and ``n_workers`` single-thread worker processes; all stopped on exit."""
    workdir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    root = str(Path(__file__).resolve().parents[1])  # the repo: workers import tests' sources
    full_env = {**os.environ, **(env or {}), "DASK_DISTRIBUTED__WORKER__DAEMON": "False"}
    full_env["PYTHONPATH"] = os.pathsep.join(p for p in (root, full_env.get("PYTHONPATH")) if p)
    full_env["PYTHONWARNINGS"] = "ignore"
    procs = DaskProcs(f"tcp://127.0.0.1:{port}", workdir, full_env)
    with open(workdir / "scheduler.log", "wb") as log:  # the child keeps its own copy
        procs.scheduler = subprocess.Popen(
            [
                _dask_cli(), "scheduler", "--host", "127.0.0.1", "--port", str(port),
                "--no-dashboard", "--no-show",
                # its HTTP endpoints (health, metrics) default to 0.0.0.0:8787, taken by any
                # other scheduler on the machine: a random port on 127.0.0.1 instead
                "--dashboard-address", "127.0.0.1:0",
            ],
            stdout=log, stderr=subprocess.STDOUT, env=full_env, start_new_session=True,
        )  # fmt: skip
    try:
        for i in range(n_workers):
            procs.add_worker(f"w{i}")
        _wait_workers(procs.address, n_workers, time.monotonic() + 60)
        yield procs
    finally:
        for proc in [*procs.workers, procs.scheduler]:
            if proc is not None and proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in [*procs.workers, procs.scheduler]:
            if proc is None:
                continue
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:  # a stuck process: kill it
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
