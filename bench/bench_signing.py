"""Time to give up on a Planetary Computer SAS token endpoint that fails (cz.stac.signing), in one run:
``planetary_computer.sas.get_token`` (the plain alternative: 10 retries, backoff 0.8, no
timeout) against ``cz.stac.signing.TokenSource`` with a recipe's default retry policy.

Two endpoints on 127.0.0.1: *unreachable* (a port nobody listens on: connection refused) and
*silent* (accepts the connection, never answers). Each call runs in a child process killed after
``--cap`` seconds, so the plain alternative's figure is a lower bound when it hits the cap.

Usage: python bench/bench_signing.py [--cap 120] [--no-doc]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import update_section

CHILD = r"""
import socket, sys, threading, time, warnings
warnings.simplefilter("ignore")
mode, which = sys.argv[1], sys.argv[2]
if mode == "unreachable":
    s = socket.socket(); s.bind(("127.0.0.1", 0)); port = s.getsockname()[1]; s.close()
else:
    srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(50)
    port = srv.getsockname()[1]; held = []
    def accept():
        while True:
            held.append(srv.accept()[0])  # accepted, never answered
    threading.Thread(target=accept, daemon=True).start()
url = f"http://127.0.0.1:{port}/token"
from cz.stac.signing import import_planetary_computer, TokenSource
pc = import_planetary_computer()
pc.settings.Settings.get().sas_url = url
try:
    if which == "plain":
        pc.sas.get_token("acct", "cont")
    else:
        from cz.stac import RetryPolicy
        TokenSource(url, RetryPolicy()).token("acct", "cont")
except Exception as exc:
    print(type(exc).__name__)
"""


def timed(mode: str, which: str, cap: float) -> tuple[float, bool]:
    """Seconds until the call gave up, and whether it hit the cap (killed)."""
    start = time.monotonic()
    try:
        subprocess.run(
            [sys.executable, "-c", CHILD, mode, which],
            timeout=cap,
            capture_output=True,
            check=False,
        )
    except subprocess.TimeoutExpired:  # still waiting at the cap: a lower bound
        return cap, True
    return time.monotonic() - start, False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cap", type=float, default=120.0)
    parser.add_argument("--no-doc", action="store_true")
    args = parser.parse_args()
    rows = []
    for mode in ("unreachable", "silent"):
        plain, plain_capped = timed(mode, "plain", args.cap)
        ours, ours_capped = timed(mode, "cz", args.cap)
        rows.append((mode, plain, plain_capped, ours, ours_capped))
    lines = [
        f"Command: `python bench/bench_signing.py --cap {args.cap:g}`",
        "",
        "Seconds until a token request against a failing endpoint on 127.0.0.1 gives up, each "
        "in a child process killed at the cap (`>=`: still waiting then, no output). cz uses "
        "a recipe's default policy (max_retries 5, backoff 0.5 s capped at 30 s, timeout "
        "30 s; bound 390 s) and reports a wait past 5 s on stderr.",
        "",
        "| endpoint | planetary_computer.get_token s | cz.stac.signing s | plain / cz |",
        "|---|---:|---:|---:|",
    ]
    for mode, plain, plain_capped, ours, ours_capped in rows:
        p = f"{'>= ' if plain_capped else ''}{plain:.1f}"
        o = f"{'>= ' if ours_capped else ''}{ours:.1f}"
        ratio = f"{'>= ' if plain_capped else ''}{plain / ours:.1f}x"
        lines.append(f"| {mode} | {p} | {o} | {ratio} |")
        print(f"{mode:12} plain {p:>10} s   cz {o:>8} s   {ratio}")
    lines += [
        "",
        "planetary_computer's request has no timeout, so against the silent endpoint it waits "
        "as long as the connection stays open (with urllib3's backoff, about 443 s of sleeps "
        "alone against the unreachable one); cz gives up after its six 30 s read timeouts plus "
        "15 s of backoff.",
    ]
    if not args.no_doc:
        update_section("Planetary Computer token requests", "\n".join(lines))


if __name__ == "__main__":
    main()
