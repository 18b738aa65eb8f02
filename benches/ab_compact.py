"""A/B of two builds' ``Compactor.compact`` in one process, on the same objects: paired runs of
the peers benchmark's workload (``bench_compact_peers.py``: budget a third of the history's
estimate, tail half of it, default hybrid strategy and extractive summary), alternating which
build goes first.

    python benches/ab_compact.py BEFORE.so AFTER.so [PAIRS] [--swe] [--cap N]

Each ``.so`` is a ``cargo build --release --features python --lib`` (or ``--profile
profiling``) of one commit, loaded under its own module name (``ab_two_builds.load``); the
Python package is this tree's, pointed at one build or the other by rebinding every name its
modules took from ``contextfold._core`` (functions, classes, the module itself), and each
build gets its own ``Compactor`` (its options and priced request are that build's objects).
``--swe``: the 20 longest real SWE trajectories (those both sides can compact) instead of the
synthetic 10,000-message history; ``--cap N``: ``summary_max_tokens=N``. Prints each build's
fastest time, the median after/before ratio of the pairs (the statistic that survives a
shared, noisy machine), and whether the results are identical (``dump_compactions.fingerprint``).
"""

from __future__ import annotations

import gc
import statistics
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests" / "support"))

import contextfold as cf  # noqa: E402
from contextfold import _core  # noqa: E402
from ab_two_builds import load  # noqa: E402
from dump_compactions import fingerprint  # noqa: E402
from synthetic import synthetic_history  # noqa: E402

#: The name in its build of every callable and class of the builds loaded (the installed one and
#: both under test), by identity: a module's name for one is rebound to the other build's.
_NAMES: dict[int, str] = {}


def register(build: ModuleType) -> ModuleType:
    _NAMES.update({id(v): k for k, v in vars(build).items() if callable(v) or isinstance(v, type)})
    return build


register(_core)


def use(build: ModuleType) -> None:
    """Point every ``contextfold`` module's names from ``_core`` at ``build``."""
    for name, mod in list(sys.modules.items()):
        if not name.startswith("contextfold") or mod is None or name == "contextfold._core":
            continue
        for attr, value in list(vars(mod).items()):
            if isinstance(value, ModuleType) and value.__name__.endswith("._core"):
                setattr(mod, attr, build)
            elif id(value) in _NAMES and hasattr(build, _NAMES[id(value)]):
                setattr(mod, attr, getattr(build, _NAMES[id(value)]))


def histories(swe: bool) -> list[list[dict]]:
    if not swe:
        return [synthetic_history(10_000)]
    from transcripts import LOCAL, SHARED, load_conversations, shared_available

    root = SHARED if shared_available() else LOCAL
    convs = sorted(load_conversations(root, "mini-swe-agent-gemini3"), key=lambda c: -len(c["messages"]))
    return [c["messages"] for c in convs[:20]]


def compactors(hs: list[list[dict]], cap: int | None) -> list[tuple[Any, list[dict]]]:
    """A Compactor per history that compacts it (the peers benchmark's settings), with it."""
    runs = []
    # (Without a cap the option is not passed: the package before #21 has none.)
    capped = {} if cap is None else {"summary_max_tokens": cap}
    for h in hs:
        budget = cf.estimate(h) // 3
        c = cf.Compactor(budget=budget, tail_tokens=budget // 2, **capped)
        try:
            c.compact(h)
        except cf.CompactionBudgetError:
            continue
        runs.append((c, h))
    return runs


def main(before_path: str, after_path: str, pairs: int, swe: bool, cap: int | None) -> None:
    builds = {"before": register(load("cf_before", before_path)), "after": register(load("cf_after", after_path))}
    hs = histories(swe)
    runs, outs = {}, {}
    for name, mod in builds.items():
        use(mod)
        runs[name] = compactors(hs, cap)
        outs[name] = [fingerprint(c.compact(h)) for c, h in runs[name]]
    print(f"{len(runs['after'])} histories, {sum(len(h) for _, h in runs['after'])} messages; "
          f"identical results: {outs['before'] == outs['after']}")
    times: dict[str, list[float]] = {"before": [], "after": []}
    cpu: dict[str, list[float]] = {"before": [], "after": []}
    for i in range(pairs):
        for name in (("before", "after") if i % 2 else ("after", "before")):
            use(builds[name])
            gc.collect()
            gc.disable()
            t, c0 = time.perf_counter(), time.process_time()
            for c, h in runs[name]:
                c.compact(h)
            times[name].append(time.perf_counter() - t)
            cpu[name].append(time.process_time() - c0)
            gc.enable()
    tb, ta = times["before"], times["after"]
    ratio = statistics.median(a / b for a, b in zip(ta, tb))
    cpu_ratio = statistics.median(a / b for a, b in zip(cpu["after"], cpu["before"]))
    # CPU time (all threads of the process) is the second view: on a machine whose cores are
    # all busy, the wall time mostly measures the neighbours.
    print(f"before min {min(tb) * 1e3:.1f} ms, after min {min(ta) * 1e3:.1f} ms, "
          f"median after/before {ratio:.3f} (CPU time {cpu_ratio:.3f}; {pairs} pairs)")


if __name__ == "__main__":
    args = sys.argv[1:]
    cap = int(args[args.index("--cap") + 1]) if "--cap" in args else None
    rest = [a for i, a in enumerate(args) if not a.startswith("--") and (i == 0 or args[i - 1] != "--cap")]
    main(rest[0], rest[1], int(rest[2]) if len(rest) > 2 else 20, "--swe" in args, cap)
