"""``cz worker``: a real dask worker joins a real scheduler with its profiler off (0026)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from cz.commands.worker import PROFILE_ENV, worker_command

pytest.importorskip("distributed")


def _profiler_state(dask_worker: object) -> tuple[bool, bool]:
    import dask

    callbacks = getattr(dask_worker, "periodic_callbacks", {})
    return bool(dask.config.get("distributed.worker.profile.enabled")), "profile" in callbacks


def _cz() -> str:
    exe = Path(sys.executable).with_name("cz")
    if not exe.exists():
        pytest.skip(f"no cz console script beside {sys.executable} (install the package)")
    return str(exe)


@pytest.mark.parametrize("profile", [False, True])
def test_cz_worker_joins_with_the_profiler_off_and_passes_dask_options(
    tmp_path: Path, profile: bool
) -> None:
    from distributed import Client

    from tests.dask_procs import dask_cluster

    with dask_cluster(tmp_path / "dask", 0) as procs:
        env = {k: v for k, v in procs.env.items() if k != PROFILE_ENV}
        argv = [_cz(), "worker", procs.address, *(["--profile"] if profile else [])]
        argv += ["--nthreads", "2", "--no-dashboard", "--host", "127.0.0.1", "--no-nanny"]
        argv += ["--local-directory", str(tmp_path / "w")]
        worker = subprocess.Popen(
            argv, env=env, start_new_session=True, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            with Client(procs.address, timeout="20s", set_as_default=False) as client:
                client.wait_for_workers(1, timeout=60)
                assert list(client.nthreads().values()) == [2]  # dask's own option passed on
                states = client.run(_profiler_state)
                assert list(states.values()) == [(profile, profile)]
                # the cz process became the worker (exec): its pid is the worker's
                assert list(client.run(os.getpid).values()) == [worker.pid]
        finally:
            os.killpg(worker.pid, signal.SIGTERM)
            worker.wait(timeout=20)


def test_worker_command_sets_only_the_profiler() -> None:
    argv, env = worker_command("tcp://h:1", ["--nthreads", "1"])
    assert argv[1:] == ["worker", "tcp://h:1", "--nthreads", "1"]
    assert env[PROFILE_ENV] == "False"
    assert {k: v for k, v in env.items() if k != PROFILE_ENV} == {
        k: v for k, v in os.environ.items() if k != PROFILE_ENV
    }
    _argv, env_on = worker_command("tcp://h:1", [], profile=True)
    assert env_on.get(PROFILE_ENV) == os.environ.get(PROFILE_ENV)
