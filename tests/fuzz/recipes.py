"""Recipe mutations of the fuzz harness: one hostile edit of a valid recipe's text.

Edits: a value replaced by a hostile scalar (YAML 1.1 quirks, tags, huge numbers, markup,
control characters), a line deleted or duplicated, an alias or anchor trick, deep nesting,
random bytes. ``parse_recipe`` must answer each with a Recipe or a located RecipeError.
"""

from __future__ import annotations

import random
import time
import tracemalloc
from typing import Any

from cz.errors import RecipeError
from cz.recipe import Recipe, parse_recipe
from tests.cz.helpers import MINIMAL_RECIPE

__all__ = ["BASE_RECIPE", "mutate_recipe", "parse_measured", "recipe_slice"]

BASE_RECIPE = (
    MINIMAL_RECIPE
    + """\
mask:
  keep: [4, 5, 6]
gap_fill:
  method: carry-forward
  max_age: 2
store:
  dtype: uint16
  nodata: 0
  shard: true
  shard_time: 12
"""
)

SCALARS = [
    "1:30",
    "yes",
    "off",
    "~",
    "!!binary aGVsbG8=",
    "!!set {a: null}",
    "!!timestamp 2020-01-01",
    "!!python/object:os.system ls",
    "0000-01",
    "9999-12",
    "1" * 5000,
    "1e999",
    ".nan",
    "-.inf",
    "'[bold red]x[/]'",
    '"\\x00"',
    "\x00",
    "&a [*a]",
    "[" * 3000 + "]" * 3000,
    "0x" + "f" * 40,
    "-1",
    "2**64",
    "''",
    "[]",
    "{}",
    "../../etc/passwd",
    "http://127.0.0.1:9/x",
    "1000000000",
    ".NaN",
]


def mutate_recipe(rng: random.Random) -> tuple[str, str]:
    """(description, recipe text) of one mutation of BASE_RECIPE."""
    lines = BASE_RECIPE.splitlines()
    kind = rng.choice(["value", "value", "value", "delete", "duplicate", "bytes", "bomb"])
    if kind == "value":
        i = rng.choice([i for i, ln in enumerate(lines) if ":" in ln and not ln.endswith(":")])
        key = lines[i].split(":", 1)[0]
        value = rng.choice(SCALARS)
        lines[i] = f"{key}: {value}"
        return f"value: {key.strip()}={value[:20]!r}", "\n".join(lines) + "\n"
    if kind == "delete":
        i = rng.randrange(len(lines))
        return f"delete: line {i + 1}", "\n".join(lines[:i] + lines[i + 1 :]) + "\n"
    if kind == "duplicate":
        i = rng.randrange(len(lines))
        return f"duplicate: line {i + 1}", "\n".join(lines[: i + 1] + lines[i:]) + "\n"
    if kind == "bytes":
        data = bytearray(BASE_RECIPE.encode())
        for _ in range(rng.choice([1, 3, 10])):
            data[rng.randrange(len(data))] = rng.randrange(256)
        return "bytes: flipped", data.decode("utf-8", "replace")
    width = rng.choice([5, 9, 20])
    bomb = (
        "a: &a ["
        + ", ".join(["x"] * width)
        + "]\n"
        + "".join(
            f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * width)}]\n"
            for i in range(rng.choice([3, 6, 9]))
        )
    )
    return f"bomb: width {width}", bomb + BASE_RECIPE


def parse_measured(text: str, source: str) -> dict[str, Any]:
    """``parse_recipe(text)``'s outcome (``recipe``, ``error`` with its message and first
    problem, or ``other``), its seconds and its traced peak bytes. Meant for a memory-limited
    child (tests.fuzz.limited): the text may be an alias bomb."""
    tracemalloc.start()
    t0 = time.perf_counter()
    out: dict[str, Any] = {"outcome": "recipe", "message": "", "first": ""}
    try:
        parse_recipe(text, source=source)
    except RecipeError as exc:
        out.update(outcome="error", message=str(exc), first=str(exc.first))
    except Exception as exc:  # anything but a RecipeError is the defect the caller looks for
        out.update(outcome="other", message=f"{type(exc).__name__}: {exc}"[:500])
    finally:
        out["seconds"] = time.perf_counter() - t0
        out["peak"] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return out


def recipe_slice(n: int, seed: int) -> dict[str, Any]:
    """``n`` mutations of BASE_RECIPE (seed ``seed``) through ``parse_recipe``: the count of
    recipes and located errors, and every bad outcome (another exception, an error not naming
    the file, more than 5 s). Mutations include alias bombs: run it in a limited child."""
    rng = random.Random(seed)
    result: dict[str, Any] = {"recipe": 0, "error": 0, "bad": []}
    for i in range(n):
        what, text = mutate_recipe(rng)
        t0 = time.perf_counter()
        try:
            assert isinstance(parse_recipe(text, source="fuzz.yaml"), Recipe)
            result["recipe"] += 1
        except RecipeError as exc:
            if not str(exc).startswith("fuzz.yaml"):
                result["bad"].append([i, what, f"unlocated: {str(exc)[:200]}"])
            result["error"] += 1
        except Exception as exc:  # the harness's point: anything else is a defect
            result["bad"].append([i, what, f"{type(exc).__name__}: {str(exc)[:200]}"])
        if time.perf_counter() - t0 >= 5:
            result["bad"].append([i, what, f"slow: {time.perf_counter() - t0:.1f} s"])
    return result
