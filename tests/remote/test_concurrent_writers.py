"""Two writers on one store at once, as real processes (decision 0051), against moto's S3 server
on 127.0.0.1 and a local folder.

Each pair starts its two processes ``stagger`` seconds apart; every durable write of both sleeps
``CZ_FAULT_DELAY`` (the kill-point hook), so their runs overlap by construction at stagger 0.
Whatever the interleaving, the end state is the store of a serial run of the writers that
reported success, in the order they succeeded (never a month a writer reported and the store
lacks), and each loser exits 75 with one line naming the store, or (when it started after the
winner finished) is refused as it would be serially. The oracle is the writers' own inputs:
the final store's times and every timestep's values, decoded, and a deep validation.

The S3 appends run the format library's ``chronozarr.append`` in a child Python (what ``cz
append --scheduler`` runs on the client; a dask cluster would add nothing to the race); builds
and publishes run ``cz``. The local pairs run ``cz convert`` (``--append``) and ``cz build
--overwrite``.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import chronozarr
from chronozarr.io import LEASE_KEY
from tests.remote.conftest import Moto, list_keys, new_bucket

H = W = 16
BANDS = [{"name": "B04", "scale": 1e-4, "offset": 0.0}]
CRS = "EPSG:32631"
TRANSFORM = [10.0, 0.0, 500000.0, 0.0, -10.0, 4000000.0]
BUSY = 75

#: the child of an S3 append: appends ``n`` months from ``start`` (1-based) drawn from ``seed``
APPEND_CHILD = textwrap.dedent(
    """
    import sys
    import numpy as np
    import chronozarr
    url, seed, start, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    rng = np.random.default_rng(seed)
    data = rng.integers(1, 1000, size=(start - 1 + n, 1, 16, 16)).astype(np.uint16)[start - 1:]
    times = [f"2024-{start + i:02d}-01T00:00:00Z" for i in range(n)]
    try:
        chronozarr.append(url, data, times=times)
    except chronozarr.ConcurrentWriteError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(75)
    except chronozarr.AppendError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(1)
    print("appended")
    """
)


def months(seed: int, start: int, n: int) -> np.ndarray:
    """The values APPEND_CHILD appends (the oracle: the writer's own input)."""
    rng = np.random.default_rng(seed)
    return rng.integers(1, 1000, size=(start - 1 + n, 1, 16, 16)).astype(np.uint16)[start - 1 :]


def base_store(path: Path, seed: int = 7) -> np.ndarray:
    """Three months (2024-01..03) of ``seed``'s values, written locally."""
    data = months(seed, 1, 3)
    chronozarr.encode(
        data,
        path,
        times=[f"2024-{m:02d}-01T00:00:00Z" for m in (1, 2, 3)],
        bands=BANDS,
        crs=CRS,
        transform=TRANSFORM,
        chunk_size=16,
    )
    return data


def env_for(moto: Moto | None, delay: float = 0.03, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CZ_FAULT")}
    if moto is not None:
        env.update(
            AWS_ACCESS_KEY_ID="testing",
            AWS_SECRET_ACCESS_KEY="testing",
            AWS_REGION="us-east-1",
            AWS_ENDPOINT_URL=moto.endpoint,
        )
    env["CZ_FAULT_DELAY"] = str(delay)
    env.update(extra)
    return env


def start(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        args, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def race(
    a: list[str], b: list[str], stagger: float, env: dict[str, str], cwd: Path
) -> list[tuple[int, str, float]]:
    """Run ``a``, then ``b`` ``stagger`` s later; (exit code, stderr, end time) of each."""
    pa = start(a, env, cwd)
    time.sleep(stagger)
    pb = start(b, env, cwd)
    out = []
    for p in (pa, pb):
        _stdout, stderr = p.communicate(timeout=240)
        out.append((p.returncode, stderr, time.monotonic()))
    return out


def append_cmd(url: str, seed: int, first: int, n: int) -> list[str]:
    return [sys.executable, "-c", APPEND_CHILD, url, str(seed), str(first), str(n)]


def assert_one_line_busy(stderr: str, where: str) -> None:
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert "Traceback" not in stderr, stderr
    errors = [ln for ln in lines if ln.startswith("error:")]
    assert len(errors) == 1, stderr
    assert where in errors[0] and "another writer" in errors[0], errors[0]


def decoded(url: str) -> tuple[list[str], np.ndarray]:
    reader = chronozarr.open_store(url)
    return list(reader.attrs.times), np.stack([reader.read(t) for t in range(reader.n_time)])


def assert_valid(url: str) -> None:
    report = chronozarr.validate(url, deep=True)
    assert not report.errors, [str(f) for f in report.errors]


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray]:
    folder = tmp_path_factory.mktemp("concurrent-base")
    data = base_store(folder / "base.zarr")
    return folder / "base.zarr", data


def s3_base(s3: Any, base: tuple[Path, np.ndarray], s3env: Moto) -> str:
    from cz import publish as pub

    url = f"s3://{new_bucket(s3)}/store.zarr"
    pub.publish(base[0], url, workers=4)
    return url


# --- S3: appends ------------------------------------------------------------------------------


@pytest.mark.parametrize("stagger", [0.0, 1.5])
def test_two_s3_appends_of_different_months(
    stagger: float, base: tuple[Path, np.ndarray], s3: Any, s3env: Moto, tmp_path: Path
) -> None:
    """A appends 2024-04, B 2024-05 (from another seed). Serially: A then B both land; B then A
    refuses A (April before May). Racing: the loser of the lease exits 75, nothing of it lands."""
    url = s3_base(s3, base, s3env)
    (ca, ea, ta), (cb, eb, tb) = race(
        append_cmd(url, 11, 4, 1), append_cmd(url, 12, 5, 1), stagger, env_for(s3env, 0.1), tmp_path
    )
    times, values = decoded(url)
    a, b = months(11, 4, 1), months(12, 5, 1)
    assert_valid(url)
    np.testing.assert_array_equal(values[:3], base[1])
    if ca == 0 and cb == 0:  # serial A then B (B finished second)
        assert tb >= ta
        assert times[3:] == ["2024-04-01T00:00:00Z", "2024-05-01T00:00:00Z"]
        np.testing.assert_array_equal(values[3:], np.concatenate([a, b]))
    elif ca == 0:
        assert cb == BUSY, eb
        assert_one_line_busy(eb, url)
        assert times[3:] == ["2024-04-01T00:00:00Z"]
        np.testing.assert_array_equal(values[3:], a)
    else:
        assert cb == 0, eb
        assert ca in (BUSY, 1), ea  # 1: serially after B, April is refused
        if ca == BUSY:
            assert_one_line_busy(ea, url)
        assert times[3:] == ["2024-05-01T00:00:00Z"]
        np.testing.assert_array_equal(values[3:], b)
    if stagger == 0.0:
        assert BUSY in (ca, cb), (ea, eb)  # the runs overlapped: one found the other's lease


@pytest.mark.parametrize("stagger", [0.0, 1.5])
def test_two_s3_appends_of_the_same_month(
    stagger: float, base: tuple[Path, np.ndarray], s3: Any, s3env: Moto, tmp_path: Path
) -> None:
    """Both append 2024-04 (other values, and B also 2024-05): exactly one lands, whole."""
    url = s3_base(s3, base, s3env)
    (ca, ea, _ta), (cb, eb, _tb) = race(
        append_cmd(url, 21, 4, 1), append_cmd(url, 22, 4, 2), stagger, env_for(s3env, 0.1), tmp_path
    )
    assert sorted([ca, cb])[0] == 0 and sorted([ca, cb])[1] in (BUSY, 1), (ea, eb)
    times, values = decoded(url)
    assert_valid(url)
    want = months(21, 4, 1) if ca == 0 else months(22, 4, 2)
    assert len(times) == 3 + len(want)
    np.testing.assert_array_equal(values[3:], want)
    loser = eb if ca == 0 else ea
    if BUSY in (ca, cb):
        assert_one_line_busy(loser, url)
    else:  # serial: "already in the store"
        assert "2024-04-01" in loser and "Traceback" not in loser


def test_s3_append_racing_a_publish(
    base: tuple[Path, np.ndarray], s3: Any, s3env: Moto, tmp_path: Path
) -> None:
    """A appends 2024-04 to the bucket; B publishes a local copy grown by the same April and a
    May. Serially: A then B publishes May on top; B then A refuses April. Racing: one is 75."""
    url = s3_base(s3, base, s3env)
    local = tmp_path / "grown.zarr"
    import shutil

    shutil.copytree(base[0], local)
    chronozarr.append(
        local,
        np.concatenate([months(31, 4, 1), months(32, 5, 1)]),
        times=["2024-04-01T00:00:00Z", "2024-05-01T00:00:00Z"],
    )
    (ca, ea, _ta), (cb, eb, _tb) = race(
        append_cmd(url, 31, 4, 1),
        [sys.executable, "-m", "cz", "publish", str(local), url, "-q"],
        0.0,
        env_for(s3env),
        tmp_path,
    )
    times, values = decoded(url)
    assert_valid(url)
    assert "Traceback" not in ea + eb
    if cb == 0:  # the publish landed (after A, or before it and A was refused/busy)
        assert times[3:] == ["2024-04-01T00:00:00Z", "2024-05-01T00:00:00Z"]
        np.testing.assert_array_equal(values[3:], decoded(str(local))[1][3:])
        assert ca in (0, 1, BUSY), ea
    else:
        assert ca == 0 and cb == BUSY, (ea, eb)
        assert_one_line_busy(eb, url)
        assert times[3:] == ["2024-04-01T00:00:00Z"]
        np.testing.assert_array_equal(values[3:], months(31, 4, 1))


def test_two_builds_to_one_s3_prefix(s3: Any, s3env: Moto, tmp_path: Path) -> None:
    """Two different new stores published to one empty prefix at once (``cz build --out
    s3://`` builds locally, then publishes): the prefix ends as exactly one of them."""
    one, two = tmp_path / "one.zarr", tmp_path / "two.zarr"
    base_store(one, seed=41)
    base_store(two, seed=42)
    bucket = new_bucket(s3)
    url = f"s3://{bucket}/new.zarr"
    cmd = [sys.executable, "-m", "cz", "publish"]
    (ca, ea, _ta), (cb, eb, _tb) = race(
        [*cmd, str(one), url, "-q"], [*cmd, str(two), url, "-q"], 0.0, env_for(s3env, 0.1), tmp_path
    )
    assert sorted([ca, cb])[0] == 0, (ea, eb)
    winner, loser_code, loser_err = (one, cb, eb) if ca == 0 else (two, ca, ea)
    assert loser_code in (BUSY, 1), loser_err  # 1: serially, a re-encode over a store
    if loser_code == BUSY:
        assert_one_line_busy(loser_err, url)
    remote = list_keys(s3, bucket, "new.zarr/")
    local = {k: (winner / k).read_bytes() for k, _ in chronozarr.io.walk(winner)}
    assert set(remote) == set(local)
    for key in local:
        body = s3.get_object(Bucket=bucket, Key=f"new.zarr/{key}")["Body"].read()
        assert body == local[key], key
    assert LEASE_KEY not in remote


# --- S3: a host without conditional writes -------------------------------------------------------


def test_a_host_that_ignores_conditional_writes_is_refused_or_warned(
    base: tuple[Path, np.ndarray], s3: Any, s3env: Moto, tmp_path: Path
) -> None:
    url = s3_base(s3, base, s3env)
    s3env.log.ignore_conditions = True
    try:
        refused = subprocess.run(
            append_cmd(url, 51, 4, 1), env=env_for(s3env, 0.0), capture_output=True, text=True
        )
        assert refused.returncode != 0
        assert "ignores conditional writes" in refused.stderr, refused.stderr
        assert "CZ_CONDITIONAL_WRITES=warn" in refused.stderr
        assert len(decoded(url)[0]) == 3  # nothing appended
        warned = subprocess.run(
            append_cmd(url, 51, 4, 1),
            env=env_for(s3env, 0.0, CZ_CONDITIONAL_WRITES="warn"),
            capture_output=True,
            text=True,
        )
        assert warned.returncode == 0, warned.stderr
        import shutil

        grown = tmp_path / "grown.zarr"  # cz publish: the option says the same
        shutil.copytree(base[0], grown)
        chronozarr.append(grown, months(51, 4, 2), times=["2024-04-01", "2024-05-01"])
        cmd = [sys.executable, "-m", "cz", "publish", str(grown), url, "-q"]
        no = subprocess.run(cmd, env=env_for(s3env, 0.0), capture_output=True, text=True)
        assert no.returncode == 1 and "ignores conditional writes" in no.stderr, no.stderr
        yes = subprocess.run(
            [*cmd, "--conditional-writes", "warn"],
            env=env_for(s3env, 0.0),
            capture_output=True,
            text=True,
        )
        assert yes.returncode == 0, yes.stderr
    finally:
        s3env.log.ignore_conditions = False
    assert len(decoded(url)[0]) == 5


# --- S3: kill points ---------------------------------------------------------------------------


def _objects(s3: Any, bucket: str, prefix: str) -> dict[str, str]:
    return {
        k: hashlib.sha256(s3.get_object(Bucket=bucket, Key=prefix + k)["Body"].read()).hexdigest()
        for k in list_keys(s3, bucket, prefix)
    }


def test_s3_publish_killed_between_uploads_and_around_the_root_cas(
    base: tuple[Path, np.ndarray], s3: Any, s3env: Moto, tmp_path: Path
) -> None:
    """``cz publish`` of a grown store over the bucket's base, SIGKILLed at an upload in the
    middle, just before the root's compare-and-swap and just after it (its lease removal): the
    bucket keeps the old root or holds the new one, and a re-run (taking over the dead run's
    lease: same host, its pid gone) ends with exactly the objects of an uninterrupted publish."""
    import shutil

    local = tmp_path / "grown.zarr"
    shutil.copytree(base[0], local)
    chronozarr.append(local, months(61, 4, 1), times=["2024-04-01T00:00:00Z"])
    env = env_for(s3env, 0.0)
    bucket = new_bucket(s3)

    def run(url: str, **extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "cz", "publish", str(local), url, "-q"],
            env={**env, **extra},
            capture_output=True,
            text=True,
            timeout=240,
        )

    from cz import publish as pub

    ref_url = f"s3://{bucket}/ref.zarr"
    pub.publish(base[0], ref_url, workers=4)
    trace = tmp_path / "trace"
    assert run(ref_url, CZ_FAULT_TRACE=str(trace)).returncode == 0
    reference = _objects(s3, bucket, "ref.zarr/")
    points = trace.read_text().splitlines()
    root = next(i for i, ln in enumerate(points, 1) if ln.endswith(" zarr.json"))
    wanted = {"middle upload": root // 2, "before the root CAS": root, "after it": root + 1}
    assert root + 1 <= len(points), points
    for name, n in wanted.items():
        url = f"s3://{bucket}/k{n}.zarr"
        pub.publish(base[0], url, workers=4)
        killed = run(url, CZ_FAULT_AT=str(n))
        assert killed.returncode == -9, (name, killed.stderr)
        times = decoded(url)[0]
        assert len(times) in (3, 4), name  # the old root or the new one, never a torn one
        assert_valid(url)
        again = run(url)
        assert again.returncode == 0, (name, again.stderr)
        assert _objects(s3, bucket, f"k{n}.zarr/") == reference, name


def test_s3_append_killed_around_the_root_cas(
    base: tuple[Path, np.ndarray], s3: Any, s3env: Moto, tmp_path: Path
) -> None:
    """``chronozarr.append`` to the bucket SIGKILLed at an in-place write (the journal's
    volatility), just before the root's compare-and-swap and just after it: the old root or
    the new one, and a re-run (taking over the dead run's lease) ends with exactly the objects
    of an uninterrupted append, the journal and the lease gone."""
    env = env_for(s3env, 0.0)
    ref = s3_base(s3, base, s3env)
    trace = tmp_path / "trace"
    done = subprocess.run(
        append_cmd(ref, 91, 4, 1), env={**env, "CZ_FAULT_TRACE": str(trace)}, capture_output=True,
        text=True, timeout=240,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    bucket, prefix = ref[5:].split("/", 1)
    reference = _objects(s3, bucket, prefix + "/")
    points = trace.read_text().splitlines()
    root = next(i for i, ln in enumerate(points, 1) if ln.endswith(" zarr.json") and " put " in ln)
    vol = next(i for i, ln in enumerate(points, 1) if "volatility/c/0/0" in ln)
    for name, n in {"volatility": vol, "before the CAS": root, "after it": root + 1}.items():
        url = s3_base(s3, base, s3env)
        killed = subprocess.run(
            append_cmd(url, 91, 4, 1), env={**env, "CZ_FAULT_AT": str(n)}, capture_output=True,
            text=True, timeout=240,
        )  # fmt: skip
        assert killed.returncode == -9, (name, killed.stderr)
        assert len(decoded(url)[0]) in (3, 4), name
        again = subprocess.run(append_cmd(url, 91, 4, 1), env=env, capture_output=True, text=True)
        # after the CAS the month is in: the re-run is refused as a serial one would be
        assert again.returncode == (1 if name == "after it" else 0), (name, again.stderr)
        b, pre = url[5:].split("/", 1)
        assert _objects(s3, b, pre + "/") == reference, name


# --- local folders: cz convert, cz build --overwrite, cz export ---------------------------------


def _tifs(folder: Path, seed: int, dates: list[str]) -> np.ndarray:
    from tests.cz.convert.helpers import write_series

    rng = np.random.default_rng(seed)
    values = rng.integers(1, 1000, size=(len(dates), 1, H, W)).astype(np.uint16)
    write_series(folder, values, dates)
    return values


def _convert_base(tmp_path: Path) -> tuple[Path, np.ndarray]:
    src = tmp_path / "src0"
    values = _tifs(src, 70, ["20240101", "20240201", "20240301"])
    store = tmp_path / "s.zarr"
    done = subprocess.run(
        [sys.executable, "-m", "cz", "convert", str(src), str(store), "-q"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    return store, values


@pytest.mark.parametrize("same_month", [False, True])
def test_two_local_convert_appends(same_month: bool, tmp_path: Path) -> None:
    """Two ``cz convert --append`` into one local store at once: the second finds the first's
    target lock and exits 75 before writing, or (serially) appends after it or skips what is
    already in. Every month a run reported is in the store with that run's values."""
    store, old = _convert_base(tmp_path)
    src_a, src_b = tmp_path / "a", tmp_path / "b"
    a = _tifs(src_a, 71, ["20240401"])
    b = _tifs(src_b, 72, ["20240401" if same_month else "20240501"])
    cmd = [sys.executable, "-m", "cz", "convert"]
    (ca, ea, _ta), (cb, eb, _tb) = race(
        [*cmd, str(src_a), str(store), "--append", "-q"],
        [*cmd, str(src_b), str(store), "--append", "-q"],
        0.0,
        env_for(None, 0.25),  # an append writes few objects: a wide window for each
        tmp_path,
    )
    assert "Traceback" not in ea + eb
    times, values = decoded(str(store))
    assert_valid(str(store))
    np.testing.assert_array_equal(values[:3], old)
    assert BUSY in (ca, cb), (ea, eb)  # overlapped by construction
    winner = a if ca == 0 else b
    loser_err = eb if ca == 0 else ea
    assert "error:" in loser_err and str(store) in loser_err, loser_err
    assert "another cz run holds this target" in loser_err, loser_err
    assert len(times) == 4
    np.testing.assert_array_equal(values[3:], winner)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_two_local_builds_into_one_target(tmp_path: Path) -> None:
    """Two ``cz convert`` (a build) into one new folder: one store, whole; the other exits 75
    (or, serially, is refused: the folder holds a store)."""
    src_a, src_b = tmp_path / "a", tmp_path / "b"
    a = _tifs(src_a, 81, ["20240101", "20240201"])
    b = _tifs(src_b, 82, ["20240101", "20240201"])
    store = tmp_path / "new.zarr"
    cmd = [sys.executable, "-m", "cz", "convert"]
    (ca, ea, _ta), (cb, eb, _tb) = race(
        [*cmd, str(src_a), str(store), "-q"],
        [*cmd, str(src_b), str(store), "-q"],
        0.0,
        env_for(None, 0.05),
        tmp_path,
    )
    assert sorted([ca, cb])[0] == 0 and sorted([ca, cb])[1] in (BUSY, 1), (ea, eb)
    assert "Traceback" not in ea + eb and "internal error" not in ea + eb
    _times, values = decoded(str(store))
    np.testing.assert_array_equal(values, a if ca == 0 else b)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_concurrent_exports_into_one_folder(tmp_path: Path) -> None:
    """Three ``cz export`` of one store into one folder at once: none fails, the files are
    whole, and no part file is left."""
    store, values = _convert_base(tmp_path)
    out = tmp_path / "tifs"
    procs = [
        start(
            [sys.executable, "-m", "cz", "export", str(store), str(out), "--overwrite", "-q"],
            env_for(None, 0.0),
            tmp_path,
        )
        for _ in range(3)
    ]
    for p in procs:
        _o, err = p.communicate(timeout=240)
        assert p.returncode == 0, err
    from tests.cz.convert.helpers import read_tif

    files = sorted(out.iterdir())
    assert [f.name for f in files if f.name.startswith(".")] == []
    assert len(files) == 3
    for f, want in zip(files, values, strict=True):
        np.testing.assert_array_equal(read_tif(f), want)


@pytest.mark.filterwarnings("ignore::rasterio.errors.NotGeoreferencedWarning")
def test_two_local_overwrites(tmp_path: Path) -> None:
    """Two ``cz build --overwrite`` of one store at once (a two-month and a three-month
    recipe): the store is one of the two builds, whole; the other run exits 75 naming the
    first; nothing is left beside the store."""
    from tests.cz.scenes import recipe, scenario, write_items

    catalog = tmp_path / "catalog"
    catalog.mkdir()
    write_items(catalog, scenario()[0])
    two = recipe(catalog, start="2024-01", end="2024-02", name="two.yaml")
    three = recipe(catalog, start="2024-01", end="2024-03", name="three.yaml")
    out = tmp_path / "out"
    out.mkdir()
    store = out / "s.zarr"
    first = subprocess.run(
        [sys.executable, "-m", "cz", "build", str(two), "--out", str(store), "-q"],
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert first.returncode == 0, first.stderr
    cmd = [sys.executable, "-m", "cz", "build"]
    (ca, ea, _ta), (cb, eb, _tb) = race(
        [*cmd, str(two), "--out", str(store), "--overwrite", "-q"],
        [*cmd, str(three), "--out", str(store), "--overwrite", "-q"],
        0.0,
        env_for(None, 0.05),
        tmp_path,
    )
    assert sorted([ca, cb]) == [0, BUSY], (ea, eb)
    loser = eb if ca == 0 else ea
    assert "another cz run holds this target" in loser and "Traceback" not in loser, loser
    assert chronozarr.open_store(store).n_time == (2 if ca == 0 else 3)
    assert_valid(str(store))
    assert [p.name for p in out.iterdir() if p.name.startswith(".")] == []


def test_a_build_to_a_held_s3_prefix_stops_before_building(
    s3: Any, s3env: Moto, tmp_path: Path
) -> None:
    """``cz build --out s3://`` takes the prefix's lease before it builds: while another writer
    holds it, the build exits 75 at once, builds nothing and leaves no local copy."""
    from chronozarr.io import Lease, ObjectStore
    from tests.cz.scenes import recipe, scenario, write_items

    catalog = tmp_path / "catalog"
    catalog.mkdir()
    write_items(catalog, scenario()[0])
    rec = recipe(catalog, start="2024-01", end="2024-01", name="one.yaml")
    url = f"s3://{new_bucket(s3)}/held.zarr"
    lease = Lease(ObjectStore(url), "cz publish (another machine)").acquire()
    try:
        work = tmp_path / "work"
        work.mkdir()
        res = subprocess.run(
            [sys.executable, "-m", "cz", "build", str(rec), "--out", url, "-q"],
            env=env_for(s3env, 0.0),
            capture_output=True,
            text=True,
            cwd=work,
            timeout=240,
        )
    finally:
        lease.release()
    assert res.returncode == BUSY, res.stderr
    assert_one_line_busy(res.stderr, url)
    assert "cz publish (another machine)" in res.stderr
    assert list(work.iterdir()) == []
