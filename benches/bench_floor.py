"""contextfold against the physical floor of its own work, side by side in one run.

The floor (`contextfold._core._floor_walk`) is one C-level walk over the same Python objects
that takes every string's length and a 128-byte sample of it and does nothing else: no
estimator can be cheaper. Ratios to it stay meaningful on a noisy shared machine, where
absolute times do not. Printed with `pytest benches/bench_floor.py --benchmark-enable -s`:

- `estimate` / floor on the synthetic 10k history, and the pure-Python reference / `estimate`;
- `prune` + `find_tail_start` (30k-token tail) / floor;
- `count_many` on 2 threads against a single-threaded loop of `count`;
- the cost per message of `estimate` and of the floor from 1k to 100k messages.

In the default run (`--benchmark-disable`) each benchmark runs once as a smoke test.
"""

from __future__ import annotations

import time
from typing import Any, Callable

import pytest

import contextfold as cf
from contextfold import _core
from reference_estimate import reference_estimate
from synthetic import synthetic_history

TAIL_TOKENS = 30_000


def _best(fn: Callable[[], Any], rounds: int) -> float:
    """The fastest of `rounds` calls, in seconds: the run least disturbed by other processes."""
    best = float("inf")
    for _ in range(rounds):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def _interleaved(fns: dict[str, Callable[[], Any]], rounds: int) -> dict[str, float]:
    """Best time of each function, the functions called in turn each round, so a burst of load
    on the machine hits all of them alike. Each is called twice in a row and the second call
    timed: otherwise the floor walk measured right after `prune` (which allocates thousands of
    objects) starts with cold caches and looks twice as slow as it is."""
    best = {k: float("inf") for k in fns}
    for _ in range(rounds):
        for k, fn in fns.items():
            fn()
            t = time.perf_counter()
            fn()
            best[k] = min(best[k], time.perf_counter() - t)
    return best


def _prune_and_tail(ms: list[dict]) -> int:
    start = cf.find_tail_start(ms, budget_tokens=TAIL_TOKENS)
    return start + len(cf.prune(ms, protect_tail_tokens=TAIL_TOKENS))


def bench_floor_walk_10k(benchmark, history_10k):
    benchmark.group = "floor/history_10k"
    assert benchmark(_core._floor_walk, history_10k) > 0


def bench_estimate_vs_floor(benchmark, history_10k):
    benchmark.group = "floor/history_10k"
    total = benchmark(cf.estimate, history_10k)
    assert total > 0
    if benchmark.disabled:  # the default run: one pass as a smoke test, nothing timed
        return
    b = _interleaved(
        {
            "floor": lambda: _core._floor_walk(history_10k),
            "floor_windows": lambda: _core._floor_walk(history_10k, windows=True),
            "estimate": lambda: cf.estimate(history_10k),
            "estimate_each": lambda: cf.estimate_each(history_10k),
        },
        40,
    )
    ref = _best(lambda: reference_estimate(history_10k), 5)
    # The floor with the estimate's own sample (the three windows of every long text, which the
    # Session's tail accuracy needs) is the lower bound of any estimate reading that sample.
    print(
        f"\n10k history: floor {b['floor'] * 1e3:.2f} ms, estimate {b['estimate'] * 1e3:.2f} ms "
        f"({b['estimate'] / b['floor']:.2f}x the floor, goal <= 1.5x), estimate_each "
        f"{b['estimate_each'] / b['floor']:.2f}x; the floor reading the estimate's windows too "
        f"{b['floor_windows'] / b['floor']:.2f}x the floor (estimate {b['estimate'] / b['floor_windows']:.2f}x it); "
        f"reference {ref * 1e3:.1f} ms ({ref / b['estimate']:.1f}x estimate, goal >= 7x)"
    )


def bench_prune_and_tail_vs_floor(benchmark, history_10k):
    benchmark.group = "floor/history_10k"
    assert benchmark(_prune_and_tail, history_10k) > 0
    if benchmark.disabled:
        return
    b = _interleaved(
        {
            "floor": lambda: _core._floor_walk(history_10k),
            "tail": lambda: cf.find_tail_start(history_10k, budget_tokens=TAIL_TOKENS),
            "prune": lambda: cf.prune(history_10k, protect_tail_tokens=TAIL_TOKENS),
        },
        20,
    )
    both = b["tail"] + b["prune"]
    print(
        f"\n10k history, {TAIL_TOKENS:,}-token tail: find_tail_start {b['tail'] / b['floor']:.2f}x "
        f"the floor, prune {b['prune'] / b['floor']:.2f}x, together {both / b['floor']:.2f}x (goal <= 3x)"
    )


def bench_count_many_vs_loop(benchmark, swe_histories):
    benchmark.group = "floor/count_many"
    expected = [cf.count(h, model="gpt-4o") for h in swe_histories]
    assert benchmark(cf.count_many, swe_histories, model="gpt-4o", threads=2) == expected
    if benchmark.disabled:
        return
    b = _interleaved(
        {
            "loop": lambda: [cf.count(h, model="gpt-4o") for h in swe_histories],
            "threads2": lambda: cf.count_many(swe_histories, model="gpt-4o", threads=2),
        },
        7,
    )
    print(f"\ncount_many, {len(swe_histories)} SWE trajectories: 2 threads {b['loop'] / b['threads2']:.2f}x "
          f"a loop of count (goal >= 1.8x on 2 cores)")


@pytest.mark.parametrize("n", [1_000, 10_000, 100_000])
def bench_cost_per_message(benchmark, n):
    """ns per message of estimate and of the floor: flat from 1k to 100k messages is the goal
    (no step that grows faster than the history)."""
    if benchmark.disabled and n > 1_000:
        pytest.skip("the 100k-message history takes seconds to build: timed runs only")
    history = synthetic_history(n)
    benchmark.group = "floor/per_message"
    assert benchmark(cf.estimate, history) > 0
    if benchmark.disabled:
        return
    b = _interleaved(
        {"floor": lambda: _core._floor_walk(history), "estimate": lambda: cf.estimate(history)},
        max(5, 200_000 // n),
    )
    print(f"\n{n:>7,} messages: estimate {b['estimate'] / n * 1e9:.0f} ns/message, floor "
          f"{b['floor'] / n * 1e9:.0f} ns/message ({b['estimate'] / b['floor']:.2f}x)")
