"""A/B of the ``MessageCache`` in one process, one build: the core calls of one ``compact`` (the
peers benchmark's workload: budget a third of the history's estimate, tail half of it) caught on
their way in, then replayed in pairs, once sharing a fresh cache as the Compactor does and once
each reading afresh, alternating which goes first.

    python benches/ab_read_cache.py [PAIRS] [--swe]

Prints each side's fastest replay, the median with/without ratio of the pairs (the statistic
that survives a shared, noisy machine), the median time of each call with and without the cache,
and whether every call returned the same with the cache as without.
"""

from __future__ import annotations

import gc
import statistics
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests" / "support"))

from contextfold import _core  # noqa: E402
from ab_compact import compactors, histories  # noqa: E402

CALLS = ("compaction_plan", "extractive_digest", "compaction_verify")


def caught(h: list[dict]) -> list[tuple[str, tuple[Any, ...], dict[str, Any]]]:
    """The cached core calls of one ``compact`` of ``h``, in order, without their cache."""
    out: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []
    real = {name: getattr(_core, name) for name in CALLS}

    def spy(name: str) -> Any:
        def call(*a: Any, **kw: Any) -> Any:
            if kw.get("cache") is not None:
                out.append((name, a, {k: v for k, v in kw.items() if k != "cache"}))
            return real[name](*a, **kw)
        return call

    for name in CALLS:
        setattr(_core, name, spy(name))
    try:
        ran = compactors([h], None)
    finally:
        for name in CALLS:
            setattr(_core, name, real[name])
    return out if ran else []


def replay(work: list[list[tuple[str, tuple[Any, ...], dict[str, Any]]]], cached: bool,
           per_call: list[list[float]]) -> tuple[float, list[Any]]:
    results = []
    t0 = time.perf_counter()
    for calls in work:
        cache = _core.MessageCache() if cached else None
        for k, (name, a, kw) in enumerate(calls):
            t = time.perf_counter()
            results.append(getattr(_core, name)(*a, cache=cache, **kw))
            per_call[k].append(time.perf_counter() - t)
    return time.perf_counter() - t0, results


def main(pairs: int, swe: bool) -> None:
    work = [w for w in (caught(h) for h in histories(swe)) if w]
    print(f"{len(work)} compactions, {sum(len(w) for w in work)} core calls")
    width = max(len(w) for w in work)
    times: dict[bool, list[float]] = {True: [], False: []}
    per: dict[bool, list[list[float]]] = {True: [[] for _ in range(width)], False: [[] for _ in range(width)]}
    same = None
    for i in range(pairs):
        outs = {}
        for cached in ((True, False) if i % 2 else (False, True)):
            gc.collect()
            gc.disable()
            t, outs[cached] = replay(work, cached, per[cached])
            gc.enable()
            times[cached].append(t)
        same = outs[True] == outs[False] if same is None else same and outs[True] == outs[False]
    ratio = statistics.median(a / b for a, b in zip(times[True], times[False], strict=True))
    print(f"without min {min(times[False]) * 1e3:.1f} ms, with min {min(times[True]) * 1e3:.1f} ms, "
          f"median with/without {ratio:.3f} ({pairs} pairs); identical results: {same}")
    if not swe:
        for k, (name, _, kw) in enumerate(work[0]):
            print(f"  {name}{' (costs given)' if kw.get('costs') is not None else ''}: "
                  f"{statistics.median(per[False][k]) * 1e3:.1f} -> {statistics.median(per[True][k]) * 1e3:.1f} ms")


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    main(int(args[0]) if args else 20, "--swe" in sys.argv)
