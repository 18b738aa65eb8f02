"""count(): contextfold vs Python tiktoken with the cookbook function, same inputs, one run.

    pytest benches/bench_exact_count.py --benchmark-enable

Group by workload; the ratio of the two means is the speedup. The `threads` group counts 40
real trajectories with one thread and with two: the ratio of its two means is the scaling.
Python tiktoken needs its cache (TIKTOKEN_CACHE_DIR, default ../shared/data/tiktoken-cache);
without it the tiktoken rows skip visibly.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import contextfold as cf

ROOT = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("TIKTOKEN_CACHE_DIR", ROOT.parent / "shared" / "data" / "tiktoken-cache"))
MODEL = "gpt-4o"


def _tiktoken_cookbook():
    """The cookbook's num_tokens_from_messages with Python tiktoken (text parts only; an image
    part is not tokenized by either side)."""
    if not CACHE.is_dir():
        pytest.skip(f"tiktoken cache not found at {CACHE}")
    os.environ["TIKTOKEN_CACHE_DIR"] = str(CACHE)
    tiktoken = pytest.importorskip("tiktoken")
    enc = tiktoken.get_encoding("o200k_base")

    def count(messages):
        n = 3
        for m in messages:
            n += 3
            for k, v in m.items():
                if isinstance(v, str):
                    n += len(enc.encode_ordinary(v))
                elif k == "content" and isinstance(v, list):
                    n += sum(len(enc.encode_ordinary(p["text"])) for p in v if p.get("type") == "text")
                elif k == "tool_calls":
                    for c in v:
                        f = c["function"]
                        n += len(enc.encode_ordinary(f["name"])) + len(enc.encode_ordinary(f["arguments"]))
                if k == "name":
                    n += 1
        return n

    return count


def _impl(name):
    if name == "contextfold":
        return lambda ms: cf.count(ms, model=MODEL)
    return _tiktoken_cookbook()


@pytest.mark.parametrize("impl", ["contextfold", "tiktoken-cookbook"])
@pytest.mark.parametrize("workload", ["history_10k", "swe_histories"])
def bench_count(benchmark, request, impl, workload):
    data = request.getfixturevalue(workload)
    fn = _impl(impl)
    fn(data[:2] if workload == "history_10k" else data[0])  # build the encoder outside the timing
    benchmark.group = f"count/{workload}"
    if workload == "swe_histories":
        result = benchmark(lambda: [fn(h) for h in data])
        assert all(r > 0 for r in result)
    else:
        assert benchmark(fn, data) > 0


@pytest.mark.parametrize("threads", [1, 2])
def bench_count_threads(benchmark, swe_histories, threads):
    histories = swe_histories * 2
    cf.count(histories[0], model=MODEL)
    benchmark.group = "count/threads"
    pool = ThreadPoolExecutor(threads)

    def run():
        return list(pool.map(lambda h: cf.count(h, model=MODEL), histories))

    try:
        assert len(benchmark(run)) == len(histories)
    finally:
        pool.shutdown()


@pytest.mark.parametrize("case", ["full count", "exact session: 2 appended"])
def bench_count_per_turn(benchmark, history_10k, case):
    """A turn of an exact session (2 messages appended to the 10k history) against a full count:
    the ratio of the two means is what a turn costs (goal <= 1%)."""
    benchmark.group = "count/per turn"
    if case == "full count":
        cf.count(history_10k[:2], model=MODEL)
        assert benchmark(lambda: cf.count(history_10k, model=MODEL)) > 0
        return
    base = history_10k[:-2]
    turn = [{"role": "user", "content": "and now?"}, {"role": "assistant", "content": "Done: the tests pass."}]

    def setup():
        s = cf.Session(model=MODEL, exact=True)
        s.estimate(base)
        return (s, base + turn), {}

    result = benchmark.pedantic(lambda s, h: s.estimate(h), setup=setup, rounds=15)
    assert result == cf.count(base + turn, model=MODEL)
