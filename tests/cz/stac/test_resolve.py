"""Resolving items: real API sessions replayed (vcrpy), a real local STAC API (rustac), local
files, conformance-aware filtering, and retries against scripted failures on 127.0.0.1."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pystac
import pytest
import vcr

from cz.errors import StacError
from cz.plan import Plan, make_plan, plan_recipe
from cz.recipe import load_recipe
from cz.stac import (
    RetryPolicy,
    make_stac_io,
    read_local_items,
    resolve_items,
    search_endpoint,
)
from tests.cz.helpers import (
    CASSETTES,
    ES_C1_ITEMS,
    OWN_CASSETTES,
    PC_35MNM,
    PC_COLLECTION,
    RECIPE_35MNM,
    ScriptedAPI,
    landing_page,
    need,
    s2_item,
    write_recipe,
)

ES_URL = "https://earth-search.aws.element84.com/v1"


def replay(cassette: Path, *, match_body: bool = False) -> Any:
    """A vcr context that replays ``cassette`` in place and never records."""
    need(cassette)
    match_on = ["method", "scheme", "host", "port", "path", "query"]
    if match_body:
        match_on.append("body")
    recorder = vcr.VCR(
        cassette_library_dir=str(cassette.parent), record_mode="none", match_on=match_on
    )
    return recorder.use_cassette(cassette.name)


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every HTTP request the code under test sends (as prepared by requests), in order."""
    import requests.adapters

    requests_sent: list[Any] = []
    original = requests.adapters.HTTPAdapter.send

    def send(self: Any, request: Any, *args: Any, **kwargs: Any) -> Any:
        requests_sent.append(request)
        return original(self, request, *args, **kwargs)

    monkeypatch.setattr(requests.adapters.HTTPAdapter, "send", send)
    return requests_sent


def comparable(plan: Plan) -> dict[str, Any]:
    """A plan without what names its source (the recipe path, the catalog, search notes)."""
    data = plan.to_dict()
    for key in ("source", "recipe", "warnings"):
        data.pop(key)
    return data


# ---------------------------------------------------------------------------------------------
# real Earth Search sessions, replayed


ES_FILTER_RECIPE = f"""
catalog:
  url: {ES_URL}
  collection: sentinel-2-l2a
  max_items: 20          # the recorded session holds two pages of 10
aoi:
  bbox: [-40.5, -5.5, -37.5, -3.5]
grid:
  crs: 32724
  resolution: 60
time:
  start: 2025-07
  end: 2025-07
bands:
  - name: red
    asset: [red, B04]
  - name: nir
    asset: [nir, B08]
filters:
  max_cloud_cover: 40
"""


def test_earth_search_ignoring_its_filter_is_rechecked_on_the_client(
    tmp_path: Path, sent: list[Any]
) -> None:
    """The cassette: Earth Search returned items over 40 % cloud and from other collections."""
    recipe = load_recipe(write_recipe(tmp_path, ES_FILTER_RECIPE))
    with replay(CASSETTES / "TestCLISearch.test_filter[inprocess].yaml") as played:
        plan = plan_recipe(recipe)
        assert played.all_played
    # the landing page declares the query extension, not filter: the cloud ceiling goes as query
    assert plan.source["conforms"] == {"query": True, "filter": False}
    assert plan.source["server_filter"] == "query"
    searches = [json.loads(r.body) for r in sent if r.method == "POST"]
    assert searches[0]["query"] == {"eo:cloud_cover": {"lte": 40.0}}
    assert "filter" not in searches[0]
    assert searches[0]["collections"] == ["sentinel-2-l2a"]
    assert searches[1] == {
        "next": "2025-07-31T13:03:25.899000Z,S2B_T24MVV_20250731T130245_L2A,sentinel-2-c1-l2a"
    }
    assert plan.source["pages"] == 2 and plan.source["truncated"] is True
    assert any("catalog.max_items = 20" in w for w in plan.warnings)

    july = plan.month("2025-07")
    assert [p.id for p in july.items] == [
        "S2B_24MXV_20250731_0_L2A",
        "S2B_24MWV_20250731_0_L2A",
        "S2B_24MVV_20250731_0_L2A",
    ]
    reasons = {d.id: (d.reason, d.detail) for d in july.dropped}
    assert reasons["S2B_24MUV_20250731_0_L2A"] == ("cloud", "eo:cloud_cover 56.8138 > 40")
    assert reasons["S2B_24MUA_20250731_0_L2A"][0] == "cloud"
    assert reasons["S2B_20EPT_20250731_0_L2A"][0] == "aoi"
    assert reasons["S2B_T24MVV_20250731T130245_L2A"] == (
        "collection",
        "collection 'sentinel-2-c1-l2a'",
    )
    assert {r for r, _ in reasons.values()} == {"cloud", "aoi", "collection"}
    assert plan.totals.items_found == 20
    # the double-offset trap: flag says removed, raster:bands still say -0.1
    for item in july.items:
        assert (item.dn_offset, item.dn_offset_rule, item.correction) == (
            0,
            "earthsearch-flag",
            1000,
        )
        assert item.notes == [
            "raster:bands of nir, red imply an offset of 1000 DN; trusting the flag"
        ]
        assert item.assets == {"red": "red", "nir": "nir", "mask": "scl"}
    assert july.solar_days == ["2025-07-31"]


def test_earth_search_post_pagination_replayed(tmp_path: Path, sent: list[Any]) -> None:
    """The cassette: POST /search, a ``next`` link with a POST body, an empty second page."""
    params = {
        "collections": ["sentinel-2-l2a", "landsat-c2-l2"],
        "datetime": "2023-10-08",
        "intersects": {"type": "Point", "coordinates": [-105.1019, 40.1672]},
    }
    stac_io = make_stac_io(RetryPolicy(max_retries=1, backoff_factor=0.0))
    with replay(CASSETTES / "test_multiple_collections.yaml") as played:
        raw, pages = search_endpoint(f"{ES_URL}/search", params, stac_io)
        assert played.all_played
    assert [i["id"] for i in raw] == ["S2A_13TDE_20231008_0_L2A", "LC08_L2SP_033032_20231008_02_T1"]
    assert pages == 1  # the second page was requested and came back empty
    assert [r.method for r in sent] == ["POST", "POST"]
    assert json.loads(sent[1].body)["next"].endswith(
        "LC08_L2SP_033032_20231008_02_T1,landsat-c2-l2"
    )

    text = ES_FILTER_RECIPE.replace("[-40.5, -5.5, -37.5, -3.5]", "[-105.2, 40.1, -105.0, 40.2]")
    text = text.replace("2025-07", "2023-10").replace("crs: 32724", "crs: utm")
    recipe = load_recipe(write_recipe(tmp_path, text))
    from cz.stac import Resolution

    plan = make_plan(recipe, Resolution(items=raw, source={"kind": "api"}))
    october = plan.month("2023-10")
    assert [p.id for p in october.items] == ["S2A_13TDE_20231008_0_L2A"]
    assert october.items[0].dn_offset_rule == "earthsearch-flag"
    assert [(d.id, d.reason) for d in october.dropped] == [
        ("LC08_L2SP_033032_20231008_02_T1", "collection")
    ]
    assert plan.grid.crs == "EPSG:32613"


# ---------------------------------------------------------------------------------------------
# a real STAC API on 127.0.0.1 (rustac serve) against the same items as a local file


@pytest.mark.parametrize(
    ("items_file", "collection_file", "recipe_text"),
    [
        pytest.param(PC_35MNM, PC_COLLECTION, RECIPE_35MNM, id="planetary-computer-35MNM"),
        pytest.param(
            ES_C1_ITEMS,
            ES_C1_ITEMS.parent / "collection.json",
            RECIPE_35MNM.replace("sentinel-2-l2a", "sentinel-2-c1-l2a")
            .replace("[27.0, -8.2, 27.3, -7.9]", "[-105.3, 39.95, -105.1, 40.1]")
            .replace("2020-05", "2024-03")
            .replace("2020-08", "2024-05")
            .replace("max_cloud_cover: 10", "max_cloud_cover: 50"),
            id="earth-search-c1-13TDE",
        ),
    ],
)
def test_plan_from_a_local_api_equals_plan_from_the_file(
    tmp_path: Path, rustac_api: Any, items_file: Path, collection_file: Path, recipe_text: str
) -> None:
    need(items_file)
    need(collection_file)
    url = rustac_api(collection_file, items_file)
    api_recipe = load_recipe(
        write_recipe(tmp_path, recipe_text.format(catalog=f"url: {url}\n  page_size: 4"), "a.yaml")
    )
    file_recipe = load_recipe(
        write_recipe(tmp_path, recipe_text.format(catalog=f"path: {items_file}"), "f.yaml")
    )
    pages: list[tuple[int, int]] = []
    from_api = plan_recipe(api_recipe, on_page=lambda p, n: pages.append((p, n)))
    from_file = plan_recipe(file_recipe)

    assert comparable(from_api) == comparable(from_file)
    n_items = len(json.loads(items_file.read_text())["features"])
    assert from_api.totals.items_found == n_items
    assert len(pages) == from_api.source["pages"] == -(-n_items // 4)  # paginated by 4
    assert pages[-1][1] == n_items
    # rustac declares neither query nor filter: everything was checked on the client
    assert from_api.source["server_filter"] == "none"
    extra = [w for w in from_api.warnings if w not in from_file.warnings]
    assert len(extra) == 1 and "declares neither the filter nor the query extension" in extra[0]
    assert from_api.totals.items_kept > 0 and from_api.totals.dropped.get("cloud", 0) > 0


def test_plan_35mnm_contents(tmp_path: Path) -> None:
    need(PC_35MNM)
    recipe = load_recipe(write_recipe(tmp_path, RECIPE_35MNM.format(catalog=f"path: {PC_35MNM}")))
    plan = plan_recipe(recipe)
    assert [(m.month, len(m.items)) for m in plan.months] == [
        ("2020-05", 0),
        ("2020-06", 6),
        ("2020-07", 5),
        ("2020-08", 0),
    ]
    assert plan.totals.items_kept == 11 and plan.totals.dropped == {"cloud": 2}
    assert {p.dn_offset_rule for m in plan.months for p in m.items} == {"baseline"}
    assert {p.correction for m in plan.months for p in m.items} == {1000}
    assert plan.grid.crs == "EPSG:32735"


def test_replay_of_the_projects_own_recorded_session(tmp_path: Path) -> None:
    """A session recorded against rustac (``python -m tests.cli.record_cassettes``), replayed with the
    request bodies matched: a change in what we send shows up here."""
    cassette_path = OWN_CASSETTES / "rustac-35mnm.yaml"
    need(PC_35MNM)
    recorded = json.loads(json.dumps(__import__("yaml").safe_load(cassette_path.read_text())))
    url = recorded["interactions"][0]["request"]["uri"].rstrip("/")
    api_recipe = load_recipe(
        write_recipe(tmp_path, RECIPE_35MNM.format(catalog=f"url: {url}\n  page_size: 5"), "a.yaml")
    )
    file_recipe = load_recipe(
        write_recipe(tmp_path, RECIPE_35MNM.format(catalog=f"path: {PC_35MNM}"), "f.yaml")
    )
    with replay(cassette_path, match_body=True) as played:
        from_api = plan_recipe(api_recipe)
        assert played.all_played
    assert comparable(from_api) == comparable(plan_recipe(file_recipe))
    assert from_api.source["pages"] == 3


# ---------------------------------------------------------------------------------------------
# local files


def test_static_catalog_and_item_collection_with_relative_hrefs(tmp_path: Path) -> None:
    catalog = pystac.Catalog("demo", "a static demo catalog")
    from datetime import UTC, datetime

    for day in (1, 2):
        item = pystac.Item(
            f"item-{day}",
            {
                "type": "Polygon",
                "coordinates": [[[27, -8.2], [27.3, -8.2], [27.3, -7.9], [27, -7.9], [27, -8.2]]],
            },
            [27, -8.2, 27.3, -7.9],
            datetime(2020, 6, day, 8, tzinfo=UTC),
            {"eo:cloud_cover": 1.0, "s2:processing_baseline": "05.00"},
        )
        for key in ("B04", "B08", "SCL"):
            item.add_asset(key, pystac.Asset(f"./{key}.tif"))
        catalog.add_item(item)
    root = tmp_path / "cat"
    catalog.normalize_hrefs(str(root))
    catalog.save(pystac.CatalogType.SELF_CONTAINED)
    items = read_local_items(root / "catalog.json")
    assert sorted(i["id"] for i in items) == ["item-1", "item-2"]
    hrefs = {i["id"]: i["assets"]["B04"]["href"] for i in items}
    assert hrefs["item-1"] == str(root / "item-1" / "B04.tif")

    fc = {
        "type": "FeatureCollection",
        "features": [json.loads((root / "item-1" / "item-1.json").read_text())],
    }
    (tmp_path / "fc").mkdir()
    (tmp_path / "fc" / "items.json").write_text(json.dumps(fc))
    items = read_local_items(tmp_path / "fc" / "items.json")
    assert items[0]["assets"]["SCL"]["href"] == str(tmp_path / "fc" / "SCL.tif")

    text = RECIPE_35MNM.format(catalog="path: cat/catalog.json").replace(
        "max_cloud_cover: 10", "max_cloud_cover: 5"
    )
    plan = plan_recipe(load_recipe(write_recipe(tmp_path, text)))
    assert [p.id for p in plan.month("2020-06").items] == ["item-1", "item-2"]
    assert plan.month("2020-06").items[0].hrefs["mask"] == str(root / "item-1" / "SCL.tif")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json", "not JSON"),
        ("[1, 2]", "expected a STAC object"),
        ('{"type": "Thing"}', "got type 'Thing'"),
        ('{"type": "FeatureCollection", "features": [{"type": "Point"}]}', "not a GeoJSON Feature"),
    ],
)
def test_bad_local_files(tmp_path: Path, content: str, message: str) -> None:
    (tmp_path / "items.json").write_text(content)
    recipe = load_recipe(write_recipe(tmp_path, RECIPE_35MNM.format(catalog="path: items.json")))
    with pytest.raises(StacError, match=message):
        resolve_items(recipe)


# ---------------------------------------------------------------------------------------------
# conformance and retries against a scripted API on 127.0.0.1

FAST = "\n  max_retries: 2\n  backoff_factor: 0.01\n  backoff_max: 0.05\n  timeout: 2"


def feature_collection(*items: dict[str, Any], links: list[Any] | None = None) -> dict[str, Any]:
    return {"type": "FeatureCollection", "features": list(items), "links": links or []}


def one_item() -> dict[str, Any]:
    return s2_item("S2A_MSIL2A_20200611T080611_R078_T35MNM_20200826T230619", "2020-06-11T08:06:11Z")


def api_recipe(tmp_path: Path, api: ScriptedAPI, extra: str = FAST) -> Any:
    return load_recipe(
        write_recipe(tmp_path, RECIPE_35MNM.format(catalog=f"url: {api.url}{extra}"))
    )


@pytest.mark.parametrize(
    ("conforms", "server_filter"),
    [
        (["https://api.stacspec.org/v1.0.0-rc.2/item-search#filter"], "filter"),
        (["https://api.stacspec.org/v1.0.0/item-search#query"], "query"),
        (
            [
                "https://api.stacspec.org/v1.0.0/item-search#query",
                "https://api.stacspec.org/v1.0.0-rc.2/item-search#filter",
            ],
            "filter",
        ),
        ([], "none"),
    ],
)
def test_server_filter_follows_conformance(
    tmp_path: Path, scripted_api: ScriptedAPI, conforms: list[str], server_filter: str
) -> None:
    api = scripted_api
    api.script[("GET", "/")] = [(200, {}, landing_page(api.url, conforms))]
    api.script[("POST", "/search")] = [(200, {}, feature_collection(one_item()))]
    extra = FAST + "\n" + "  # conditions\n"
    text = RECIPE_35MNM.format(catalog=f"url: {api.url}{extra}") + (
        "  properties:\n    platform: {in: [Sentinel-2A, Sentinel-2B]}\n"
    )
    plan = plan_recipe(load_recipe(write_recipe(tmp_path, text)))
    assert plan.source["server_filter"] == server_filter
    body = json.loads(next(b for m, _, b in api.requests if m == "POST"))
    if server_filter == "filter":
        assert body["filter-lang"] == "cql2-json"
        assert body["filter"] == {
            "op": "and",
            "args": [
                {"op": "<=", "args": [{"property": "eo:cloud_cover"}, 10.0]},
                {"op": "in", "args": [{"property": "platform"}, ["Sentinel-2A", "Sentinel-2B"]]},
            ],
        }
        assert "query" not in body
    elif server_filter == "query":
        assert body["query"] == {
            "eo:cloud_cover": {"lte": 10.0},
            "platform": {"in": ["Sentinel-2A", "Sentinel-2B"]},
        }
        assert "filter" not in body
    else:
        assert "query" not in body and "filter" not in body
    assert body["collections"] == ["sentinel-2-l2a"]
    assert body["bbox"] == [27.0, -8.2, 27.3, -7.9]
    assert body["datetime"] == "2020-05-01T00:00:00Z/2020-09-01T00:00:00Z"
    assert plan.totals.items_kept == 1  # checked on the client in every case


def test_retries_cover_post_503_and_429(tmp_path: Path, scripted_api: ScriptedAPI) -> None:
    api = scripted_api
    api.script[("GET", "/")] = [
        (503, {}, {"error": "warming up"}),
        (200, {}, landing_page(api.url)),
    ]
    api.script[("POST", "/search")] = [
        (503, {}, {"error": "busy"}),
        (429, {"Retry-After": "0"}, {"error": "slow down"}),
        (200, {}, feature_collection(one_item())),
    ]
    plan = plan_recipe(api_recipe(tmp_path, api))
    assert api.count("GET", "/") == 2
    assert api.count("POST", "/search") == 3
    bodies = {b for m, _, b in api.requests if m == "POST"}
    assert len(bodies) == 1  # the same search body was sent again on every retry
    assert plan.totals.items_kept == 1


def test_retries_follow_pagination_pages(tmp_path: Path, scripted_api: ScriptedAPI) -> None:
    api = scripted_api
    next_link = {
        "rel": "next",
        "href": f"{api.url}/search",
        "method": "POST",
        "body": {"token": "page-2"},
        "type": "application/geo+json",
    }
    second = s2_item("second", "2020-07-02T08:00:00Z")
    api.script[("GET", "/")] = [(200, {}, landing_page(api.url))]
    api.script[("POST", "/search")] = [
        (200, {}, feature_collection(one_item(), links=[next_link])),
        (502, {}, {"error": "gateway"}),
        (200, {}, feature_collection(second)),
    ]
    plan = plan_recipe(api_recipe(tmp_path, api))
    bodies = [json.loads(b) for m, _, b in api.requests if m == "POST"]
    assert bodies[1] == bodies[2] == {"token": "page-2"}
    assert plan.source["pages"] == 2
    assert [p.id for m in plan.months for p in m.items][-1] == "second"


def test_a_server_that_never_succeeds_fails_in_bounded_time(
    tmp_path: Path, scripted_api: ScriptedAPI
) -> None:
    api = scripted_api
    api.script[("GET", "/")] = [(200, {}, landing_page(api.url))]
    api.script[("POST", "/search")] = [(503, {}, {"error": "down for maintenance"})]
    recipe = api_recipe(tmp_path, api)
    started = time.monotonic()
    with pytest.raises(StacError) as info:
        plan_recipe(recipe)
    elapsed = time.monotonic() - started
    assert elapsed < RetryPolicy.from_recipe(recipe).bound() and elapsed < 5
    message = str(info.value)
    assert f"searching {api.url}/search failed after 3 attempts: HTTP 503" in message
    assert "down for maintenance" in message
    assert api.count("POST", "/search") == 3


def test_the_message_counts_the_attempts_really_made(
    tmp_path: Path, scripted_api: ScriptedAPI
) -> None:
    """Decision 0013: a 400 is not retried, so one attempt was made (main said "after 3")."""
    api = scripted_api
    api.script[("GET", "/")] = [(200, {}, landing_page(api.url))]
    api.script[("POST", "/search")] = [(400, {}, {"error": "bad bbox"})]
    with pytest.raises(StacError) as info:
        plan_recipe(api_recipe(tmp_path, api))
    assert f"searching {api.url}/search failed after 1 attempt: HTTP 400" in str(info.value)
    assert api.count("POST", "/search") == 1


def test_a_retry_that_succeeds_then_fails_counts_its_own_attempts(
    tmp_path: Path, scripted_api: ScriptedAPI
) -> None:
    """A 503 then a 400: two attempts of that request, counted, not the policy's maximum (5)."""
    api = scripted_api
    api.script[("GET", "/")] = [(200, {}, landing_page(api.url))]
    api.script[("POST", "/search")] = [
        (503, {}, {"error": "busy"}),
        (400, {}, {"error": "bad bbox"}),
    ]
    extra = "\n  max_retries: 4\n  backoff_factor: 0.01\n  backoff_max: 0.05"
    with pytest.raises(StacError) as info:
        plan_recipe(api_recipe(tmp_path, api, extra))
    assert "failed after 2 attempts: HTTP 400" in str(info.value)
    assert api.count("POST", "/search") == 2


def test_read_timeouts_are_retried_then_reported(tmp_path: Path, scripted_api: ScriptedAPI) -> None:
    api = scripted_api
    api.script[("GET", "/")] = [(200, {}, landing_page(api.url))]
    api.delay = 0.6
    extra = "\n  max_retries: 1\n  backoff_factor: 0.01\n  backoff_max: 0.05\n  timeout: 0.2"
    started = time.monotonic()
    with pytest.raises(StacError) as info:
        plan_recipe(api_recipe(tmp_path, api, extra))
    assert time.monotonic() - started < 3
    assert "opening the STAC API" in str(info.value) and "timed out" in str(info.value)
    assert api.count("GET", "/") == 2


def test_nothing_listening(tmp_path: Path) -> None:
    from tests.cz.helpers import free_port

    url = f"http://127.0.0.1:{free_port()}"
    text = RECIPE_35MNM.format(catalog=f"url: {url}{FAST}")
    started = time.monotonic()
    with pytest.raises(StacError, match=f"opening the STAC API {url} failed after 3 attempts"):
        plan_recipe(load_recipe(write_recipe(tmp_path, text)))
    assert time.monotonic() - started < 5


def test_not_an_item_search_api(tmp_path: Path, scripted_api: ScriptedAPI) -> None:
    api = scripted_api
    page = landing_page(api.url)
    page["conformsTo"] = ["https://api.stacspec.org/v1.0.0/core"]
    api.script[("GET", "/")] = [(200, {}, page)]
    with pytest.raises(StacError, match="does not declare STAC API item search"):
        plan_recipe(api_recipe(tmp_path, api))


def test_not_a_stac_landing_page(tmp_path: Path, scripted_api: ScriptedAPI) -> None:
    api = scripted_api
    api.script[("GET", "/")] = [(200, {}, b"<html>hello</html>")]
    with pytest.raises(StacError, match="is not a STAC API landing page"):
        plan_recipe(api_recipe(tmp_path, api))


def test_retry_policy_is_what_is_mounted() -> None:
    policy = RetryPolicy(max_retries=4, backoff_factor=0.5, backoff_max=8, timeout=20)
    retry = policy.urllib3_retry()
    assert retry.allowed_methods is None  # POST too
    assert set(retry.status_forcelist) == {429, 500, 502, 503, 504}
    assert (retry.total, retry.backoff_max, retry.retry_after_max) == (4, 8, 8)
    stac_io = make_stac_io(policy)
    adapter = stac_io.session.get_adapter("https://example.test/search")
    assert adapter.max_retries.allowed_methods is None
    assert adapter.max_retries.status_forcelist == retry.status_forcelist
    assert stac_io.timeout == (10.0, 20)
    assert policy.bound() == 5 * (10 + 20) + 4 * 8


def test_get_only_search_link(tmp_path: Path, scripted_api: ScriptedAPI) -> None:
    api = scripted_api
    page = landing_page(api.url)
    page["links"][-1]["method"] = "GET"
    api.script[("GET", "/")] = [(200, {}, page)]
    api.script[("GET", "/search")] = [(200, {}, feature_collection(one_item()))]
    plan = plan_recipe(api_recipe(tmp_path, api))
    assert plan.source["method"] == "GET"
    assert api.count("POST", "/search") == 0 and api.count("GET", "/search") == 1
    assert plan.totals.items_kept == 1


def test_a_retry_after_beyond_the_cap_ends_at_once(
    tmp_path: Path, scripted_api: ScriptedAPI
) -> None:
    """Decision 0046: a 429 asking for 3600 s waited the cap five times, silently (151 s on
    main with the default recipe settings), then failed anyway; it now fails at once."""
    api = scripted_api
    api.script[("GET", "/")] = [(200, {}, landing_page(api.url))]
    api.script[("POST", "/search")] = [(429, {"Retry-After": "3600"}, {"error": "slow down"})]
    extra = "\n  max_retries: 5\n  backoff_max: 30"
    started = time.monotonic()
    with pytest.raises(StacError) as info:
        plan_recipe(api_recipe(tmp_path, api, extra))
    assert time.monotonic() - started < 5
    message = str(info.value)
    assert f"searching {api.url}/search failed after 1 attempt" in message
    assert "asking to wait 3600 s (Retry-After), more than the cap of 30 s" in message
    assert api.count("POST", "/search") == 1


def test_a_retry_after_within_the_cap_is_waited_and_said(
    tmp_path: Path, scripted_api: ScriptedAPI, caplog: pytest.LogCaptureFixture
) -> None:
    api = scripted_api
    api.script[("GET", "/")] = [(200, {}, landing_page(api.url))]
    api.script[("POST", "/search")] = [
        (429, {"Retry-After": "1"}, {"error": "slow down"}),
        (200, {}, feature_collection(one_item())),
    ]
    extra = "\n  max_retries: 2\n  backoff_max: 5"
    started = time.monotonic()
    with caplog.at_level("WARNING", logger="cz.stac.guard"):
        plan = plan_recipe(api_recipe(tmp_path, api, extra))
    assert time.monotonic() - started >= 1.0  # the server's wait is honoured
    assert plan.totals.items_kept == 1
    said = [r.getMessage() for r in caplog.records if r.name == "cz.stac.guard"]
    assert said == [
        f"{api.url}/search: HTTP 429; waiting 1 s (as its Retry-After asks) before attempt 2"
    ]


def test_a_hanging_search_ends_after_two_timeouts(
    tmp_path: Path, scripted_api: ScriptedAPI
) -> None:
    """Decision 0046: a server that never answers is asked twice, each bounded by
    ``catalog.timeout`` (main asked max_retries + 1 times: ~390 s with the defaults)."""
    api = scripted_api
    api.script[("GET", "/")] = [(200, {}, landing_page(api.url))]
    recipe = api_recipe(tmp_path, api, "\n  max_retries: 5\n  backoff_factor: 0.01\n  timeout: 2")
    api.delay = 30.0  # every answer (the landing page too) comes after the timeout
    started = time.monotonic()
    with pytest.raises(StacError) as info:
        plan_recipe(recipe)
    elapsed = time.monotonic() - started
    assert 4.0 <= elapsed < 8.0, elapsed  # two attempts of 2 s, not six
    assert "failed after 2 attempts" in str(info.value) and "timed out" in str(info.value)
    assert api.count("GET", "/") == 2
