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


# LangChain messages, read by meaning, beside the route they took before (converted to OpenAI
# dicts with langchain-core's own converter) and the dicts themselves.
LANGCHAIN = {
    "contextfold(langchain messages)": lambda lc, dicts: cf.estimate(lc),
    "contextfold(convert_to_openai_messages(...))": lambda lc, dicts: cf.estimate(convert_to_openai(lc)),
    "contextfold(openai dicts)": lambda lc, dicts: cf.estimate(dicts),
}


def convert_to_openai(lc):  # type: ignore[no-untyped-def]
    from langchain_core.messages import convert_to_openai_messages

    return convert_to_openai_messages(lc)


@pytest.mark.parametrize("impl", list(LANGCHAIN))
def bench_estimate_langchain_10k(benchmark, history_10k, impl):
    messages = pytest.importorskip("langchain_core.messages")
    lc = messages.convert_to_messages(history_10k)
    dicts = convert_to_openai(lc)
    benchmark.group = "estimate/langchain_10k"
    fn = LANGCHAIN[impl]
    assert benchmark(fn, lc, dicts) == cf.estimate(dicts)
