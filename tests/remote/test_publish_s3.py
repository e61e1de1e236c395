"""``cz publish`` to an S3-compatible server (moto on 127.0.0.1) and reading back over s3://
(docs/hosting.md): order, headers, interruption, re-publish after append, refusal of a re-encode."""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

import chronozarr
from cz import publish as pub
from cz.app import app
from tests.remote.conftest import (
    SHARD_TIME,
    T0,
    T_ADD,
    Moto,
    ServerRequest,
    assert_reads_equal,
    files,
    list_keys,
    new_bucket,
)

runner = CliRunner()

SHORT = "public, max-age=60"
LONG = "public, max-age=31536000, immutable"


def expected_cache_control(key: str, n_time: int, shard_time: int | None) -> str:
    """spec 14: short for objects an append rewrites in place, long (immutable) for the rest."""
    if key.endswith("zarr.json") or re.fullmatch(r"(\d+/)?time/c/0", key):
        return SHORT
    if key == "volatility/c/0/0":
        return SHORT
    m = re.fullmatch(r"\d+/(data|mask|coverage)/c/(\d+)/.+", key)
    if shard_time and m and int(m.group(2)) == (n_time - 1) // shard_time:
        return SHORT
    return LONG


def phase_of(key: str) -> int:
    """spec 9/14 upload order: chunks, then time and volatility, then zarr.json, root last."""
    if key == "zarr.json":
        return 4
    if key.endswith("/zarr.json"):
        return 3
    if re.fullmatch(r"(\d+/)?time/c/0", key) or key == "volatility/c/0/0":
        return 2
    return 1


def test_constants_are_the_documented_policy() -> None:
    assert pub.SHORT_CACHE_CONTROL == SHORT
    assert pub.LONG_CACHE_CONTROL == LONG


@dataclass
class Published:
    bucket: str
    prefix: str  # "stores/<name>"
    result: pub.PublishResult
    puts: list[ServerRequest]  # the server's log of this publish's PUTs


@pytest.fixture(scope="module")
def published(stores: dict[str, Path], s3: Any, s3env: Moto) -> dict[str, Published]:
    """Both stores published once to a fresh bucket, with the server's log of each publish."""
    bucket = new_bucket(s3)
    out = {}
    for name in ("unsharded", "sharded"):
        before = len(s3env.log.puts(bucket))
        result = pub.publish(stores[name], f"s3://{bucket}/stores/{name}", workers=6)
        out[name] = Published(bucket, f"stores/{name}", result, s3env.log.puts(bucket)[before:])
    return out


@pytest.mark.parametrize("name", ["unsharded", "sharded"])
def test_publish_then_read_every_timestep_over_s3(
    name: str, stores: dict[str, Path], s3: Any, published: dict[str, Published]
) -> None:
    src, p = stores[name], published[name]
    local_files = files(src)
    assert sorted(p.result.uploaded) == sorted(local_files)
    remote_keys = list_keys(s3, p.bucket, f"{p.prefix}/")
    assert set(remote_keys) == set(local_files)
    for key, obj in remote_keys.items():
        assert obj["Size"] == len(local_files[key]), key

    url = f"s3://{p.bucket}/{p.prefix}"
    remote = chronozarr.open_store(url)
    local = chronozarr.open_store(src)
    # data first: a sharded store reads its shard indexes with shard_bytes, never a HEAD
    for k in range(len(local.levels)):
        for t in range(local.n_time):
            remote.read(t, k)
    assert remote.store.stats.heads == 0
    if name == "sharded":
        assert remote.store.stats.gets == 1  # the root zarr.json; everything else is a range
    assert_reads_equal(remote, local)
    report = chronozarr.validate(url)
    assert report.ok, [f.to_json() for f in report.findings]


@pytest.mark.parametrize("name", ["unsharded", "sharded"])
def test_object_headers_by_class(
    name: str, stores: dict[str, Path], s3: Any, published: dict[str, Published]
) -> None:
    src, p = stores[name], published[name]
    shard_time = SHARD_TIME if name == "sharded" else None
    classes = {SHORT: 0, LONG: 0}
    for key, data in files(src).items():
        head = s3.head_object(Bucket=p.bucket, Key=f"{p.prefix}/{key}")
        want = expected_cache_control(key, T0, shard_time)
        assert head.get("CacheControl") == want, key
        classes[want] += 1
        assert not head.get("ContentEncoding"), key
        assert head["Metadata"].get("chronozarr-md5") == hashlib.md5(data).hexdigest(), key
        assert head["ETag"].strip('"') == hashlib.md5(data).hexdigest(), key
        ctype = "application/json" if key.endswith("zarr.json") else "application/octet-stream"
        assert head["ContentType"] == ctype, key
    assert classes[SHORT] > 0 and classes[LONG] > 0
    if name == "sharded":  # the trailing shard of each array/cell/level is short-lived
        assert any(
            expected_cache_control(k, T0, SHARD_TIME) == SHORT and "/data/c/" in k
            for k in files(src)
        )


def _check_order(puts: list[ServerRequest], prefix: str) -> None:
    keys = [e.path[len(prefix) :] for e in puts]
    assert keys[-1] == "zarr.json", "the root zarr.json is not the last object written"
    root = puts[-1]
    assert all(e.end < root.start for e in puts[:-1]), "the root PUT began before others ended"
    for phase in (1, 2, 3):
        ended = [e.end for e in puts if phase_of(e.path[len(prefix) :]) == phase]
        later = [e.start for e in puts if phase_of(e.path[len(prefix) :]) > phase]
        if ended and later:
            assert max(ended) < min(later), f"phase {phase} overlapped a later phase"


@pytest.mark.parametrize("name", ["unsharded", "sharded"])
def test_root_is_written_last_server_side(
    name: str, stores: dict[str, Path], s3: Any, published: dict[str, Published]
) -> None:
    p = published[name]
    assert len(p.puts) == len(files(stores[name]))
    assert all(e.status == 200 for e in p.puts)
    _check_order(p.puts, f"/{p.bucket}/{p.prefix}/")
    # and the server's own clock agrees: nothing was modified after the root
    listing = list_keys(s3, p.bucket, f"{p.prefix}/")
    root_time = listing["zarr.json"]["LastModified"]
    assert all(obj["LastModified"] <= root_time for obj in listing.values())


class _Fault:
    """Wraps S3Target.upload: fails permanently on the ``fail_at``-th call, or on keys matching
    ``fail_keys``; transiently (ConnectionError) on the first attempt of keys in ``flaky``."""

    def __init__(
        self,
        monkeypatch: pytest.MonkeyPatch,
        *,
        fail_at: int | None = None,
        fail_keys: str | None = None,
        flaky: set[str] | None = None,
    ) -> None:
        self.calls: list[str] = []
        self.fail_at = fail_at
        self.fail_keys = re.compile(fail_keys) if fail_keys else None
        self.flaky = set(flaky or ())
        original = pub.S3Target.upload
        fault = self

        def upload(target: pub.S3Target, obj: pub.StoreObject, path: Path, md5: str) -> None:
            fault.calls.append(obj.key)
            if fault.fail_at is not None and len(fault.calls) == fault.fail_at:
                raise PermissionError(f"injected permanent failure on {obj.key}")
            if fault.fail_keys is not None and fault.fail_keys.search(obj.key):
                raise PermissionError(f"injected permanent failure on {obj.key}")
            if obj.key in fault.flaky:
                fault.flaky.discard(obj.key)
                raise ConnectionError(f"injected transient failure on {obj.key}")
            original(target, obj, path, md5)

        monkeypatch.setattr(pub.S3Target, "upload", upload)
        original_commit = pub.S3Target.commit

        def commit(
            target: pub.S3Target, obj: pub.StoreObject, path: Path, md5: str, v: Any
        ) -> None:
            # the root goes up as a compare-and-swap (decision 0051): the same faults apply
            fault.calls.append(obj.key)
            if fault.fail_at is not None and len(fault.calls) == fault.fail_at:
                raise PermissionError(f"injected permanent failure on {obj.key}")
            if fault.fail_keys is not None and fault.fail_keys.search(obj.key):
                raise PermissionError(f"injected permanent failure on {obj.key}")
            if obj.key in fault.flaky:
                fault.flaky.discard(obj.key)
                raise ConnectionError(f"injected transient failure on {obj.key}")
            original_commit(target, obj, path, md5, v)

        monkeypatch.setattr(pub.S3Target, "commit", commit)


@pytest.mark.parametrize("name", ["unsharded", "sharded"])
def test_failure_mid_publish_leaves_no_root_and_resumes(
    name: str, stores: dict[str, Path], s3: Any, bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = stores[name]
    n = len(files(src))
    with monkeypatch.context() as m:
        _Fault(m, fail_at=n // 2)
        with pytest.raises(pub.PublishError, match=r"no root zarr\.json was written"):
            pub.publish(src, f"s3://{bucket}/f", workers=2)
    written = list_keys(s3, bucket, "f/")
    assert "zarr.json" not in written
    assert 0 < len(written) < n
    with pytest.raises(chronozarr.StoreNotFoundError):
        chronozarr.open_store(f"s3://{bucket}/f")
    # running the same publish again resumes: only what is missing is sent
    result = pub.publish(src, f"s3://{bucket}/f", workers=4)
    assert result.plan.target_state == "partial"
    assert len(result.uploaded) == n - len(written)
    assert_reads_equal(chronozarr.open_store(f"s3://{bucket}/f"), chronozarr.open_store(src))


@pytest.mark.parametrize(
    ("name", "fail_in"),
    [("unsharded", "chunks"), ("sharded", "chunks"), ("sharded", "zarr.json below the root")],
)
def test_failure_mid_republish_keeps_the_old_root(
    name: str,
    fail_in: str,
    stores: dict[str, Path],
    s3: Any,
    bucket: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    old, new = stores[name], stores[f"{name}+4"]
    pub.publish(old, f"s3://{bucket}/r", workers=4)
    old_root = (old / "zarr.json").read_bytes()
    pattern = r"/c/" if fail_in == "chunks" else r"^\d+/data/zarr\.json$"
    with monkeypatch.context() as m:
        _Fault(m, fail_keys=pattern)
        with pytest.raises(pub.PublishError, match=r"root zarr\.json is still the old one"):
            pub.publish(new, f"s3://{bucket}/r", workers=3)
    got = s3.get_object(Bucket=bucket, Key="r/zarr.json")["Body"].read()
    assert got == old_root
    # a reader opening now sees the old store whole (spec 14: the trailing shard kept its old
    # bytes at their old offsets; new chunks are new keys). volatility/c/0/0 changes in place
    # before the root when the failure comes after phase 2: it orders prefetch, and a reader
    # holding the old root decodes every timestep all the same.
    assert_reads_equal(
        chronozarr.open_store(f"s3://{bucket}/r"),
        chronozarr.open_store(old),
        volatility=fail_in == "chunks",
    )
    pub.publish(new, f"s3://{bucket}/r", workers=4)
    assert_reads_equal(chronozarr.open_store(f"s3://{bucket}/r"), chronozarr.open_store(new))


def test_transient_errors_are_retried(
    stores: dict[str, Path], s3: Any, bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = stores["unsharded"]
    flaky = {"0/data/c/0/0/0/0", "0/time/c/0", "zarr.json"}
    fault = _Fault(monkeypatch, flaky=flaky)
    plan = pub.plan_publish(src, f"s3://{bucket}/t")
    result = pub.execute(plan, workers=4, backoff=0.01)
    assert result.retries == 3
    assert fault.flaky == set()
    assert len(result.uploaded) == len(files(src))
    assert s3.head_object(Bucket=bucket, Key="t/zarr.json")["ContentLength"] == len(
        (src / "zarr.json").read_bytes()
    )


def test_retries_are_bounded(
    stores: dict[str, Path], bucket: str, s3: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []

    def always_down(target: Any, obj: pub.StoreObject, path: Path, md5: str) -> None:
        calls.append(obj.key)
        raise ConnectionError("injected: connection refused")

    monkeypatch.setattr(pub.S3Target, "upload", always_down)
    plan = pub.plan_publish(stores["unsharded"], f"s3://{bucket}/b")
    with pytest.raises(pub.PublishError, match="phase 1"):
        pub.execute(plan, workers=1, attempts=3, backoff=0.001)
    assert len(calls) == 3  # one object, three attempts, then the publish stops
    assert list_keys(s3, bucket, "b/") == {}


def _changed_keys(old: Path, new: Path) -> set[str]:
    a, b = files(old), files(new)
    return {k for k, v in b.items() if a.get(k) != v}


@pytest.mark.parametrize("name", ["unsharded", "sharded"])
def test_republish_after_append_uploads_only_new_and_changed(
    name: str, stores: dict[str, Path], s3: Any, s3env: Moto, bucket: str
) -> None:
    old, new = stores[name], stores[f"{name}+4"]
    pub.publish(old, f"s3://{bucket}/a", workers=4)
    before = len(s3env.log.puts(bucket))
    result = pub.publish(new, f"s3://{bucket}/a", workers=4)
    expected = _changed_keys(old, new)
    assert set(result.uploaded) == expected
    puts = s3env.log.puts(bucket)[before:]
    assert sorted(e.path.removeprefix(f"/{bucket}/a/") for e in puts) == sorted(expected)
    _check_order(puts, f"/{bucket}/a/")
    n_new = T0 + T_ADD
    if name == "unsharded":  # nothing rewritten but time, volatility and metadata
        assert all(phase_of(k) > 1 or int(k.split("/")[3]) >= T0 for k in expected if "/c/" in k), (
            "an existing chunk was re-uploaded"
        )
    else:  # the old trailing shard (ts 1) grew; ts 2 is new
        assert any(re.fullmatch(r"0/data/c/1/0/0/0", k) for k in expected)
        assert any(re.fullmatch(r"0/data/c/2/0/0/0", k) for k in expected)
        assert not any(re.fullmatch(r"\d+/(data|mask|coverage)/c/0/.+", k) for k in expected)
    for key in expected:
        head = s3.head_object(Bucket=bucket, Key=f"a/{key}")
        shard_time = SHARD_TIME if name == "sharded" else None
        assert head["CacheControl"] == expected_cache_control(key, n_new, shard_time), key
    assert_reads_equal(chronozarr.open_store(f"s3://{bucket}/a"), chronozarr.open_store(new))
    # a third publish of the same store sends nothing
    again = pub.publish(new, f"s3://{bucket}/a", workers=4)
    assert again.uploaded == [] and len(s3env.log.puts(bucket)) == before + len(expected)


@pytest.mark.parametrize(
    ("other", "why"),
    [
        ("unsharded-interval3", "anchor_interval"),
        ("unsharded-other-data", "a chunk of an existing timestep differs"),
        ("sharded", "chronozarr.*differs|codecs differs|chunk_grid differs"),
    ],
)
def test_reencode_over_an_existing_store_is_refused(
    other: str, why: str, stores: dict[str, Path], s3env: Moto, s3: Any, bucket: str
) -> None:
    pub.publish(stores["unsharded"], f"s3://{bucket}/x", workers=4)
    before = len(s3env.log.puts(bucket))
    with pytest.raises(pub.PublishRefusedError, match="new prefix") as info:
        pub.publish(stores[other], f"s3://{bucket}/x", workers=4)
    assert re.search(why, str(info.value)), str(info.value)
    assert len(s3env.log.puts(bucket)) == before, "a refused publish wrote something"
    # under a new prefix it is fine (spec 9)
    pub.publish(stores[other], f"s3://{bucket}/x-v2", workers=4)


def test_publishing_an_older_store_over_a_newer_one_is_refused(
    stores: dict[str, Path], bucket: str, s3: Any
) -> None:
    pub.publish(stores["sharded+4"], f"s3://{bucket}/n", workers=4)
    with pytest.raises(pub.PublishRefusedError, match="take timesteps away"):
        pub.publish(stores["sharded"], f"s3://{bucket}/n", workers=4)


def test_target_that_is_not_a_chronozarr_store_is_refused(
    stores: dict[str, Path], bucket: str, s3: Any
) -> None:
    s3.put_object(
        Bucket=bucket, Key="z/zarr.json", Body=b'{"zarr_format": 3, "node_type": "group"}'
    )
    with pytest.raises(pub.PublishRefusedError, match="not a chronozarr store"):
        pub.publish(stores["unsharded"], f"s3://{bucket}/z")


def test_missing_bucket_is_a_clear_error(stores: dict[str, Path], s3env: Moto) -> None:
    with pytest.raises(chronozarr.ChronozarrError, match="bucket does not exist"):
        pub.publish(stores["unsharded"], "s3://no-such-bucket-here/p")


# --- the command line ------------------------------------------------------------------------------


def test_cli_publish_json_dry_run_and_refusal(
    stores: dict[str, Path], s3env: Moto, s3: Any, bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AWS_ENDPOINT_URL")  # the flag gives it
    target = f"s3://{bucket}/cli/store"
    args = ["publish", str(stores["sharded"]), target, "--endpoint", s3env.endpoint]
    res = runner.invoke(app, [*args, "--dry-run", "--json"])
    assert res.exit_code == 0, res.output
    plan = json.loads(res.stdout)
    assert plan["dry_run"] is True and plan["target_state"] == "empty"
    assert plan["upload"]["objects"] == len(files(stores["sharded"]))
    assert [p["phase"] for p in plan["phases"]] == [1, 2, 3, 4]
    assert plan["phases"][3]["objects"] == 1
    assert list_keys(s3, bucket) == {}, "a dry run uploaded something"

    res = runner.invoke(app, [*args, "--workers", "4", "--json", "--region", "us-east-1"])
    assert res.exit_code == 0, res.output
    done = json.loads(res.stdout)
    assert done["uploaded"]["objects"] == len(files(stores["sharded"]))
    assert done["uploaded"]["bytes"] == sum(len(v) for v in files(stores["sharded"]).values())

    res = runner.invoke(app, args)  # human output: nothing to do
    assert res.exit_code == 0 and "up to date" in res.stdout

    res = runner.invoke(
        app, ["publish", str(stores["unsharded"]), target, "--endpoint", s3env.endpoint]
    )
    assert res.exit_code == 1
    assert "new prefix" in res.stderr


def test_cli_inspect_and_validate_accept_s3_urls(
    stores: dict[str, Path], s3env: Moto, bucket: str
) -> None:
    pub.publish(stores["unsharded"], f"s3://{bucket}/iv")
    res = runner.invoke(app, ["inspect", f"s3://{bucket}/iv", "--json"])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    assert summary["times"]["count"] == T0
    assert summary["total"]["objects"] == len(files(stores["unsharded"]))
    res = runner.invoke(app, ["validate", f"s3://{bucket}/iv", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["ok"] is True


def test_cli_publish_usage_errors(stores: dict[str, Path], tmp_path: Path) -> None:
    res = runner.invoke(app, ["publish", str(stores["unsharded"]), "http://127.0.0.1:9/x"])
    assert res.exit_code == 2 and "read-only" in res.stderr
    res = runner.invoke(app, ["publish", str(tmp_path / "nope"), str(tmp_path / "out")])
    assert res.exit_code == 1 and "zarr.json not found" in res.stderr


def test_object_store_keeps_its_options_when_pickled(
    stores: dict[str, Path], s3env: Moto, s3: Any, bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pickle

    from chronozarr.io import ObjectStore, RemoteStoreError

    pub.publish(stores["unsharded"], f"s3://{bucket}/k")
    monkeypatch.delenv("AWS_ENDPOINT_URL")  # only the option knows the endpoint now
    store = ObjectStore(f"s3://{bucket}/k", endpoint=s3env.endpoint, region="us-east-1")
    copy = pickle.loads(pickle.dumps(store))
    assert copy.get("zarr.json") == (stores["unsharded"] / "zarr.json").read_bytes()
    reader = chronozarr.open_store(f"s3://{bucket}/k", endpoint=s3env.endpoint)
    assert reader.n_time == T0
    # unsigned requests (anonymous=True): refused by a private bucket, with a clear message ...
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    with pytest.raises(RemoteStoreError, match="access denied"):
        chronozarr.open_store(f"s3://{bucket}/k", endpoint=s3env.endpoint, anonymous=True)
    # ... and served by a public one
    policy = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": "*",
                "Action": "s3:GetObject",
                "Resource": f"arn:aws:s3:::{bucket}/*",
            }
        ],
    }
    s3.put_bucket_policy(Bucket=bucket, Policy=json.dumps(policy))
    public = chronozarr.open_store(f"s3://{bucket}/k", endpoint=s3env.endpoint, anonymous=True)
    np.testing.assert_array_equal(public.read(0), reader.read(0))
