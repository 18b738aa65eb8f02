"""A/B of two builds of the extension in one process, on the same objects: paired runs of
``estimate`` over the synthetic 10,000-message history, alternating which build goes first.

    python benches/ab_two_builds.py BEFORE.so AFTER.so [--values-may-differ]

Each ``.so`` is a ``cargo build --release --features python --lib`` of one commit
(``target/release/libcontextfold.so``), loaded under its own module name so both live in this
process. Prints the fastest and first-quartile times of each and the median after/before
ratio of the pairs (the statistic that survives a shared, noisy machine). Both builds must
price the history the same, unless ``--values-may-differ`` (builds across an accuracy change:
the speed is still compared on the same objects).
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import statistics
import sys
import time
from pathlib import Path
from types import ModuleType

sys.path.insert(0, str(Path(__file__).parent))
from synthetic import synthetic_history  # noqa: E402


def load(name: str, path: str) -> ModuleType:
    loader = importlib.machinery.ExtensionFileLoader(f"{name}._core", path)
    spec = importlib.util.spec_from_file_location(f"{name}._core", path, loader=loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def main(before_path: str, after_path: str, pairs: int = 400, values_may_differ: bool = False) -> None:
    before, after = load("cf_before", before_path), load("cf_after", after_path)
    history = synthetic_history(10_000)
    b, a = before.estimate(history), after.estimate(history)
    if b != a:
        if not values_may_differ:
            sys.exit(f"the builds price the history differently ({b} vs {a}): pass --values-may-differ")
        print(f"values differ: before {b}, after {a} tokens")
    tb: list[float] = []
    ta: list[float] = []
    for i in range(pairs):
        order = ((tb, before), (ta, after)) if i % 2 else ((ta, after), (tb, before))
        for times, mod in order:
            t = time.perf_counter()
            mod.estimate(history)
            times.append(time.perf_counter() - t)
    ratio = statistics.median(a / b for a, b in zip(ta, tb))
    q = lambda ts: statistics.quantiles(ts, n=4)[0] * 1e3  # noqa: E731
    print(f"{pairs} pairs, estimate of 10,000 dict messages: before min {min(tb) * 1e3:.2f} ms, p25 {q(tb):.2f} ms; "
          f"after min {min(ta) * 1e3:.2f} ms, p25 {q(ta):.2f} ms; median after/before {ratio:.3f}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], values_may_differ="--values-may-differ" in sys.argv[3:])
