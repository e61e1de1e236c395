"""Regenerate the validator's rule table in docs/spec.md from chronozarr/validate/rules.py.

    python scripts/rules_table.py          # rewrite the block between the rules markers
    python scripts/rules_table.py --check  # exit 1 when the block is stale

tests/chronozarr/validate/test_rules.py runs the same comparison.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from chronozarr.validate.rules import markdown_table

SPEC_MD = Path(__file__).resolve().parents[1] / "docs" / "spec.md"
BLOCK = re.compile(r"(<!-- rules:begin -->\n)(.*?)(<!-- rules:end -->)", flags=re.S)


def main(argv: list[str]) -> int:
    text = SPEC_MD.read_text()
    if not BLOCK.search(text):
        print(f"{SPEC_MD}: no <!-- rules:begin --> ... <!-- rules:end --> block", file=sys.stderr)
        return 2
    new = BLOCK.sub(lambda m: m.group(1) + markdown_table() + m.group(3), text)
    if "--check" in argv:
        stale = new != text
        if stale:
            print(f"{SPEC_MD}: the rule table is stale; run python {__file__}", file=sys.stderr)
        return int(stale)
    SPEC_MD.write_text(new)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
