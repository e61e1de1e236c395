"""Run fuzz cases: mutate a base store, drive every entry point in a forked, limited child.

``python -m tests.fuzz.run --n 200 --seed 0 --json out.json`` runs 200 mutated stores through
every entry point of :data:`tests.fuzz.entries.ENTRIES`. Each run is a ``fork`` of this process
(imports done once, so a run costs milliseconds) with RLIMIT_AS set to the parent's address
space plus ``--mem-mib`` and killed after ``--timeout`` seconds. An audit hook in the child
records every file it opens outside the case's store (the decoy ``secret/`` folder beside it,
or anything a symlink or ``..`` resolves to outside).

Outcome classes (the figures of docs/reliability.md):

- good: ``typed`` (a chronozarr / cz typed error, or a CLI exit 1/2 with a one-line message),
  ``finding`` (validate reports it), ``ok-same`` (succeeds with the baseline's result),
  ``ok-changed`` (succeeds with a different result: the mutation changed legitimate content);
- bad: ``untyped`` (another exception type escaped the API), ``traceback`` (the CLI printed
  one), ``markup`` (the CLI rendered store text as rich markup), ``escape`` (a file outside
  the store was opened), ``wrong`` (a mutation that keeps the content, such as renaming chunks
  to the v2 key form the metadata declares, read as different values), ``memory``
  (MemoryError, killed at the memory limit, or a peak RSS more than ``--rss-mib`` above the
  parent's: a decode beyond what the metadata implies), ``hang`` (killed at the timeout),
  ``crash`` (the child died without a result).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import signal
import sys
import tempfile
import time
import traceback
from collections import Counter
from pathlib import Path
from typing import Any

BAD = ("untyped", "traceback", "markup", "escape", "wrong", "memory", "hang", "crash")
GOOD = ("typed", "finding", "ok-same", "ok-changed")

#: Mutation kinds that keep the store's content: any success must equal the baseline.
PRESERVING = ("v2-keys",)

_MARKUP_PROBES = (("[bold red]zq9boom[/]", "zq9boom"), ("[link=http://x]zq9link", "zq9link"))


def _vm_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
    return 0


def _signature(exc: BaseException) -> str:
    """Exception type and the innermost frame inside the project (where it escaped from)."""
    frames = traceback.extract_tb(exc.__traceback__)
    mine = [f for f in frames if "/chronozarr/" in f.filename or "/cli/" in f.filename]
    where = mine[-1] if mine else (frames[-1] if frames else None)
    loc = f"{Path(where.filename).name}:{where.lineno}" if where else "?"
    return f"{type(exc).__name__} at {loc}"


def _child(entry: str, store: Path, case_dir: Path, mem_bytes: int, wfd: int) -> None:
    """In the forked child: limit memory, watch opens, run the entry, write one JSON result."""
    from chronozarr.errors import ChronozarrError
    from tests.fuzz.entries import ENTRIES, _CliError, _Traceback

    try:
        from cz.errors import CzError
    except ImportError:  # pragma: no cover - the toolkit is installed with the test extra
        CzError = ChronozarrError  # type: ignore[misc,assignment]
    root = os.path.realpath(store)
    escapes: list[str] = []

    parent = os.path.dirname(root)

    def audit(event: str, args: tuple[Any, ...]) -> None:
        if event in ("open", "os.listdir", "os.scandir") and args and isinstance(args[0], str):
            real = os.path.realpath(args[0])
            if event != "open" and real == parent:
                return  # cz validate lists the store's folder for dead runs' leftovers: names only
            outside = real.startswith(str(case_dir)) and not (real + "/").startswith(root + "/")
            if outside and not real.startswith(str(case_dir / "out")):
                escapes.append(real)

    out = os.open(case_dir / "out" / f"{entry}.txt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.dup2(out, 1)
    os.dup2(out, 2)
    resource.setrlimit(resource.RLIMIT_AS, (_vm_bytes() + mem_bytes, resource.RLIM_INFINITY))
    sys.addaudithook(audit)
    result: dict[str, Any]
    try:
        status, digest = ENTRIES[entry](str(store))
        result = {"class": status, "digest": digest}
    except MemoryError as exc:
        result = {"class": "memory", "sig": _signature(exc)}
    except _Traceback as exc:
        result = {"class": "traceback", "sig": str(exc)}
    except _CliError as exc:
        result = {"class": "typed", "sig": f"exit {exc.code}"}
    except (ChronozarrError, CzError) as exc:
        result = {"class": "typed", "sig": type(exc).__name__, "msg": str(exc)[:300]}
    except BaseException as exc:  # the point of the harness: anything else is a finding of ours
        result = {"class": "untyped", "sig": _signature(exc), "msg": str(exc)[:300]}
    if escapes:
        result = {"class": "escape", "sig": f"opened {escapes[0]}", "was": result.get("class")}
    try:
        os.write(wfd, json.dumps(result).encode())
    finally:
        os._exit(0)


def _rss_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


#: A run whose peak RSS exceeds the parent's by more than this decoded beyond its metadata
#: (the base stores' largest legitimate allocation is a few MiB).
RSS_MIB = 128


def run_entry(entry: str, store: Path, case_dir: Path, *, timeout: float, mem_mib: int) -> dict:
    """Fork, run ``entry`` on ``store`` in the child, classify what came back."""
    (case_dir / "out").mkdir(exist_ok=True)
    rss0 = _rss_bytes()
    rfd, wfd = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # child
        os.close(rfd)
        try:
            _child(entry, store, case_dir, mem_mib << 20, wfd)
        finally:
            os._exit(70)
    os.close(wfd)
    start = time.monotonic()
    status = None
    usage = None
    while time.monotonic() - start < timeout:
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.002)
    else:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(rfd)
        return {"class": "hang", "sig": f"killed after {timeout:g} s", "s": timeout}
    elapsed = time.monotonic() - start
    with os.fdopen(rfd, "rb") as fh:
        raw = fh.read()
    text = (case_dir / "out" / f"{entry}.txt").read_text(errors="replace")
    if not raw:
        cls = "memory" if "MemoryError" in text or "Cannot allocate" in text else "crash"
        return {"class": cls, "sig": f"died, status {status}", "s": elapsed}
    result = json.loads(raw)
    peak = (usage.ru_maxrss * 1024 - rss0) if usage is not None else 0
    result["rss_mib"] = round(peak / 2**20, 1)
    if peak > RSS_MIB << 20 and result["class"] not in BAD:
        result = {**result, "class": "memory", "sig": f"peak RSS +{peak >> 20} MiB", "was": result}
    if entry.startswith("cz_") and result["class"] in GOOD:
        if "Traceback (most recent call last)" in text:
            result = {"class": "traceback", "sig": "a traceback on stderr"}
        elif "error: internal error (" in text:  # cz.app.main's last line of defence
            line = next(ln for ln in text.splitlines() if "internal error (" in ln)
            result = {"class": "untyped", "sig": line[:120]}
        elif "error: out of memory" in text:
            result = {"class": "memory", "sig": "cz: out of memory"}
        for literal, rendered in _MARKUP_PROBES:
            marked = literal in (case_dir / "mutation.txt").read_text()
            if marked and rendered and rendered in text and literal not in text:
                result = {"class": "markup", "sig": f"{literal!r} rendered as markup"}
    result["s"] = round(elapsed, 3)
    return result


def baselines(base_dir: Path, *, timeout: float, mem_mib: int) -> dict[str, dict[str, str]]:
    """Digest of every entry on every unmutated base store (what ok-same compares to)."""
    from tests.fuzz.entries import ENTRIES
    from tests.fuzz.stores import BASES, build_base

    out: dict[str, dict[str, str]] = {}
    for name in BASES:
        path = build_base(name, base_dir)
        case = base_dir / f"baseline-{name}"
        case.mkdir(exist_ok=True)
        (case / "mutation.txt").write_text("baseline")
        out[name] = {}
        for entry in ENTRIES:
            res = run_entry(entry, path, case, timeout=timeout, mem_mib=mem_mib)
            if res["class"] != "ok":
                raise RuntimeError(f"baseline {name} / {entry} is not ok: {res}")
            out[name][entry] = res["digest"]
    return out


def run(
    n: int,
    seed: int,
    *,
    work: Path,
    timeout: float = 20.0,
    mem_mib: int = 512,
    entries: list[str] | None = None,
    keep: bool = False,
) -> list[dict[str, Any]]:
    """Run ``n`` mutated stores (case i uses Random(seed * 1_000_003 + i)); a row per run."""
    import cz.app  # noqa: F401  (imported once here, so every fork starts with it loaded)
    from tests.fuzz.entries import ENTRIES
    from tests.fuzz.mutate import mutate
    from tests.fuzz.stores import BASES

    base_dir = work / "bases"
    base_dir.mkdir(parents=True, exist_ok=True)
    base_digest = baselines(base_dir, timeout=timeout, mem_mib=mem_mib)
    rows: list[dict[str, Any]] = []
    for i in range(n):
        rng = random.Random(seed * 1_000_003 + i)
        base = BASES[i % len(BASES)]
        case_dir = work / f"case-{i}"
        if case_dir.exists():
            shutil.rmtree(case_dir)
        case_dir.mkdir()
        mutation = mutate(base_dir / base, case_dir, rng)
        (case_dir / "mutation.txt").write_text(mutation)
        for entry in entries or list(ENTRIES):
            res = run_entry(entry, case_dir / "store", case_dir, timeout=timeout, mem_mib=mem_mib)
            if res["class"] == "ok":
                same = entry == "validate_deep" or res.get("digest") == base_digest[base][entry]
                res["class"] = "ok-same" if same else "ok-changed"
                if not same and mutation.startswith(PRESERVING):
                    res = {**res, "class": "wrong", "sig": "content-preserving change"}
            rows.append({"case": i, "base": base, "mutation": mutation, "entry": entry, **res})
        if not keep:
            shutil.rmtree(case_dir, ignore_errors=True)
    return rows


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Counts per class, and the distinct signatures of the bad classes."""
    classes = Counter(r["class"] for r in rows)
    bad = Counter(
        (r["class"], r["entry"], r.get("sig", ""), r["mutation"].split(":")[0])
        for r in rows
        if r["class"] in BAD
    )
    return {
        "runs": len(rows),
        "stores": len({r["case"] for r in rows}),
        "classes": {c: classes.get(c, 0) for c in GOOD + BAD},
        "bad": [
            {"class": c, "entry": e, "sig": s, "kind": k, "count": v}
            for (c, e, s, k), v in bad.most_common()
        ],
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=int(os.environ.get("CZ_FUZZ_N", "50")))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timeout", type=float, default=20.0)
    p.add_argument("--mem-mib", type=int, default=512)
    p.add_argument("--entry", action="append", help="only these entries (repeatable)")
    p.add_argument("--json", type=Path, help="write every row and the summary here")
    p.add_argument("--keep", action="store_true", help="keep case folders (for debugging)")
    p.add_argument("--work", type=Path, help="work folder (default: a temporary one)")
    args = p.parse_args(argv)
    work = args.work or Path(tempfile.mkdtemp(prefix="cz-fuzz-"))
    work.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    rows = run(
        args.n,
        args.seed,
        work=work,
        timeout=args.timeout,
        mem_mib=args.mem_mib,
        entries=args.entry,
        keep=args.keep,
    )
    result = {"seconds": round(time.monotonic() - t0, 1), **summary(rows)}
    if args.json:
        args.json.write_text(json.dumps({"summary": result, "rows": rows}, indent=1))
    print(json.dumps(result, indent=1))
    if not args.work and not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
