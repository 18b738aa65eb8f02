"""The library's functions, results and Session cross process boundaries (multiprocessing,
Ray): pickled, they work the same in a worker process."""

from __future__ import annotations

import functools
import pickle
from concurrent.futures import ProcessPoolExecutor

import contextfold as cf
from transcripts import LOCAL, load_conversations

FUNCTIONS = [cf.estimate, cf.estimate_each, cf.count, cf.breakdown, cf.prune, cf.find_tail_start, cf.shrink_json, cf.request_overhead, cf.wire_bytes]


def test_functions_pickle_by_reference():
    for f in FUNCTIONS:
        assert pickle.loads(pickle.dumps(f)) is f


def _estimate_in_worker(history):
    return cf.estimate(history, provider="gemini")


def test_functions_run_in_a_process_pool_with_the_same_results():
    histories = [c["messages"] for c in load_conversations(LOCAL, "mini-swe-agent-gemini3")]
    with ProcessPoolExecutor(max_workers=2) as pool:
        assert list(pool.map(_estimate_in_worker, histories)) == [cf.estimate(h, provider="gemini") for h in histories]
        bound = functools.partial(cf.estimate_each, provider="gemini")
        assert list(pool.map(bound, histories[:2])) == [cf.estimate_each(h, provider="gemini") for h in histories[:2]]


def test_session_keeps_configuration_and_calibration_across_pickling():
    conv = load_conversations(LOCAL, "mini-swe-agent-gemini3")[0]
    msgs = conv["messages"]
    calls = [r for r in conv["requests"] if r.get("usage_prompt_tokens")]
    s = cf.Session(provider="gemini", model="gemini-2.5-pro", context_window=200_000, trigger_ratio=0.8, max_request_bytes=1 << 20)
    for r in calls[:3]:
        s.estimate(msgs[: r["n_messages"]])
        s.record_usage({"prompt_tokens": r["usage_prompt_tokens"]}, msgs[: r["n_messages"]])
    copy = pickle.loads(pickle.dumps(s))
    assert (copy.provider, copy.model, copy.context_window, copy.trigger_ratio, copy.max_request_bytes) == (
        "gemini", "gemini-2.5-pro", 200_000, 0.8, 1 << 20)
    assert copy.correction == s.correction != 1.0
    assert copy.last_usage == s.last_usage
    assert copy.trigger_tokens == s.trigger_tokens
    # The copy continues the session as `from_state` does: the same estimate of the grown history
    # (the anchor is re-bound by content), without sharing any object with the original.
    later = msgs[: calls[3]["n_messages"]]
    assert copy.estimate(later) == s.estimate(later)


def test_breakdown_result_pickles():
    b = cf.breakdown([{"role": "user", "content": "hello"}])
    assert pickle.loads(pickle.dumps(b)) == b


def _compact_in_worker(args):
    compactor, history = args
    return compactor.compact(history).messages


def test_compactor_runs_in_a_process_pool_with_the_same_results():
    histories = [c["messages"] for c in load_conversations(LOCAL, "mini-swe-agent-gemini3")][:4]
    compactor = cf.Compactor(model="gpt-4o", budget=6_000, exclude_tools=["memory"], instructions="keep file paths")
    with ProcessPoolExecutor(max_workers=2) as pool:
        got = list(pool.map(_compact_in_worker, [(compactor, h) for h in histories]))
    assert got == [compactor.compact(h).messages for h in histories]
    assert any(len(g) < len(h) for g, h in zip(got, histories))
