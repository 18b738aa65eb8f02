"""shrink_json on big tool outputs: time per megabyte, flat from 1 MB to 100 MB (linear time).

`pytest benches/bench_shrink_json.py --benchmark-enable -s` prints ns per input byte for each
size; in the default run only the 2 MB case runs once as a smoke test.
"""

from __future__ import annotations

import json
import time

import pytest

import contextfold as cf


@pytest.mark.parametrize("values", [1_000_000, 10_000_000, 50_000_000])
def bench_shrink_json_small_values(benchmark, values):
    if benchmark.disabled and values > 1_000_000:
        pytest.skip("tens of megabytes: timed runs only")
    text = "[" + "0," * values + "0]"
    benchmark.group = "shrink_json/array_of_small_values"
    out = benchmark.pedantic(cf.shrink_json, args=(text,), kwargs={"max_chars": 2_000}, rounds=3, iterations=1)
    assert len(out) <= 2_000 and json.loads(out)[0] == 0
    if benchmark.disabled:
        return
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        cf.shrink_json(text, max_chars=2_000)
        best = min(best, time.perf_counter() - t)
    print(f"\n{len(text) / 1e6:.0f} MB: {best / len(text) * 1e9:.2f} ns per input byte")
