"""Session benchmarks, implementation x workload, side by side in one run.

- ``session/append2-10k``: a 10k-message history that just grew by 2 messages. ``session`` is
  ``Session.estimate`` (prices the 2 new ones, compares the identities of the rest);
  ``contextfold`` and ``reference`` estimate the whole history from scratch.
- ``estimate_many/20x1000``: 20 histories of 1,000 messages, priced with 1 or 2 threads.
- ``count_many/swe-20``: exact counts of the 20 longest SWE trajectories, 1 or 2 threads.

The ``bench_*_ratios`` functions report the ratios the issue asks for (min of many rounds):
incremental vs a from-scratch ``contextfold.estimate`` (target <= 1%) and vs the pure-Python
reference (target >= 1000x); estimate_many on 2 threads vs 1. Wall-clock ratios on a shared
machine are measurements, not behaviour: they are printed, never asserted, and in the default
run (``--benchmark-disable``) each path runs once as a smoke test. Time everything with
``pytest benches/bench_session.py --benchmark-enable -s``.
"""

from __future__ import annotations

import threading
import time

import contextfold as cf
import pytest
from reference_estimate import reference_estimate
from synthetic import synthetic_history

TAIL = [
    {"role": "assistant", "content": "Running the failing test again with -x to see the trace."},
    {"role": "user", "content": "FAILED tests/test_io.py::test_roundtrip - AssertionError: 3 != 4\n" * 3},
]


@pytest.fixture(scope="module")
def grown_10k() -> tuple[list[dict], list[dict]]:
    """(base: 10,000 messages, grown: the same objects + 2 new messages)."""
    base = synthetic_history(10_000)
    return base, base + TAIL


@pytest.fixture(scope="module")
def many_20x1k() -> list[list[dict]]:
    return [synthetic_history(1_000, seed=i, images=0) for i in range(20)]


def _primed(base: list[dict]) -> cf.Session:
    s = cf.Session()
    s.estimate(base)
    return s


@pytest.mark.parametrize("impl", ["session", "contextfold", "reference"])
def bench_append2_10k(benchmark, grown_10k, impl):
    base, grown = grown_10k
    benchmark.group = "session/append2-10k"
    if impl == "session":
        s = _primed(base)
        # setup re-syncs the session to the 10k base (forgetting the 2 new messages), so every
        # timed call really prices 2 appended messages.
        def resync() -> None:
            s.estimate(base)

        result = benchmark.pedantic(s.estimate, args=(grown,), setup=resync, rounds=300, iterations=1)
        assert result == cf.estimate(grown)
    elif impl == "contextfold":
        assert benchmark(cf.estimate, grown) > 0
    else:
        assert benchmark(reference_estimate, grown) > 0


def _two_python_threads(histories: list[list[dict]]) -> list[int]:
    half = len(histories) // 2
    out: list[list[int]] = [[], []]

    def run(i: int, hs: list[list[dict]]) -> None:
        out[i] = cf.estimate_many(hs, threads=1)

    ts = [threading.Thread(target=run, args=(0, histories[:half])), threading.Thread(target=run, args=(1, histories[half:]))]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return out[0] + out[1]


MANY = {
    "1-thread": lambda hs: cf.estimate_many(hs, threads=1),
    "2-threads": lambda hs: cf.estimate_many(hs, threads=2),
    "2-python-threads": _two_python_threads,
    "loop-of-estimate": lambda hs: [cf.estimate(h) for h in hs],
}


@pytest.mark.parametrize("impl", list(MANY))
def bench_estimate_many_20x1k(benchmark, many_20x1k, impl):
    benchmark.group = "estimate_many/20x1000"
    assert benchmark(MANY[impl], many_20x1k) == [cf.estimate(h) for h in many_20x1k]


@pytest.mark.parametrize("threads", [1, 2])
def bench_count_many_swe(benchmark, swe_histories, threads):
    benchmark.group = "count_many/swe-20"
    assert len(benchmark(cf.count_many, swe_histories, model="gpt-4o", threads=threads)) == len(swe_histories)


# -- the ratios the issue asks for, reported --------------------------------------------------


def _best(fn, rounds: int, setup=None) -> float:
    best = float("inf")
    for _ in range(rounds):
        if setup:
            setup()
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def bench_incremental_estimate_ratios(benchmark, grown_10k):
    base, grown = grown_10k
    s = _primed(base)
    benchmark.group = "ratios/append2-10k"

    def resync() -> None:
        s.estimate(base)

    result = benchmark.pedantic(s.estimate, args=(grown,), setup=resync, rounds=300, iterations=1)
    assert result == cf.estimate(grown)
    if benchmark.disabled:  # the default run: one pass as a smoke test, nothing timed
        return
    inc = _best(lambda: s.estimate(grown), 300, setup=lambda: s.estimate(base))
    scratch = _best(lambda: cf.estimate(grown), 15)
    ref = _best(lambda: reference_estimate(grown), 3)
    print(f"\nappend 2 to 10k: session {inc * 1e6:.1f} us, contextfold.estimate {scratch * 1e3:.2f} ms "
          f"({inc / scratch:.3%}, target <= 1%), reference {ref * 1e3:.1f} ms ({ref / inc:,.0f}x, target >= 1000x)")


def bench_estimate_many_thread_ratios(benchmark, many_20x1k):
    """Reading the Python dicts needs the GIL and is most of estimate_many's time with the
    heuristic, so 2 threads measured ~1.0x (2 Python threads ~1.2-1.3x); thread scaling pays off
    where pricing dominates (count_many with BPE: 1.6-1.75x on 2 threads)."""
    benchmark.group = "ratios/estimate_many"
    assert benchmark(cf.estimate_many, many_20x1k, threads=2) == _two_python_threads(many_20x1k)
    if benchmark.disabled:  # the default run: one pass as a smoke test, nothing timed
        return
    one = _best(lambda: cf.estimate_many(many_20x1k, threads=1), 7)
    two = _best(lambda: cf.estimate_many(many_20x1k, threads=2), 7)
    two_py = _best(lambda: _two_python_threads(many_20x1k), 7)
    print(f"\nestimate_many 20x1000: 1 thread {one * 1e3:.2f} ms, 2 threads {two * 1e3:.2f} ms "
          f"({one / two:.2f}x), 2 Python threads {two_py * 1e3:.2f} ms ({one / two_py:.2f}x)")
