"""Side by side in one run: contextfold, the project's pure-Python references, LangChain,
LiteLLM and tiktoken with the cookbook function, on the same histories.

Groups are `<operation>/<workload>`; `contextfold bench` prints each group's medians and their
ratio to contextfold's. Workloads: synthetic agent histories of 1k / 10k / 100k messages
(`synthetic.py`), the longest real SWE trajectories, the tau-bench dialogues, and per-turn growth
(append 2 messages to a history and price it again). In the default test run (benchmarks
disabled) only the small workloads run, once each, as smoke tests; `CONTEXTFOLD_BENCH_QUICK=1`
keeps the small workloads with timing on.
"""

from __future__ import annotations

import os

import pytest

import contextfold as cf
import peers
from reference_estimate import reference_estimate
from reference_prune import reference_prune, reference_tail_start
from synthetic import synthetic_history
from transcripts import LOCAL, SHARED, load_conversations, shared_available

QUICK = os.environ.get("CONTEXTFOLD_BENCH_QUICK") == "1"
SMALL = ["synthetic_1k", "tau", "swe"]
LARGE = ["synthetic_10k", "synthetic_100k"]


def _enabled(config: pytest.Config) -> bool:
    return not config.getoption("benchmark_disable", default=True)


def _workload_allowed(config: pytest.Config, name: str) -> None:
    if name in LARGE and (QUICK or not _enabled(config)):
        pytest.skip(f"{name}: only with timing on (pytest benches --benchmark-enable, not --quick)")


_CACHE: dict[str, list[list[dict]]] = {}


def _histories(name: str) -> list[list[dict]]:
    """The workload's histories (OpenAI chat dicts)."""
    if name not in _CACHE:
        if name.startswith("synthetic_"):
            n = {"synthetic_1k": 1_000, "synthetic_10k": 10_000, "synthetic_100k": 100_000}[name]
            _CACHE[name] = [synthetic_history(n)]
        elif name == "swe":
            root = SHARED if shared_available() else LOCAL
            convs = sorted(load_conversations(root, "mini-swe-agent-gemini3"), key=lambda c: -len(c["messages"]))
            _CACHE[name] = [c["messages"] for c in convs[: 5 if QUICK else 20]]
        elif name == "tau":
            root = SHARED if (SHARED / "tau-bench-airline" / "conversations.jsonl").exists() else LOCAL
            _CACHE[name] = [c["messages"] for c in load_conversations(root, "tau-bench-airline")]
    return _CACHE[name]


_PREPARED: dict[str, list[dict]] = {}


def _prepared(name: str) -> list[dict]:
    if name not in _PREPARED:
        _PREPARED[name] = [peers.prepare(h) for h in _histories(name)]
    return _PREPARED[name]


def _peer_or_skip(table: dict, impl: str, lib: str) -> None:
    if impl not in table:
        pytest.skip(f"{impl}: peer not available: {peers.MISSING.get(lib, 'not installed')}")


def _run(benchmark, fn, data, *, slow: bool):
    """Time ``fn`` over every history of ``data``; slow peers on big inputs run a few rounds."""
    call = lambda: [fn(x) for x in data]  # noqa: E731
    if slow:
        return benchmark.pedantic(call, rounds=3, iterations=1, warmup_rounds=0)
    return benchmark(call)


COUNT_IMPLS = [
    "contextfold estimate",
    "contextfold count (exact)",
    "reference estimate (chars/4)",
    "langchain count_tokens_approximately",
    "litellm token_counter",
    "tiktoken cookbook",
]


@pytest.mark.parametrize("impl", COUNT_IMPLS)
@pytest.mark.parametrize("workload", SMALL + LARGE)
def bench_count(benchmark, request, impl, workload):
    _workload_allowed(request.config, workload)
    benchmark.group = f"count/{workload}"
    data = _prepared(workload)
    ours = {
        "contextfold estimate": lambda p: cf.estimate(p["openai"]),
        "contextfold count (exact)": lambda p: cf.count(p["openai"], model=peers.MODEL),
        "reference estimate (chars/4)": lambda p: reference_estimate(p["openai"]),
    }
    table = {**ours, **peers.counters()}
    lib = impl.split()[0]
    _peer_or_skip(table, impl, lib)
    slow = impl not in ours and workload in LARGE
    result = _run(benchmark, table[impl], data, slow=slow)
    assert all(r > 0 for r in result)


TRIM_IMPLS = [
    "contextfold prune + tail walk",
    "reference prune (chars/4 walk)",
    "langchain trim_messages",
    "litellm trim_messages",
]


@pytest.mark.parametrize("impl", TRIM_IMPLS)
@pytest.mark.parametrize("workload", SMALL + LARGE)
def bench_trim(benchmark, request, impl, workload):
    """Keep the last quarter of each history's tokens."""
    _workload_allowed(request.config, workload)
    benchmark.group = f"trim/{workload}"
    data = _prepared(workload)
    budgets = [max(1, cf.estimate(p["openai"]) // 4) for p in data]

    def ours(kind):
        def run(args):
            p, budget = args
            if kind == "cf":
                start = cf.find_tail_start(p["openai"], budget_tokens=budget)
                return cf.prune(p["openai"], protect_tail_tokens=budget)[start:] or [None]
            start = reference_tail_start(p["openai"], budget)
            return reference_prune(p["openai"], budget)[start:] or [None]
        return run

    table: dict = {"contextfold prune + tail walk": ours("cf"), "reference prune (chars/4 walk)": ours("ref")}
    for name in peers.trimmers(0):
        table[name] = (lambda n: lambda args: peers.trimmers(args[1])[n](args[0]) or [None])(name)
    _peer_or_skip(table, impl, impl.split()[0])
    if impl == "litellm trim_messages" and workload != "tau":
        if not _enabled(request.config) or QUICK:
            pytest.skip("litellm trim_messages: tau only in smoke and --quick runs (it re-counts the history per dropped message)")
        if workload in LARGE:
            pytest.skip(f"litellm trim_messages on {workload}: not run (quadratic: 11.7 s for one 1k history here)")
    slow = impl.split()[0] in ("langchain", "litellm") and workload in LARGE
    result = _run(benchmark, table[impl], list(zip(data, budgets)), slow=slow)
    assert all(len(r) > 0 for r in result)


GROWTH_IMPLS = [
    "contextfold Session.estimate",
    "contextfold estimate",
    "reference estimate (chars/4)",
    "langchain count_tokens_approximately",
    "litellm token_counter",
    "tiktoken cookbook",
]


@pytest.mark.parametrize("impl", GROWTH_IMPLS)
@pytest.mark.parametrize("workload", ["synthetic_1k", "synthetic_10k"])
def bench_growth(benchmark, request, impl, workload):
    """One agent turn: append an assistant tool call and its result, price the whole request."""
    _workload_allowed(request.config, workload)
    benchmark.group = f"per-turn growth/{workload}"
    base = _histories(workload)[0]
    turn = [
        {"role": "assistant", "content": None, "tool_calls": [{"id": "call_next", "type": "function",
            "function": {"name": "read_file", "arguments": '{"path": "src/app.py"}'}}]},
        {"role": "tool", "tool_call_id": "call_next", "content": "def main():\n    return run()\n" * 20},
    ]
    history = base + turn
    if impl == "contextfold Session.estimate":
        session = cf.Session(model=peers.MODEL)
        session.estimate(base)
        fn = lambda: session.estimate(base + turn)  # noqa: E731
    elif impl == "contextfold estimate":
        fn = lambda: cf.estimate(history)  # noqa: E731
    elif impl == "reference estimate (chars/4)":
        fn = lambda: reference_estimate(history)  # noqa: E731
    else:
        table = peers.counters()
        _peer_or_skip(table, impl, impl.split()[0])
        prepared = {"openai": history, "langchain": peers.to_langchain(history) if peers.LANGCHAIN else None}
        if impl.startswith("langchain"):
            # An agent holding LangChain messages appends two more objects: only they are new.
            base_lc = peers.to_langchain(base)
            turn_lc = peers.to_langchain(turn)
            fn = lambda: peers.LANGCHAIN[1](base_lc + turn_lc)  # noqa: E731
        else:
            fn = lambda: table[impl](prepared)  # noqa: E731
    slow = impl.split()[0] in ("litellm", "tiktoken") and workload in LARGE
    if slow:
        assert benchmark.pedantic(fn, rounds=3, iterations=1) > 0
    else:
        assert benchmark(fn) > 0
