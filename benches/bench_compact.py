"""compact() with the extractive summarizer vs the pure-Python reference pipeline, one run.

Workloads: the synthetic 10k-message history (benches/synthetic.py) and the 20 longest real SWE
trajectories (compacted one after another; those whose last messages alone exceed the budget are
left out, chosen before timing). Both sides get the same budget (a third of the
history's tokens), tail (half the budget) and summary size. ``session_gate`` prices the cost
per turn when nothing needs compacting: ``Compactor.should_compact`` on a 10k history that just
grew by 2 messages. Time with ``pytest benches/bench_compact.py --benchmark-enable`` (release
build: ``maturin develop --release``).
"""

from __future__ import annotations

import contextfold as cf
import pytest
from reference_compact import reference_compact
from reference_estimate import reference_estimate


def _contextfold(histories: list[list[dict]]) -> list:
    out = []
    for h in histories:
        budget = cf.estimate(h) // 3
        c = cf.Compactor(budget=budget, tail_tokens=budget // 2, summary_tokens=max(256, budget // 10))
        out.append(c.compact(h).messages)
    return out


def _reference(histories: list[list[dict]]) -> list:
    out = []
    for h in histories:
        budget = reference_estimate(h) // 3
        out.append(reference_compact(h, budget, budget // 2, max(256, budget // 10)))
    return out


IMPLEMENTATIONS = {"contextfold": _contextfold, "reference": _reference}


@pytest.fixture(scope="module")
def swe_feasible(swe_histories: list[list[dict]]) -> list[list[dict]]:
    ok = []
    for h in swe_histories:
        try:
            _contextfold([h])
        except cf.CompactionBudgetError:
            continue
        ok.append(h)
    return ok


@pytest.mark.parametrize("impl", list(IMPLEMENTATIONS))
@pytest.mark.parametrize("workload", ["history_10k", "swe_feasible"])
def bench_compact(benchmark, request, impl, workload):
    data = request.getfixturevalue(workload)
    histories = [data] if workload == "history_10k" else data
    benchmark.group = f"compact/{workload}"
    out = benchmark(IMPLEMENTATIONS[impl], histories)
    assert all(len(o) < len(h) for o, h in zip(out, histories))


def bench_session_gate(benchmark, history_10k):
    """Per turn when nothing needs compacting: O(messages appended), not O(history)."""
    c = cf.Compactor(context_window=100_000_000)
    base = list(history_10k)
    assert not c.should_compact(base)
    grown = base + [{"role": "assistant", "content": "next step"}, {"role": "user", "content": "ok"}]
    benchmark.group = "compact/gate-10k"
    assert benchmark(c.should_compact, grown) is False
