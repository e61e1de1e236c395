"""Record the project's own vcrpy cassettes against a local STAC API (rustac serve).

    .venv/bin/python -m tests.cli.record_cassettes      # from the repository root

Writes ``tests/cli/cassettes/rustac-35mnm.yaml``: the session of ``plan_recipe`` (landing page,
then three POST /search pages of 5) for ``RECIPE_35MNM`` against ``rustac serve`` loaded with the
Planetary Computer 35MNM items of the shared fixtures. ``test_stac.py`` replays it with request
bodies matched, so re-record when what the toolkit sends changes on purpose.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import vcr

from cz.plan import plan_recipe
from cz.recipe import load_recipe
from tests.cz.helpers import (
    OWN_CASSETTES,
    PC_35MNM,
    PC_COLLECTION,
    RECIPE_35MNM,
    rustac_api_factory,
    write_recipe,
)


def main() -> None:
    """Record every cassette of the project (overwriting)."""
    OWN_CASSETTES.mkdir(parents=True, exist_ok=True)
    target = OWN_CASSETTES / "rustac-35mnm.yaml"
    target.unlink(missing_ok=True)
    factory = rustac_api_factory()
    start = next(factory)
    try:
        url = start(PC_COLLECTION, PC_35MNM)
        with tempfile.TemporaryDirectory() as tmp:
            text = RECIPE_35MNM.format(catalog=f"url: {url}\n  page_size: 5")
            recipe = load_recipe(write_recipe(Path(tmp), text))
            recorder = vcr.VCR(record_mode="all", decode_compressed_response=True)
            with recorder.use_cassette(str(target)):
                plan = plan_recipe(recipe)
    finally:
        factory.close()  # stops the server
    print(f"recorded {target} ({plan.totals.items_found} items, {plan.source['pages']} pages)")


if __name__ == "__main__":
    main()
