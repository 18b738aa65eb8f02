"""Estimate accuracy against provider-reported prompt tokens (shared/data or tests/data).

    python tools/accuracy_report.py [--local]

Prints one row per (recorded provider, api) and the overall median |estimate/real - 1|, plus
the SWE trajectories (every model call, no calibration).
"""

from __future__ import annotations

import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import contextfold as cf  # noqa: E402
from transcripts import LOCAL, SHARED, estimate_request, load_conversations, load_requests, swe_calls  # noqa: E402


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def main() -> None:
    root = LOCAL if "--local" in sys.argv else SHARED
    rows = defaultdict(list)
    errors = defaultdict(int)
    allerr = []
    for r in load_requests(root):
        try:
            e = estimate_request(cf, r)
        except Exception as exc:  # noqa: BLE001 - a report, not a test
            errors[(r.provider, r.api)] += 1
            if "-v" in sys.argv:
                print("ERR", r.source, type(exc).__name__, exc)
            continue
        err = e / r.usage - 1
        rows[(r.provider, r.api)].append(err)
        allerr.append(abs(err))
        if "-v" in sys.argv and abs(err) > 0.5:
            print(f"  {r.source[:90]:90s} est={e} real={r.usage} err={err:+.2f}")
    swe = [e / u - 1 for _, _, ms, u in swe_calls(load_conversations(root, "mini-swe-agent-gemini3"))
           for e in [cf.estimate(ms, provider="gemini")]]
    print(f"{'provider/api':40s} {'n':>5s} {'median|err|':>11s} {'median err':>10s} {'p90|err|':>9s} errors")
    for k in sorted(rows):
        v = rows[k]
        a = [abs(x) for x in v]
        print(f"{'/'.join(k):40s} {len(v):5d} {statistics.median(a):11.3f} {statistics.median(v):+10.3f} {pct(a, .9):9.3f} {errors.get(k, 0)}")
    if swe:
        a = [abs(x) for x in swe]
        print(f"{'swe-trajectories (gemini)':40s} {len(swe):5d} {statistics.median(a):11.3f} {statistics.median(swe):+10.3f} {pct(a, .9):9.3f}")
    both = allerr + [abs(x) for x in swe]
    print(f"cassettes: n={len(allerr)} median={statistics.median(allerr):.3f}; with SWE: n={len(both)} median={statistics.median(both):.3f}")


if __name__ == "__main__":
    main()
