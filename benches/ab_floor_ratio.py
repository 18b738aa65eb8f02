"""``estimate`` against the floor walk that reads the same sample (``_floor_walk(windows=True)``)
for two builds in one process: each pair times the floor then the estimate back to back on the
synthetic 10,000-message history, the builds alternating, and the median of the per-pair
ratios is printed per build (the statistic that survives a shared, noisy machine, where the
best-of-N of `bench_floor.py` wanders by 0.5x from run to run).

    python benches/ab_floor_ratio.py BEFORE.so AFTER.so [--pairs 300]

Each ``.so`` is a ``cargo build --release --features python --lib`` of one commit.
"""

from __future__ import annotations

import gc
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).parent))
from ab_two_builds import load  # noqa: E402
from synthetic import synthetic_history  # noqa: E402


def _timed(f: Callable[[], Any]) -> float:
    gc.disable()
    try:
        t = time.perf_counter()
        f()
        return time.perf_counter() - t
    finally:
        gc.enable()


def main(before: str, after: str, pairs: int = 300) -> None:
    mods = {"before": load("cf_before", before), "after": load("cf_after", after)}
    history = synthetic_history(10_000)
    ratios: dict[str, list[float]] = {k: [] for k in mods}
    for i in range(pairs):
        for name, mod in list(mods.items())[:: 1 if i % 2 else -1]:
            mod._floor_walk(history, windows=True)
            floor = _timed(lambda: mod._floor_walk(history, windows=True))
            mod.estimate(history)
            ratios[name].append(_timed(lambda: mod.estimate(history)) / floor)
    for name, r in ratios.items():
        q = statistics.quantiles(r, n=4)
        print(f"{name}: estimate / _floor_walk(windows=True) median {statistics.median(r):.3f} "
              f"(p25 {q[0]:.3f}, p75 {q[2]:.3f}) over {pairs} pairs")


if __name__ == "__main__":
    args = sys.argv[1:]
    n = int(args[args.index("--pairs") + 1]) if "--pairs" in args else 300
    main(args[0], args[1], pairs=n)
