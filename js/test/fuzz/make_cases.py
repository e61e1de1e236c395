"""Write mutated stores for the JS reader's fuzz harness, with the Python harness's mutators.

    python make_cases.py OUT_DIR --start I --count N --seed S

Builds the three base stores of tests/fuzz/stores.py into OUT_DIR/bases (once) and writes
cases I..I+N-1 into OUT_DIR/case-<i>/ exactly as tests/fuzz/run.py does (case i mutates base
BASES[i % 3] with random.Random(S * 1_000_003 + i): the same store the Python harness would
test for that seed and index), each with the decoy sibling folder secret/ next to store/.
Prints one JSON line per case: {"case", "base", "mutation"}. The Node side (harness.js) serves
OUT_DIR over HTTP on 127.0.0.1 and reads each store in a limited child process.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.fuzz.mutate import mutate  # noqa: E402
from tests.fuzz.stores import BASES, build_base  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", type=Path)
    p.add_argument("--start", type=int, default=0)
    p.add_argument("--count", type=int, default=0)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    bases = args.out / "bases"
    bases.mkdir(parents=True, exist_ok=True)
    for name in BASES:
        build_base(name, bases)
    for i in range(args.start, args.start + args.count):
        rng = random.Random(args.seed * 1_000_003 + i)
        base = BASES[i % len(BASES)]
        case_dir = args.out / f"case-{i}"
        if case_dir.exists():
            shutil.rmtree(case_dir)
        case_dir.mkdir()
        mutation = mutate(bases / base, case_dir, rng)
        (case_dir / "mutation.txt").write_text(mutation)
        print(json.dumps({"case": i, "base": base, "mutation": mutation}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
