"""A/B of whole packages (Python layer and extension together) on the peers benchmark's
``Compactor.compact`` workload, each in its own process, the processes alternated round by
round. For builds whose Python layers differ where ``ab_compact.py`` (one process, this tree's
Python for both builds) cannot pair them: a binding that takes a new argument, or the package as
it stood before #21.

    python benches/ab_packages.py NAME=DIR[,NAME=DIR...] [--swe] [--rounds R] [--calls N]

Each ``DIR`` holds a ``contextfold`` package with its built extension
(``contextfold/_core.abi3.so``): e.g. ``git archive COMMIT python/contextfold`` unpacked, with
that commit's ``cargo build --release --features python --lib`` copied in. Every round runs each
package once, in a rotated order; a run is ``N`` timed calls after one untimed, and reports its
median. Prints each package's median over the rounds and the median of its per-round ratios to
the first package (the statistic that survives a shared, noisy machine), with a fingerprint of
its results (``dump_compactions.fingerprint``; "-" when the package's results lack a field it
reads).
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def worker(swe: bool, calls: int) -> None:
    """One package's run (in its own process): ``calls`` timed rounds of the workload."""
    sys.path.insert(0, str(HERE))
    sys.path.insert(0, str(HERE.parent / "tests" / "support"))
    from ab_compact import compactors, histories
    from dump_compactions import fingerprint

    runs = compactors(histories(swe), None)
    try:
        fp = hashlib.sha1(repr([fingerprint(c.compact(h)) for c, h in runs]).encode()).hexdigest()[:12]
    except AttributeError:
        fp = "-"
    times = []
    for _ in range(calls):
        gc.collect()
        gc.disable()
        t = time.perf_counter()
        for c, h in runs:
            c.compact(h)
        times.append(time.perf_counter() - t)
        gc.enable()
    print(f"{statistics.median(times) * 1000:.3f} {fp}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("packages", help="NAME=DIR[,NAME=DIR...]; ratios are to the first")
    ap.add_argument("--swe", action="store_true", help="the 20 longest SWE trajectories, not the 10k history")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--calls", type=int, default=8)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.swe, args.calls)
        return
    pkgs = dict(p.split("=", 1) for p in args.packages.split(","))
    names = list(pkgs)
    times: dict[str, list[float]] = {k: [] for k in names}
    prints: dict[str, set[str]] = {k: set() for k in names}
    for r in range(args.rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            cmd = [sys.executable, __file__, "-", "--worker", "--calls", str(args.calls)] + (["--swe"] if args.swe else [])
            out = subprocess.run(cmd, env={**os.environ, "PYTHONPATH": pkgs[name]}, capture_output=True, text=True,
                                 check=True)
            ms, fp = out.stdout.split()
            times[name].append(float(ms))
            prints[name].add(fp)
    first = names[0]
    for k in names:
        ratios = [a / b for a, b in zip(times[k], times[first], strict=True)]
        print(f"{k}: median {statistics.median(times[k]):.1f} ms; to {first}: {statistics.median(ratios):.3f} "
              f"(rounds {min(ratios):.2f}-{max(ratios):.2f}); results {', '.join(sorted(prints[k]))}")


if __name__ == "__main__":
    main()
