"""The monthly plan: which items make each month of the store, on which grid, at what cost.

A plan is what ``cz build --dry-run`` prints and what a build consumes. It is made from a recipe
and the candidate items of its catalog (:mod:`cz.stac`) by pure rules, each documented in
``docs/recipes.md`` and ``docs/decisions/0003-dedupe-and-dn-correction.md``:

1. Checks on the client, whatever the server did, in this order (the first failure is the
   reason shown): item is well formed, in the collection, in the months, touches the AOI,
   cloud cover at most the ceiling, property conditions hold, has every asset needed (found by
   key, else by eo:bands / bands name: :mod:`~cz.plan.assets`). An asset no candidate item has
   fails the plan (a located ``RecipeError``) instead of dropping every item.
2. De-duplication of the survivors: items of the same scene (satellite, MGRS tile, relative
   orbit, UTC day) are ranked (newest processing baseline, then least nodata, then newest
   generation time, then id) and an item is dropped as a duplicate when at least 90 % of its
   footprint is covered by better-ranked items of that scene. Different tiles are kept.
3. The digital-number convention of each item (:func:`dn_offset_of`) and the correction that
   brings it to the store's one convention.
4. Grouping by UTC calendar month; months without items are kept, empty.
5. The grid (:func:`grid_for`): the AOI projected to the CRS, its bounds snapped outward to whole
   multiples of the resolution, and the pyramid levels and cells of spec 2.1 / 6.

Modules: :mod:`~cz.plan.items` (facts of item dicts), :mod:`~cz.plan.assets` (which asset holds
a band), :mod:`~cz.plan.rules` (rules 1 and 2),
:mod:`~cz.plan.grid` (rule 5), :mod:`~cz.plan.estimate` (the size), :mod:`~cz.plan.model` (the
JSON model) and :mod:`~cz.plan.make` (rules 3 and 4, the whole plan); months are :mod:`cz.months`.
A cluster build makes the same plan with its items on disk (:mod:`~cz.plan.spooled`, over
:mod:`~cz.plan.spool`: decision 0065), so its client holds a few bytes an item.

A plan is JSON (``Plan.to_dict``), holds unsigned hrefs only, and keeps each kept item's STAC
dict (trimmed to the assets read, no links; packed in memory: decision 0060) so a build needs no
second search (``Plan.month_items``). A local FeatureCollection is screened item by item as it
is read (:mod:`cz.stac.stream`), so no whole catalog is held while the plan is made.
"""

from cz.months import month_bounds, month_of, month_range
from cz.plan.estimate import Estimate, estimate_store
from cz.plan.grid import GridPlan, LevelPlan, aligned_bounds, grid_for, project_lonlat, utm_epsg
from cz.plan.items import DnDecision, dn_offset_of, scene_key
from cz.plan.make import make_plan, plan_recipe
from cz.plan.model import PLAN_VERSION, DroppedItem, MonthPlan, Plan, PlannedItem

__all__ = [
    "PLAN_VERSION",
    "DnDecision",
    "DroppedItem",
    "Estimate",
    "GridPlan",
    "LevelPlan",
    "MonthPlan",
    "Plan",
    "PlannedItem",
    "aligned_bounds",
    "dn_offset_of",
    "estimate_store",
    "grid_for",
    "make_plan",
    "month_bounds",
    "month_of",
    "month_range",
    "plan_recipe",
    "project_lonlat",
    "scene_key",
    "utm_epsg",
]
