"""estimate(): contextfold vs the pure-Python reference estimator, same inputs, one run.

Group by workload; the ratio of the two means is the speedup reported in the README.
"""

from __future__ import annotations

import pytest

import contextfold as cf
from reference_estimate import reference_estimate

IMPLEMENTATIONS = {
    "contextfold": lambda ms: cf.estimate(ms),
    "reference": reference_estimate,
}


@pytest.mark.parametrize("impl", list(IMPLEMENTATIONS))
@pytest.mark.parametrize("workload", ["history_1k", "history_10k", "swe_histories"])
def bench_estimate(benchmark, request, impl, workload):
    data = request.getfixturevalue(workload)
    fn = IMPLEMENTATIONS[impl]
    benchmark.group = f"estimate/{workload}"
    if workload == "swe_histories":
        result = benchmark(lambda: [fn(h) for h in data])
        assert all(r > 0 for r in result)
    else:
        assert benchmark(fn, data) > 0


def bench_estimate_each_10k(benchmark, history_10k):
    benchmark.group = "estimate_each/history_10k"
    assert len(benchmark(cf.estimate_each, history_10k)) == len(history_10k)
