"""A/B of two builds of the extension in one process, on the same objects: paired runs of
``estimate`` (or, with ``--prune``, of ``prune`` with a 30,000-token tail: planned and applied
copy-on-write; with ``--count``, of the exact ``count`` for gpt-4o) over the synthetic
10,000-message history, alternating which build goes first. ``prune`` is called through the
options objects (``PricedRequest``, ``PruneOptions``) when the build has them, else with its
keyword arguments, so builds from either side of that change compare.

    python benches/ab_two_builds.py BEFORE.so AFTER.so [--values-may-differ] [--prune | --count]

Each ``.so`` is a ``cargo build --release --features python --lib`` of one commit
(``target/release/libcontextfold.so``), loaded under its own module name so both live in this
process. Prints the fastest and first-quartile times of each and the median after/before
ratio of the pairs (the statistic that survives a shared, noisy machine). Both builds must
price the history the same, unless ``--values-may-differ`` (builds across an accuracy change:
the speed is still compared on the same objects).
"""

from __future__ import annotations

import copy
import gc
import importlib.machinery
import importlib.util
import statistics
import sys
import time
from pathlib import Path
from collections.abc import Callable
from types import ModuleType
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from synthetic import synthetic_history  # noqa: E402


def load(name: str, path: str) -> ModuleType:
    loader = importlib.machinery.ExtensionFileLoader(f"{name}._core", path)
    spec = importlib.util.spec_from_file_location(f"{name}._core", path, loader=loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


PRUNE = dict(protect_tail_tokens=30_000, provider="openai", model=None, protect_first_n=1, min_tail=3,
             soft_ceiling=1.5, tool_result_max_tokens=200, arguments_max_chars=2000, prune_images=True,
             dedupe=True, cache_block_tokens=0)


def pruner(mod: ModuleType) -> Callable[[list[Any]], object]:
    """``mod``'s prune of a history with ``PRUNE``, its options built once, as a user would."""
    if not hasattr(mod, "PruneOptions"):
        return lambda h: mod.prune(h, copy=copy.copy, **PRUNE)
    knobs = {k: v for k, v in PRUNE.items() if k not in ("provider", "model")}
    request, options = mod.PricedRequest(provider=PRUNE["provider"], model=PRUNE["model"]), mod.PruneOptions(**knobs)
    return lambda h: mod.prune(h, request, options, copy=copy.copy)


def main(before_path: str, after_path: str, pairs: int = 400, values_may_differ: bool = False,
         prune: bool = False, count: bool = False) -> None:
    before, after = load("cf_before", before_path), load("cf_after", after_path)
    history = synthetic_history(10_000)
    name = "prune" if prune else "count" if count else "estimate"
    prunes = {id(before): pruner(before), id(after): pruner(after)}

    def call(mod: ModuleType) -> object:
        # The collector is off while timing: the plan's thousands of new objects would otherwise
        # trigger collections that land on either build at random.
        gc.disable()
        try:
            if count:
                return mod.count(history, model="gpt-4o")
            return prunes[id(mod)](history) if prune else mod.estimate(history)
        finally:
            gc.enable()

    b, a = call(before), call(after)
    if b != a:
        if not values_may_differ:
            sys.exit(f"the builds' {name} differ: pass --values-may-differ")
        print(f"values differ: before {b if not prune else '...'}, after {a if not prune else '...'}")
    tb: list[float] = []
    ta: list[float] = []
    for i in range(pairs):
        order = ((tb, before), (ta, after)) if i % 2 else ((ta, after), (tb, before))
        for times, mod in order:
            gc.collect()
            t = time.perf_counter()
            call(mod)
            times.append(time.perf_counter() - t)
    ratio = statistics.median(a / b for a, b in zip(ta, tb))
    q = lambda ts: statistics.quantiles(ts, n=4)[0] * 1e3  # noqa: E731
    print(f"{pairs} pairs, {name} of 10,000 dict messages: before min {min(tb) * 1e3:.2f} ms, p25 {q(tb):.2f} ms; "
          f"after min {min(ta) * 1e3:.2f} ms, p25 {q(ta):.2f} ms; median after/before {ratio:.3f}")


if __name__ == "__main__":
    flags = sys.argv[3:]
    main(sys.argv[1], sys.argv[2], pairs=30 if "--count" in flags else 100 if "--prune" in flags else 400,
         values_may_differ="--values-may-differ" in flags, prune="--prune" in flags, count="--count" in flags)
