"""Planetary Computer signing against a fake SAS token endpoint on 127.0.0.1 (decision 0018).

The endpoint answers ``GET /token/{account}/{container}`` like the real one
(``{"msft:expiry": ..., "token": ...}``) and can be told to be slow, to fail with a status a
number of times, or to issue tokens with a given lifetime. The items are the real Planetary
Computer 35MNM items (hrefs on ``sentinel2l2a01.blob.core.windows.net``).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pystac
import pytest

from cz.errors import SigningError
from cz.plan import plan_recipe
from cz.recipe import load_recipe
from cz.stac import RetryPolicy, read_local_items, sign_items
from cz.stac.signing import TokenSource, sign_item_dicts
from tests.cz.helpers import PC_35MNM, RECIPE_35MNM, free_port, need, write_recipe

FAST = RetryPolicy(max_retries=2, backoff_factor=0.0, backoff_max=0.1, timeout=2.0)


class _QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that gave up on a slow answer (the point of the slow tests): no trace."""


class TokenEndpoint:
    """A SAS token endpoint: ``lifetime`` s tokens; ``fail(status, times)``; ``delay`` s."""

    def __init__(self) -> None:
        self.lifetime = 3600.0
        self.clock = time.time  # the endpoint's "now"
        self.delay = 0.0
        self.failures: list[int] = []
        self.paths: list[str] = []
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep the test output clean
                pass

            def do_GET(self) -> None:
                endpoint.paths.append(self.path)
                if endpoint.delay:
                    time.sleep(endpoint.delay)
                if endpoint.failures:
                    status = endpoint.failures.pop(0)
                    self.send_response(status)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                n = len(endpoint.paths)
                expiry = datetime.fromtimestamp(endpoint.clock(), UTC) + timedelta(
                    seconds=endpoint.lifetime
                )
                body = json.dumps(
                    {
                        "msft:expiry": expiry.strftime("%Y-%m-%dT%H:%M:%SZ"),
                        "token": f"st=2020&se=2030&sp=rl&sig=token{n}",
                    }
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = _QuietServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_port}/token"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> TokenEndpoint:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def endpoint() -> Iterator[TokenEndpoint]:
    with TokenEndpoint() as ep:
        yield ep


def blob_item(item_id: str, container: str = "sentinel2-l2") -> dict[str, Any]:
    href = f"https://sentinel2l2a01.blob.core.windows.net/{container}/{item_id}/B04.tif"
    return {
        "id": item_id,
        "assets": {
            "B04": {"href": href},
            "thumb": {"href": "https://example.test/t.png"},
            "signed": {"href": href + "?st=1&se=2&sp=rl&sig=old"},
        },
    }


def test_signs_blob_hrefs_once_per_container(endpoint: TokenEndpoint) -> None:
    source = TokenSource(endpoint.url, FAST)
    signed = sign_item_dicts([blob_item("a"), blob_item("b"), blob_item("c", "other")], source)
    assert endpoint.paths == [
        "/token/sentinel2l2a01/sentinel2-l2",
        "/token/sentinel2l2a01/other",
    ]
    assert signed[0]["assets"]["B04"]["href"].endswith(
        "/a/B04.tif?st=2020&se=2030&sp=rl&sig=token1"
    )
    assert signed[2]["assets"]["B04"]["href"].endswith("sig=token2")
    assert signed[0]["assets"]["thumb"]["href"] == "https://example.test/t.png"  # not blob
    assert signed[0]["assets"]["signed"]["href"].endswith("sig=old")  # already signed


def test_a_month_never_starts_with_a_token_about_to_expire(endpoint: TokenEndpoint) -> None:
    now = [time.time()]
    endpoint.lifetime = 30 * 60  # tokens for 30 minutes
    endpoint.clock = lambda: now[0]
    source = TokenSource(endpoint.url, FAST, min_lifetime=20 * 60, clock=lambda: now[0])
    first = source.token("acct", "cont")
    now[0] += 5 * 60  # 25 minutes left: reused
    assert source.token("acct", "cont") == first
    assert source.requests == 1
    now[0] += 6 * 60  # 19 minutes left: too little for a month of work, a new token
    second = source.token("acct", "cont")
    assert second != first and source.requests == 2
    assert second.ttl(now[0]) >= 30 * 60 - 2  # a fresh one (whole seconds on the wire)


def test_short_tokens_are_used_with_a_warning_and_renewed(
    endpoint: TokenEndpoint, caplog: pytest.LogCaptureFixture
) -> None:
    now = [time.time()]
    endpoint.clock = lambda: now[0]
    endpoint.lifetime = 5 * 60  # the endpoint issues five-minute tokens
    source = TokenSource(endpoint.url, FAST, min_lifetime=20 * 60, clock=lambda: now[0])
    with caplog.at_level(logging.WARNING, logger="cz.stac.signing"):
        first = source.token("acct", "cont")
    assert any("expires in" in r.getMessage() for r in caplog.records)
    now[0] += 30  # the rest of this month's hrefs: the same token, not one request each
    assert source.token("acct", "cont") == first and source.requests == 1
    now[0] += 40  # over a minute old: below what a fresh one would give, asked again
    assert source.token("acct", "cont") != first and source.requests == 2


def test_an_already_expired_token_is_an_error(endpoint: TokenEndpoint) -> None:
    endpoint.lifetime = -60
    with pytest.raises(SigningError, match=r"expired 6[0-9] s ago"):
        TokenSource(endpoint.url, FAST).token("acct", "cont")


def test_403_is_asked_once_more(endpoint: TokenEndpoint) -> None:
    endpoint.failures = [403]
    source = TokenSource(endpoint.url, FAST)
    assert source.token("acct", "cont").token.endswith("sig=token2")
    assert source.requests == 2
    endpoint.failures = [403, 403]
    with pytest.raises(SigningError, match="HTTP 403"):
        TokenSource(endpoint.url, FAST).token("acct", "other")


def test_server_errors_are_retried_per_the_policy(endpoint: TokenEndpoint) -> None:
    endpoint.failures = [503, 503]
    token = TokenSource(endpoint.url, FAST).token("acct", "cont")  # 2 retries allowed
    assert token.token.endswith("sig=token3")
    endpoint.failures = [503, 503, 503]
    with pytest.raises(SigningError, match=r"HTTP 503"):
        TokenSource(endpoint.url, FAST).token("acct", "other")


def test_a_slow_endpoint_fails_within_the_policy_bound_and_says_so(
    endpoint: TokenEndpoint, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    import cz.stac.signing

    monkeypatch.setattr(cz.stac.signing, "WAIT_NOTICE_S", 0.2)
    endpoint.delay = 5.0
    policy = RetryPolicy(max_retries=1, backoff_factor=0.0, backoff_max=0.1, timeout=0.4)
    started = time.monotonic()
    with (
        caplog.at_level(logging.WARNING, logger="cz.stac.signing"),
        pytest.raises(SigningError) as caught,
    ):
        TokenSource(endpoint.url, policy).token("acct", "cont")
    elapsed = time.monotonic() - started
    assert elapsed < policy.bound() + 1.0, elapsed
    assert endpoint.url in str(caught.value) and "2 attempt(s)" in str(caught.value)
    assert any("still waiting for a SAS token" in r.getMessage() for r in caplog.records)


def test_an_unreachable_endpoint_fails_fast() -> None:
    url = f"http://127.0.0.1:{free_port()}/token"  # nothing listens there
    started = time.monotonic()
    with pytest.raises(SigningError, match=r"127\.0\.0\.1.*3 attempt\(s\)"):
        TokenSource(url, FAST).token("acct", "cont")
    assert time.monotonic() - started < FAST.bound()


def _pc_recipe(tmp_path: Path, retries: str = "") -> Any:
    catalog = f"path: {need(PC_35MNM)}\n  sign: planetary-computer{retries}"
    return load_recipe(write_recipe(tmp_path, RECIPE_35MNM.format(catalog=catalog)))


@pytest.fixture
def pc_settings(endpoint: TokenEndpoint, monkeypatch: pytest.MonkeyPatch) -> TokenEndpoint:
    from cz.stac.signing import import_planetary_computer

    Settings = import_planetary_computer().settings.Settings
    monkeypatch.setattr(Settings.get(), "sas_url", endpoint.url)
    monkeypatch.setattr(Settings.get(), "subscription_key", None)
    return endpoint


def test_build_signs_real_items_per_month_late(tmp_path: Path, pc_settings: TokenEndpoint) -> None:
    """The plan stays unsigned; ``item_refs`` (a month's work) signs with the endpoint."""
    from cz.build.blocks import item_refs

    rec = _pc_recipe(tmp_path)
    plan = plan_recipe(rec)
    month = plan.month("2020-06")
    assert all("sig=" not in h for p in month.items for h in p.hrefs.values())
    refs = item_refs(month, rec)
    assert refs and all("sig=token" in a["href"] for r in refs for a in r.stac["assets"].values())
    assert set(pc_settings.paths) == {"/token/sentinel2l2a01/sentinel2-l2"}


def test_a_cluster_build_signs_on_the_worker_at_read_time(
    tmp_path: Path, pc_settings: TokenEndpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Decision 0021: the cell source a cluster build scatters holds unsigned hrefs (no token
    request on the client); a worker signs a block's items when it reads them, and asks for a
    new token once the cached one has less than 20 minutes left (tokens expire after an hour
    here; the clock of the endpoint and of the worker's token source jumps ahead)."""
    import pickle

    import cz.stac.signing
    from cz.build.options import BuildOptions
    from cz.build.sources import make_source

    monkeypatch.setattr(cz.stac.signing, "_SOURCES", {})  # this "worker" has no token yet
    rec = _pc_recipe(tmp_path)
    plan = plan_recipe(rec)
    source = make_source(rec, plan, BuildOptions())
    hrefs = [a["href"] for refs in source.refs for r in refs for a in r.stac["assets"].values()]
    assert hrefs and all("sig=" not in h for h in hrefs)
    assert pc_settings.paths == []  # nothing signed on the client
    on_worker = pickle.loads(pickle.dumps(source))  # as a worker receives it
    now = [time.time()]
    pc_settings.clock = lambda: now[0]
    t, row, col = next(iter(on_worker.members))

    def signed_tokens() -> set[str]:
        items = on_worker.task(t, row, col).items
        return {a["href"].rsplit("sig=", 1)[-1] for r in items for a in r.stac["assets"].values()}

    assert signed_tokens() == {"token1"}
    cz.stac.signing.token_source(RetryPolicy.from_recipe(rec)).clock = lambda: now[0]
    now[0] += 30 * 60  # 30 min left: still used
    assert signed_tokens() == {"token1"}
    now[0] += 15 * 60  # 15 min left, under the 20 min a read should have: signed again
    assert signed_tokens() == {"token2"}
    assert pc_settings.paths == ["/token/sentinel2l2a01/sentinel2-l2"] * 2


def test_sign_items_uses_the_recipe_retry_policy(
    tmp_path: Path, pc_settings: TokenEndpoint
) -> None:
    pc_settings.delay = 5.0
    rec = _pc_recipe(tmp_path, "\n  max_retries: 0\n  timeout: 0.5")
    items = [pystac.Item.from_dict(d) for d in read_local_items(need(PC_35MNM))[:1]]
    started = time.monotonic()
    with pytest.raises(SigningError, match=r"catalog\.max_retries"):
        sign_items(items, rec)
    assert time.monotonic() - started < RetryPolicy.from_recipe(rec).bound() + 1.0
    assert all("sig=" not in a.href for i in items for a in i.assets.values())  # untouched


def test_sign_items_signs_copies(tmp_path: Path, pc_settings: TokenEndpoint) -> None:
    rec = _pc_recipe(tmp_path)
    items = [pystac.Item.from_dict(d) for d in read_local_items(need(PC_35MNM))[:2]]
    signed = sign_items(items, rec)
    assert [i.id for i in signed] == [i.id for i in items]
    blob = [a.href for i in signed for a in i.assets.values() if ".blob.core." in a.href]
    assert blob and all(h.endswith("sig=token1") for h in blob)
    assert all("sig=" not in a.href for i in items for a in i.assets.values())  # originals intact
    plain = load_recipe(
        write_recipe(tmp_path, RECIPE_35MNM.format(catalog="path: items.json"), "plain.yaml")
    )
    assert sign_items(items, plain) == items
    assert pc_settings.paths == ["/token/sentinel2l2a01/sentinel2-l2"]


def _fake_reads(monkeypatch: pytest.MonkeyPatch, refused: set[str]) -> list[list[str]]:
    """Replace odc-stac's read: hrefs carrying a refused token answer HTTP 403 (as GDAL says
    it), others read as 7s. Returns the hrefs of every read."""
    import numpy as np
    import xarray as xr
    from rasterio.errors import RasterioIOError

    import cz.load

    reads: list[list[str]] = []

    def fake_odc_load(refs: Any, keys: Any, geobox: Any, resampling: Any) -> Any:
        hrefs = [r.stac["assets"][k]["href"] for r in refs for k in keys]
        reads.append(hrefs)
        for href in hrefs:
            if href.rsplit("sig=", 1)[-1] in refused:
                raise RasterioIOError(f"'/vsicurl/{href}': HTTP response code: 403")
        h, w = geobox.shape
        data = {k: (("time", "y", "x"), np.full((len(refs), h, w), 7, np.uint16)) for k in keys}
        ds = xr.Dataset(data)
        for k in keys:
            ds[k].attrs["nodata"] = 0
        return ds

    monkeypatch.setattr(cz.load, "_odc_load", fake_odc_load)
    return reads


def _signed_refs(tmp_path: Path) -> tuple[Any, list[Any]]:
    from cz.build.blocks import item_refs
    from cz.build.options import BuildOptions
    from cz.build.tasks import composite_context

    rec = _pc_recipe(tmp_path, "\n  max_retries: 1\n  timeout: 2")
    plan = plan_recipe(rec)
    month = plan.month("2020-06")
    refs = item_refs(month, rec)
    return composite_context(rec, plan, BuildOptions()).load, refs


def test_a_read_refused_with_403_is_signed_again_once(
    tmp_path: Path, pc_settings: TokenEndpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cz.load import load_block

    spec, refs = _signed_refs(tmp_path)
    assert all(r.signing == (1, 0.5, 30.0, 2.0) for r in refs)
    assert len(pc_settings.paths) == 1  # token1 signed the month
    reads = _fake_reads(monkeypatch, refused={"token1"})  # ... and has expired since
    block = load_block(refs[:2], spec, (0, 4, 0, 4), month="2020-06")
    assert [r.id for r in block.items] == [r.id for r in refs[:2]]
    assert int(block.values.min()) == 7 and not block.skipped
    assert len(pc_settings.paths) == 2  # one renewal for both items (same container)
    assert any(all(h.endswith("sig=token2") for h in hrefs) for hrefs in reads)


def test_a_second_403_is_the_asset_error(
    tmp_path: Path, pc_settings: TokenEndpoint, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cz.load import AssetReadError, load_block

    spec, refs = _signed_refs(tmp_path)
    _fake_reads(monkeypatch, refused={"token1", "token2"})
    with pytest.raises(AssetReadError, match="RasterioIOError") as caught:
        load_block(refs[:1], spec, (0, 4, 0, 4), month="2020-06")
    assert caught.value.item == refs[0].id and caught.value.asset == "B04"
    assert "sig=token2" in caught.value.href  # the error is the renewed token's
    assert len(pc_settings.paths) == 2  # renewed once, not in a loop


def test_unsigned_items_are_never_signed_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from dataclasses import replace

    from cz.load import AssetReadError, load_block

    spec, refs = _signed_refs_unsigned(tmp_path)
    _fake_reads(monkeypatch, refused={"token1"})
    with pytest.raises(AssetReadError):
        load_block([replace(refs[0], signing=None)], spec, (0, 4, 0, 4), month="2020-06")


def _signed_refs_unsigned(tmp_path: Path) -> tuple[Any, list[Any]]:
    """Refs whose hrefs carry token1 but that say they are not signed (no signing bounds)."""
    from cz.build.blocks import item_refs
    from cz.build.options import BuildOptions
    from cz.build.tasks import composite_context

    rec = load_recipe(
        write_recipe(tmp_path, RECIPE_35MNM.format(catalog=f"path: {need(PC_35MNM)}"), "u.yaml")
    )
    plan = plan_recipe(rec)
    refs = item_refs(plan.month("2020-06"), rec)
    for r in refs:
        for a in r.stac["assets"].values():
            a["href"] += "?st=1&se=2&sp=rl&sig=token1"
    return composite_context(rec, plan, BuildOptions()).load, refs
