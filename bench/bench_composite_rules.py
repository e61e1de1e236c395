"""Benchmark of the composite rules (decisions 0043, 0045; docs/recipes.md "mask", "bands"): each
against the plain median of the same items in the same run.

Kernel: :func:`cz.composite.composite_block` on one block (``--block`` px square, 4 bands) of
``--days`` solar days, each day two tiles that meet at a seam (so each day's mosaic joins two
items), 20 % cloud in 16 px blobs and 2 % one-pixel specks per item:

- plain median (SCL keep-set, no cleaning): the reference;
- cleaning ``open: 3, dilate: 6`` on each solar day's mosaic (the toolkit's rule);
- the same cleaning per item, then the mosaic (the rule before decision 0043, re-implemented
  here with the toolkit's disk morphology: the cost of cleaning n items instead of n / 2 days);
- a bit-flag mask: a uint16 Landsat-style ``qa_pixel`` with five rules (fill, dilated cloud,
  cirrus, cloud, cloud shadow), no cleaning;
- a derived NDVI band per observation, and one from the composite.

Each is the fastest of ``--repeat`` interleaved runs (wall and CPU time) and its peak traced
memory (tracemalloc: numpy's allocations of the call; the input arrays are not counted).

Build: ``cz build`` of the demo catalog (bench_build.py's, ``--size`` px, ``--months``) plain,
with the cleaning, and with a derived NDVI per observation; the composite phase and the whole
build, wall time (skip with ``--no-build``).

Usage: python bench/bench_composite_rules.py [--repeat 3] [--days 6] [--block 512]
       [--size 512] [--months 2] [--no-build] [--no-doc]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.common import series_block, update_section  # noqa: E402

KEEP = (4, 5)
SEAM = 0.5  # tile A holds the columns left of the seam, tile B the rest


def _measured(fn: Any) -> tuple[float, float, int]:
    """(wall s, CPU s, peak traced bytes) of one call."""
    tracemalloc.start()
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return wall, cpu, peak


def _items(days: int, size: int) -> dict[str, Any]:
    """Two tiles per solar day meeting at a seam: numbers, SCL and a qa_pixel of each item."""
    rng = np.random.default_rng(43)
    n = 2 * days
    values = (series_block(0, days, 4, 0, size, 0, size) + 1000).repeat(2, axis=0)
    cut = int(size * SEAM)
    values[0::2, :, :, cut:] = 0  # tile A has no data right of the seam ...
    values[1::2, :, :, :cut] = 0  # ... tile B none left of it
    coarse = rng.random((n, size // 16 + 1, size // 16 + 1)) < 0.2
    cloudy = np.kron(coarse, np.ones((16, 16), dtype=bool))[:, :size, :size]
    cloudy |= rng.random((n, size, size)) < 0.02
    land = rng.choice(np.array(KEEP, np.uint8), size=(n, size, size))
    scl = np.where(cloudy, np.uint8(9), land).astype(np.uint8)
    clear_qa, cloud_bit = 21824, 1 << 3  # USGS: clear, low confidence; bit 3 cloud
    qa = np.where(cloudy, np.uint16(clear_qa | cloud_bit), np.uint16(clear_qa)).astype(np.uint16)
    qa[values[:, 0] == 0] = 1  # fill where the tile has no data
    return {
        "values": values,
        "scl": scl,
        "qa": qa,
        "days": [f"2024-01-{d // 2 + 1:02d}" for d in range(n)],
        "n": n,
    }


def _composite_block_before(items: dict[str, Any], open_r: int, dilate_r: int, **args: Any) -> Any:
    """``composite_block`` as it was before decision 0043 (the toolkit's primitives, its steps):
    every item's rejected set opened and dilated, then each day's mosaic of the first valid item,
    then the median. Only to measure what cleaning per item cost."""
    from cz.composite import (
        correct_values,
        observation_validity,
        reduce_observations,
        saturating_coverage,
        value_bounds,
        work_dtype,
    )
    from cz.composite.block import CompositeRules
    from cz.composite.masks import dilate, open_

    values, scl, n = items["values"], items["scl"], items["n"]
    halo = 2 * open_r + dilate_r
    has_data = np.empty((n, *values.shape[2:]), dtype=bool)
    for i in range(n):
        has_data[i] = observation_validity(values[i : i + 1], None, None, args["src_nodata"][i])[0]
    rejected = ~np.isin(scl, KEEP) & has_data
    cleaned = dilate(open_(rejected, open_r), dilate_r)
    crop = (slice(halo, -halo), slice(halo, -halo))
    valid = (has_data & ~cleaned)[(slice(None), *crop)]
    vals = values[(slice(None), slice(None), *crop)]
    dt = np.dtype(args["dtype"])
    wdt, bounds = work_dtype(dt), value_bounds(dt, args["nodata"])
    groups: dict[str, list[int]] = {}
    for i, day in enumerate(items["days"]):
        groups.setdefault(day, []).append(i)
    obs_values = np.empty((len(groups), *vals.shape[1:]), dtype=wdt)
    obs_valid = np.zeros((len(groups), *valid.shape[1:]), dtype=bool)
    for g, members in enumerate(groups.values()):
        for k, i in enumerate(members):
            fixed = correct_values(vals[i], valid[i], 0, args["harmonized"], bounds, wdt)
            if k == 0:
                obs_values[g], obs_valid[g] = fixed, valid[i]
                continue
            take = valid[i] & ~obs_valid[g]
            np.copyto(obs_values[g], fixed, where=take[None])
            obs_valid[g] |= take
    composite, count = reduce_observations(obs_values, obs_valid, CompositeRules(), dt, 0)
    return composite, saturating_coverage(count)


def kernel(repeat: int, days: int, block: int) -> list[tuple[str, float, float, int]]:
    from cz.composite import BandTerms, CompositeRules, composite_block
    from cz.composite.bits import BitRule
    from cz.composite.derived import DerivedBand

    halo = CompositeRules(open_radius=3, dilate_radius=6).halo
    big = _items(days, block + 2 * halo)
    crop = (slice(None), slice(halo, -halo), slice(halo, -halo))
    small = {
        "values": np.ascontiguousarray(big["values"][:, :, halo:-halo, halo:-halo]),
        "scl": np.ascontiguousarray(big["scl"][crop]),
        "qa": np.ascontiguousarray(big["qa"][crop]),
    }
    n = big["n"]
    args: dict[str, Any] = dict(
        corrections=[0] * n,
        solar_days=big["days"],
        src_nodata=[[0] * 4] * n,
        harmonized=[True] * 4,
        dtype="uint16",
        nodata=0,
    )
    terms = tuple(BandTerms(b, b, 1e-4, -0.1) for b in ("blue", "green", "red", "nir"))
    ndvi = DerivedBand("ndvi", "(nir - red) / (nir + red)", 1e-4, -1.0)
    bits = (
        BitRule("fill", 0, 1, (1,)),
        BitRule("dilated_cloud", 1, 1, (1,), cloud=True),
        BitRule("cirrus", 2, 1, (1,), cloud=True),
        BitRule("cloud", 3, 1, (1,), cloud=True),
        BitRule("cloud_shadow", 4, 1, (1,), cloud=True),
    )
    cases: dict[str, Any] = {
        "plain median (SCL keep-set)": lambda: composite_block(
            small["values"], small["scl"], keep=KEEP, **args
        ),
        "cleaning open 3 + dilate 6, per solar day": lambda: composite_block(
            big["values"],
            big["scl"],
            keep=KEEP,
            rules=CompositeRules(open_radius=3, dilate_radius=6, clean=(9,)),
            **args,
        ),
        "cleaning open 3 + dilate 6, per item (before)": lambda: _composite_block_before(
            big, 3, 6, **args
        ),
        "bit flags (qa_pixel, 5 rules)": lambda: composite_block(
            small["values"], small["qa"], keep=None, rules=CompositeRules(bits=bits), **args
        ),
        "derived NDVI per observation": lambda: composite_block(
            small["values"],
            small["scl"],
            keep=KEEP,
            rules=CompositeRules(
                bands=(*terms, BandTerms("ndvi", None, 1e-4, -1.0)), derived=(ndvi,)
            ),
            **args,
        ),
        "derived NDVI from the composite": lambda: composite_block(
            small["values"],
            small["scl"],
            keep=KEEP,
            rules=CompositeRules(
                bands=(*terms, BandTerms("ndvi", None, 1e-4, -1.0)),
                derived=(DerivedBand("ndvi", ndvi.expression, 1e-4, -1.0, after=True),),
            ),
            **args,
        ),
    }
    runs: dict[str, list[tuple[float, float, int]]] = {name: [] for name in cases}
    for fn in cases.values():  # warm-up: imports, first allocations
        fn()
    for _ in range(repeat):
        for name, fn in cases.items():
            runs[name].append(_measured(fn))
    return [
        (name, min(r[0] for r in rs), min(r[1] for r in rs), max(r[2] for r in rs))
        for name, rs in runs.items()
    ]


#: How to read the tables (the reasons are the setup's; the figures are the run's).
READING = (
    "Per item (before) is the rule decision 0043 replaced, kept here only as a cost reference: "
    "it let saturated, dark and nodata pixels back in and opened clouds away at tile seams. "
    "Cleaning each solar day's mosaic instead costs the classification of cloud and hard "
    "rejections and a two-pass mosaic (first clear, else first cloudy item), and saves cleaning "
    "two items per day. The bit-flag case reads a uint16 qa_pixel with five one-bit rules, each "
    "a shift, a mask and a comparison in the band's own type; the plain case's SCL keep-set is "
    "an isin. A derived band per observation is one more band through the median plus the "
    "expression's float64 temporaries per day (the memory column); from the composite it is "
    "one evaluation per block. In the builds, reading the COGs dominates the composite phase, "
    "and the cleaning's 12 px halo reads more pixels per block."
)


BUILD_CASES = {
    "plain median": ("", ""),
    "cleaning open 3 + dilate 6": ("  open: 3\n  dilate: 6\n", ""),
    "derived NDVI per observation": (
        "",
        "  - {name: ndvi, expression: (nir - red) / (nir + red), scale: 0.0001, offset: -1}\n",
    ),
}


def build_runs(repeat: int, size: int, months: int) -> list[tuple[str, float, float]]:
    """Composite-phase and whole-build seconds of cz build per case (fastest of ``repeat``)."""
    from bench.bench_build import RECIPE, bbox, catalog, layout_for
    from cz.build import BuildOptions, build
    from cz.recipe import load_recipe

    cat = catalog(size, months)
    layout = layout_for(size, months)
    end = f"2023-{3 + months:02d}"
    work = Path(tempfile.mkdtemp(prefix="bench-rules-"))
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in BUILD_CASES}
    try:
        for warm_up in (True, *([False] * repeat)):  # the first round only warms GDAL up
            for name, (mask, band) in BUILD_CASES.items():
                text = RECIPE.format(catalog=cat, bbox=list(bbox(layout, size)), end=end)
                text = text.replace(
                    "  - {name: nir, asset: nir}\n", "  - {name: nir, asset: nir}\n" + band
                )
                text = text.replace("mask:\n  asset: scl\n", "mask:\n  asset: scl\n" + mask)
                path = work / "recipe.yaml"
                path.write_text(text)
                out = work / "store.zarr"
                shutil.rmtree(out, ignore_errors=True)
                result = build(load_recipe(path), out=str(out), options=BuildOptions())
                if not warm_up:
                    runs[name].append((result.composite_seconds, result.seconds))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return [(name, min(r[0] for r in rs), min(r[1] for r in rs)) for name, rs in runs.items()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--days", type=int, default=6)
    parser.add_argument("--block", type=int, default=512)
    parser.add_argument("--size", type=int, default=512)
    parser.add_argument("--months", type=int, default=2)
    parser.add_argument("--no-build", action="store_true")
    parser.add_argument("--no-doc", action="store_true")
    args = parser.parse_args()
    load_before = os.getloadavg()
    rows = kernel(args.repeat, args.days, args.block)
    base = rows[0]
    body = [
        "Command: `python bench/bench_composite_rules.py "
        + " ".join(a for a in sys.argv[1:] if a != "--no-doc")
        + "` (fastest of the interleaved runs; peak traced memory is the largest).",
        "",
        f"Kernel: `cz.composite.composite_block`, {args.days} solar days of two tiles each "
        f"(a seam), 4 bands, {args.block} x {args.block} px, uint16 store; the cleaning cases "
        "read the 12 px halo as well.",
        "",
        "| rule | wall | vs plain | CPU | vs plain | peak memory | vs plain |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, wall, cpu, peak in rows:
        body.append(
            f"| {name} | {wall:.3f} s | {wall / base[1]:.2f}x | {cpu:.3f} s | {cpu / base[2]:.2f}x "
            f"| {peak / 2**20:.0f} MiB | {peak / base[3]:.2f}x |"
        )
    if not args.no_build:
        built = build_runs(args.repeat, args.size, args.months)
        ref = built[0]
        body += [
            "",
            f"`cz build` of the demo catalog (bench_build.py's, {args.size} x {args.size} px, "
            f"{args.months} months, 4 bands), wall time:",
            "",
            "| recipe | composites | vs plain | whole build | vs plain |",
            "|---|---:|---:|---:|---:|",
        ]
        for name, comp, whole in built:
            body.append(
                f"| {name} | {comp:.2f} s | {comp / ref[1]:.2f}x | {whole:.2f} s | "
                f"{whole / ref[2]:.2f}x |"
            )
    load_after = os.getloadavg()
    body += ["", READING]
    body += [
        "",
        f"Machine load (`uptime` load average, 1 min) {load_before[0]:.1f} before, "
        f"{load_after[0]:.1f} after: the 2 cores are shared with other jobs, so compare the "
        "ratios, which interleaving keeps fair, more than the seconds.",
    ]
    text = "\n".join(body)
    print(text)
    if not args.no_doc:
        update_section("Composite rules: cleaning, bit masks, derived bands", text)


if __name__ == "__main__":
    main()
