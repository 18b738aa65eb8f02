"""prune + tail walk: contextfold vs the pure-Python reference, same inputs, one run."""

from __future__ import annotations

import pytest

import contextfold as cf
from reference_prune import reference_prune

BUDGET = 40_000

IMPLEMENTATIONS = {
    "contextfold": lambda ms: cf.prune(ms, protect_tail_tokens=BUDGET),
    "reference": lambda ms: reference_prune(ms, BUDGET),
}


@pytest.mark.parametrize("impl", list(IMPLEMENTATIONS))
@pytest.mark.parametrize("workload", ["history_1k", "history_10k"])
def bench_prune(benchmark, request, impl, workload):
    data = request.getfixturevalue(workload)
    benchmark.group = f"prune/{workload}"
    out = benchmark(IMPLEMENTATIONS[impl], data)
    assert len(out) == len(data)


@pytest.mark.parametrize("impl", ["contextfold", "reference"])
def bench_tail_walk_10k(benchmark, history_10k, impl):
    from reference_prune import reference_tail_start

    fn = (lambda ms: cf.find_tail_start(ms, budget_tokens=BUDGET)) if impl == "contextfold" else (lambda ms: reference_tail_start(ms, BUDGET))
    benchmark.group = "tail_walk/history_10k"
    assert benchmark(fn, history_10k) > 0
