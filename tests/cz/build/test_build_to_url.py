"""``cz build --out s3://bucket/prefix``: built locally, published through cz.publish (moto's S3
server on 127.0.0.1), root last; the local copy is removed once published."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import chronozarr
from cz.build import BuildError, BuildOptions, build
from cz.recipe import load_recipe
from tests.cz.scenes import LOADER_WARNINGS, read_all, recipe, scenario, write_items

pytestmark = LOADER_WARNINGS


@pytest.fixture
def s3(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    moto_server = pytest.importorskip("moto.server")
    boto3 = pytest.importorskip("boto3")
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL_S3"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
        monkeypatch.setenv("AWS_REGION", "us-east-1")
        monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)
        client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
        client.create_bucket(Bucket="cz-build")
        client.close()  # its pooled sockets now, not at a later test's garbage collection
        yield "cz-build"
    finally:
        server.stop()


def test_build_to_s3_publishes_the_store(tmp_path: Path, s3: str) -> None:
    scenes, _c, _d = scenario()
    write_items(tmp_path, scenes)
    rec = load_recipe(recipe(tmp_path, start="2024-01", end="2024-02", max_age=1))
    work = tmp_path / "work"
    work.mkdir()
    url = f"s3://{s3}/stores/synthetic.zarr"
    result = build(rec, out=url, options=BuildOptions(workers=2, work_dir=str(work)))
    assert result.published == url
    assert list(work.iterdir()) == []  # the local copy is gone once published
    local = tmp_path / "local.zarr"
    build(rec, out=str(local))
    remote = chronozarr.open_store(url)
    reader = chronozarr.open_store(local)
    assert remote.n_time == reader.n_time == 2
    data, mask, cov = read_all(local)
    for t in range(2):
        assert np.array_equal(remote.read(t), data[t])
        assert np.array_equal(remote.read_mask(t), mask[t])
        assert np.array_equal(remote.read_coverage(t), cov[t])
    # publishing again over an existing different store is refused, and says where the copy is
    other = load_recipe(recipe(tmp_path, start="2024-01", end="2024-02", name="other.yaml"))
    with pytest.raises(BuildError, match=r"publishing it to s3://.* failed: .*cz publish"):
        build(other, out=url, options=BuildOptions(work_dir=str(work)))
