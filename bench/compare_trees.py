"""CPU time of chronozarr.encode in two source trees, interleaved (a refactor's regression check).

The same 12 x 4 x 1024 x 1024 uint16 series is encoded (star-delta, none and auto, workers=1,
zstd 5) by the chronozarr of OLD and of NEW in alternating subprocesses, three times each;
process CPU time is less sensitive than wall time to other work on a shared machine. Prints the
medians and the new/old ratio.

Usage: git archive COMMIT | tar -x -C /tmp/old && python bench/compare_trees.py /tmp/old [NEW]
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

CODE = r"""
import sys, time, tempfile, json
sys.path.insert(0, sys.argv[1])
import numpy as np, chronozarr
rng = np.random.default_rng(0)
t = np.arange(12)[:, None, None, None]
data = (1000 + 400*np.sin(2*np.pi*t/12) + rng.normal(0, 30, (12, 4, 1024, 1024))).astype("uint16")
out = {}
for enc in ("star-delta", "none", "auto"):
    with tempfile.TemporaryDirectory() as d:
        c0 = time.process_time(); w0 = time.perf_counter()
        chronozarr.encode(data, d + "/s", times=[f"2024-{m+1:02d}-01" for m in range(12)],
            bands=["B02","B03","B04","B08"], crs="EPSG:32631",
            transform=[10,0,600000,0,-10,5000000], encoding=enc, workers=1)
        out[enc] = (time.process_time() - c0, time.perf_counter() - w0)
print(json.dumps(out))
"""
OLD = sys.argv[1]
NEW = sys.argv[2] if len(sys.argv) > 2 else str(Path(__file__).resolve().parents[1])
res: dict[str, list[dict[str, list[float]]]] = {"old": [], "new": []}
for _ in range(3):
    for name, root in (("old", OLD), ("new", NEW)):
        r = subprocess.run(
            [sys.executable, "-c", CODE, root], capture_output=True, text=True, check=True
        )
        res[name].append(json.loads(r.stdout.strip().splitlines()[-1]))
        print(name, res[name][-1], flush=True)
for enc in ("star-delta", "none", "auto"):
    for name in ("old", "new"):
        cpu = sorted(x[enc][0] for x in res[name])
        wall = sorted(x[enc][1] for x in res[name])
        print(
            f"{enc:10} {name}: cpu min {cpu[0]:.2f} s median {cpu[1]:.2f} s | wall min {wall[0]:.2f} median {wall[1]:.2f}"
        )
    o = sorted(x[enc][0] for x in res["old"])[1]
    n = sorted(x[enc][0] for x in res["new"])[1]
    print(f"{enc:10} new/old cpu median ratio {n / o:.3f}")
