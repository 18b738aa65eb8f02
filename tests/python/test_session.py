"""contextfold.Session: incremental estimates, the prefix-change contract, usage calibration,
the gate, context limits, estimate_many, threads and memory; accuracy on the SWE trajectories."""

from __future__ import annotations

import base64
import gc
import logging
import statistics
import struct
import sys
import threading
import zlib
from types import SimpleNamespace

import contextfold as cf
import transcripts
import pytest
from contextfold.session import prompt_tokens_of
from transcripts import LOCAL, SHARED, load_conversations, shared_available


def history(n: int, *, seed: int = 0) -> list[dict]:
    out: list[dict] = [{"role": "system", "content": "You are a coding agent."}]
    for i in range(n - 1):
        k = i % 3
        if k == 0:
            out.append({"role": "user", "content": f"step {seed}-{i}: run the tests " * (1 + i % 7)})
        elif k == 1:
            out.append({
                "role": "assistant",
                "content": None,
                "tool_calls": [{
                    "id": f"call_{seed}_{i}",
                    "type": "function",
                    "function": {"name": "bash", "arguments": '{"cmd": "pytest -x tests/"}'},
                }],
            })
        else:
            out.append({"role": "tool", "tool_call_id": f"call_{seed}_{i - 1}", "content": "ok " * (10 + i)})
    return out


def fresh(ms, **kw) -> int:
    return cf.estimate(ms, **kw)


# -- incremental estimates --------------------------------------------------------------------


def test_estimate_without_usage_equals_from_scratch_estimate():
    tools = [{"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}]
    s = cf.Session(provider="anthropic", model="claude-sonnet-4-5", tools=tools, system="be brief")
    ms = history(40)
    assert s.estimate(ms) == fresh(ms, provider="anthropic", model="claude-sonnet-4-5", tools=tools, system="be brief")


def test_extending_history_reprices_only_new_messages_and_stays_exact():
    s = cf.Session()
    ms = history(10)
    assert s.estimate(ms) == fresh(ms)
    assert s._core.cached_messages == 10
    for i in range(20):
        ms.append({"role": "user", "content": f"more {i} " * i})
        assert s.estimate(ms) == fresh(ms)
    # A new list holding the same message objects reuses the cache.
    assert s.estimate(list(ms)) == fresh(ms)
    assert s.estimate(tuple(ms)) == fresh(ms)
    assert s.estimate(iter(ms)) == fresh(ms)
    assert s._core.cached_messages == 30


@pytest.mark.parametrize("edit", ["replace", "remove", "insert", "pop_insert_same_slot", "swap"])
def test_changed_earlier_message_is_detected(edit):
    ms = history(60)
    s = cf.Session()
    s.estimate(ms)
    if edit == "replace":
        ms[5] = {"role": "user", "content": "a completely different message " * 30}
    elif edit == "remove":
        del ms[7]
    elif edit == "insert":
        ms.insert(3, {"role": "user", "content": "inserted " * 50})
    elif edit == "pop_insert_same_slot":
        # The freed dict's memory may be reused by the new one (same id()): caught by the
        # fingerprint within the verified tail.
        ms.pop(56)
        ms.insert(56, {"role": "user", "content": "x" * 999})
    else:
        ms[10], ms[11] = ms[11], ms[10]
    assert s.estimate(ms) == fresh(ms)


def test_changed_prefix_drops_the_usage_anchor():
    ms = history(30)
    s = cf.Session()
    s.estimate(ms)
    s.record_usage({"prompt_tokens": 5000})
    assert s.estimate(ms) == 5000
    ms[2] = {"role": "user", "content": "edited"}
    # Calibrated heuristic: correction * heuristic (the anchor no longer applies).
    assert s.estimate(ms) == round(s.correction * fresh(ms))
    assert s._core.anchored_messages is None


def test_equal_copies_of_the_history_keep_the_usage_anchor():
    """A server that decodes each request's JSON passes copies, never the objects the session
    saw: matched by content, they keep their costs and the anchor (repriced from the first copy,
    47 of a SWE run's 49 estimates fell back on the calibrated heuristic), as a session restored
    from its state does. A copy whose content changed is still a change."""
    import json as _json

    ms = history(30)
    s = cf.Session()
    s.estimate(ms)
    s.record_usage({"prompt_tokens": 5000})
    copy = _json.loads(_json.dumps(ms))
    assert s.estimate(copy) == 5000 and s._core.anchored_messages == 30
    new = [{"role": "assistant", "content": "done " * 20}, {"role": "user", "content": "thanks"}]
    grown = [*_json.loads(_json.dumps(ms)), *new]
    assert s.estimate(grown) == 5000 + sum(cf.estimate_each(new))
    edited = _json.loads(_json.dumps(grown))
    edited[2]["content"] = "edited"
    assert s.estimate(edited) == round(s.correction * fresh(edited))
    assert s._core.anchored_messages is None


def test_in_place_edit_of_recent_message_is_detected_deep_one_needs_invalidate():
    ms = history(50)
    s = cf.Session()
    s.estimate(ms)
    ms[-1]["content"] += " and more output" * 40  # recent: inside the verified tail
    assert s.estimate(ms) == fresh(ms)
    ms[4]["content"] = "rewritten in place " * 80  # deep: same object, outside the tail
    assert s.estimate(ms) != fresh(ms)
    s.invalidate(4)
    assert s.estimate(ms) == fresh(ms)
    ms[2]["content"] = "again"
    s.reset()
    assert s.estimate(ms) == fresh(ms)


def test_shorter_history_and_errors_keep_the_ledger_consistent():
    ms = history(20)
    s = cf.Session()
    s.estimate(ms)
    assert s.estimate(ms[:5]) == fresh(ms[:5])
    bad = ms + [{"role": "user", "content": 42}]
    with pytest.raises(cf.InvalidMessageError) as e:
        s.estimate(bad)
    assert e.value.index == 20
    assert s.estimate(ms) == fresh(ms)
    with pytest.raises(TypeError):
        s.estimate("not a list")


# -- usage -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "usage, expected",
    [
        (1234, 1234),
        ({"prompt_tokens": 1234, "completion_tokens": 5}, 1234),
        (SimpleNamespace(prompt_tokens=1234, completion_tokens=5, total_tokens=1239), 1234),
        ({"id": "chatcmpl", "model": "gpt-4o", "usage": {"prompt_tokens": 1234}}, 1234),
        (SimpleNamespace(model="gpt-4o", usage=SimpleNamespace(prompt_tokens=1234)), 1234),
        ({"input_tokens": 1234, "input_tokens_details": {"cached_tokens": 1000}}, 1234),  # Responses
        ({"input_tokens": 34, "cache_creation_input_tokens": 200, "cache_read_input_tokens": 1000}, 1234),
        (SimpleNamespace(input_tokens=1234, cache_creation_input_tokens=None, cache_read_input_tokens=None), 1234),
        ({"usageMetadata": {"promptTokenCount": 1234, "cachedContentTokenCount": 1000}}, 1234),
        (SimpleNamespace(usage_metadata=SimpleNamespace(prompt_token_count=1234), model_version="gemini-2.5-pro"), 1234),
        ({"promptTokenCount": 1234}, 1234),
        ({"model": "llama3", "done": True, "prompt_eval_count": 1234, "eval_count": 9}, 1234),
        ({"model": "llama3", "done": True, "eval_count": 9}, None),  # served from KV cache: unknown
        (SimpleNamespace(model="llama3", done=True, prompt_eval_count=None, eval_count=9), None),
        ({"inputTokens": 34, "outputTokens": 9, "cacheReadInputTokens": 1200}, 1234),  # Bedrock
        (None, None),
        # A count the server left null (an OpenAI-compatible stream's chunk): unknown.
        ({"prompt_tokens": None, "completion_tokens": 5}, None),
        (SimpleNamespace(input_tokens=None, output_tokens=3), None),
        # A response whose whole usage is null (each stream chunk before the last, a Gemini
        # response without usage_metadata): unknown, never a TypeError mid-stream.
        ({"id": "chatcmpl", "model": "gpt-4o", "usage": None}, None),
        (SimpleNamespace(id="chatcmpl", object="chat.completion.chunk", model="gpt-4o", usage=None), None),
        (SimpleNamespace(candidates=[], usage_metadata=None, model_version="gemini-3-flash"), None),
    ],
)
def test_prompt_tokens_of_every_provider_shape(usage, expected):
    assert prompt_tokens_of(usage)[0] == expected


def test_unrecognized_usage_is_a_type_error():
    with pytest.raises(TypeError):
        prompt_tokens_of({"tokens": 3})
    with pytest.raises(TypeError):
        prompt_tokens_of(True)


def test_a_stream_chunk_without_usage_records_nothing():
    from openai.types.chat import ChatCompletionChunk

    chunk = ChatCompletionChunk.model_validate({
        "id": "c", "object": "chat.completion.chunk", "created": 0, "model": "gpt-4o",
        "choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": None}], "usage": None})
    s = cf.Session(model="gpt-4o")
    ms = history(5)
    s.estimate(ms)
    assert s.record_usage(chunk, ms) is None
    assert s.last_usage is None and s.correction == 1.0


def test_unknown_usage_records_nothing():
    s = cf.Session(provider="ollama")
    ms = history(5)
    s.estimate(ms)
    assert s.record_usage({"done": True, "eval_count": 3}) is None
    assert s.last_usage is None and s.correction == 1.0


def test_anchor_is_real_count_plus_estimate_of_appended_messages():
    ms = history(20)
    s = cf.Session()
    h0 = s.estimate(ms)
    real = round(1.5 * h0)  # within the ledger's plausible-ratio range (0.2-5x)
    assert s.record_usage({"usage": {"prompt_tokens": real}}) == real
    assert s.last_usage == real
    assert s.correction == pytest.approx(real / h0)
    assert s.estimate(ms) == real
    new = [{"role": "assistant", "content": "done " * 20}, {"role": "user", "content": "thanks"}]
    ms.extend(new)
    assert s.estimate(ms) == real + sum(cf.estimate_each(new))


def test_record_usage_with_explicit_messages():
    ms = history(20)
    s = cf.Session()
    s.estimate(ms + [{"role": "user", "content": "draft"}])
    s.record_usage(2500, ms)
    assert s._core.anchored_messages == 20
    assert s.estimate(ms) == 2500


def test_correction_is_smoothed_and_restarts_on_model_change():
    ms = history(10)
    s = cf.Session(model="gpt-4o")
    h = s.estimate(ms)
    s.record_usage({"model": "gpt-4o", "usage": {"prompt_tokens": 2 * h}})
    assert s.correction == pytest.approx(2.0)
    s.record_usage({"model": "gpt-4o", "usage": {"prompt_tokens": h}})
    assert s.correction == pytest.approx(1.5)
    s.record_usage({"model": "gpt-4.1", "usage": {"prompt_tokens": h}})
    assert s.correction == pytest.approx(1.0)
    # Switching the session's model drops costs, anchor and correction.
    s.record_usage({"prompt_tokens": 3 * h})
    s.model = "gpt-4.1"
    assert s.model == "gpt-4.1" and s.correction == 1.0 and s.last_usage is None
    assert s.estimate(ms) == fresh(ms, model="gpt-4.1")


def test_reset_forgets_everything():
    ms = history(10)
    s = cf.Session()
    s.estimate(ms)
    s.record_usage(999)
    s.reset()
    assert s.last_usage is None and s.correction == 1.0
    assert s.estimate(ms) == fresh(ms)


def test_record_usage_logs_chars_estimate_real_and_correction(caplog):
    ms = history(10)
    s = cf.Session()
    s.estimate(ms)
    with caplog.at_level(logging.DEBUG, logger="contextfold.session"):
        s.record_usage({"prompt_tokens": 1000})
    (rec,) = [r for r in caplog.records if r.name == "contextfold.session"]
    msg = rec.getMessage()
    for field in ("messages=10", "payload_chars=", "estimate=", "real=1000", "correction="):
        assert field in msg, msg


# -- the gate --------------------------------------------------------------------------------


def test_gate_defaults_reproduce_167232_for_a_200k_window():
    s = cf.Session(context_window=200_000)
    assert s.output_reserve == 32_768
    assert s.trigger_tokens == 167_232 == min(200_000 * 0.9, 200_000 - 32_768)
    assert s.usable_tokens == 167_232
    s2 = cf.Session(model="claude-sonnet-4-5-20250929")
    assert s2.context_window == 200_000 and s2.trigger_tokens == 167_232


def test_gate_is_configurable_and_pressure_is_a_fraction_of_usable():
    s = cf.Session(context_window=100_000, output_reserve=5_000, trigger_ratio=0.5)
    assert s.trigger_tokens == 50_000 and s.usable_tokens == 95_000
    ms = history(10)
    s.estimate(ms)
    s.record_usage(49_999)
    assert not s.should_compact(ms)
    assert s.pressure(ms) == pytest.approx(49_999 / 95_000)
    s.record_usage(50_000)
    assert s.should_compact(ms)
    small = cf.Session(context_window=8_192)
    assert small.output_reserve == 2_048 and small.trigger_tokens == 6_144


def test_gate_needs_a_window():
    s = cf.Session(model="my-local-finetune")
    assert s.context_window is None
    with pytest.raises(ValueError, match="context_window"):
        s.should_compact(history(3))
    with pytest.raises(ValueError):
        cf.Session(context_window=1000, output_reserve=1000)
    with pytest.raises(ValueError, match="no room"):
        cf.Session(model="gpt-4", output_reserve=10_000).pressure(history(3))


def _png(w: int, h: int, payload: int) -> str:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    raw = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
    raw += chunk(b"IDAT", bytes(payload)) + chunk(b"IEND", b"")
    return "data:image/png;base64," + base64.b64encode(raw).decode()


def test_image_costs_tokens_by_formula_while_wire_cap_sees_its_bytes():
    # A 2.3 MB screenshot must not trip the token gate, only the byte cap.
    img = {"role": "user", "content": [
        {"type": "text", "text": "screenshot"},
        {"type": "image_url", "image_url": {"url": _png(1920, 1080, 2_300_000)}},
    ]}
    ms = history(5) + [img]
    s = cf.Session(model="claude-sonnet-4-5", provider="anthropic", max_request_bytes=2_000_000)
    assert s.estimate(ms) < 5_000
    assert s.wire_bytes(ms) == cf.wire_bytes(ms)
    assert s.should_compact(ms)  # by bytes
    roomy = cf.Session(model="claude-sonnet-4-5", provider="anthropic", max_request_bytes=16 << 20)
    assert not roomy.should_compact(ms)
    assert cf.Session().wire_bytes(ms) == cf.wire_bytes(ms)


# -- limits ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "model, window",
    [
        ("gpt-4o", 128_000),
        ("gpt-4o-mini-2024-07-18", 128_000),
        ("openai/gpt-4.1-mini", 1_047_576),
        ("gpt-4", 8_192),
        ("gpt-4-0613", 8_192),
        ("gpt-4-turbo-2024-04-09", 128_000),
        ("gpt-3.5-turbo-0125", 16_385),
        ("o3-mini", 200_000),
        ("o1-mini-2024-09-12", 128_000),
        ("gpt-5-mini", 400_000),
        ("gpt-5-chat-latest", 128_000),
        ("ft:gpt-4o-mini-2024-07-18:acme::abc123", 128_000),
        ("claude-3-5-sonnet-20241022", 200_000),
        ("anthropic/claude-3.5-sonnet", 200_000),
        ("us.anthropic.claude-sonnet-4-20250514-v1:0", 200_000),
        ("claude-opus-4-1", 200_000),
        ("claude-2.1", 200_000),
        ("claude-2.0", 100_000),
        ("gemini-2.5-pro-preview-05-06", 1_048_576),
        ("google/gemini-3-pro-preview", 1_048_576),
        ("models/gemini-1.5-pro", 2_097_152),
    ],
)
def test_context_window_table(model, window):
    assert cf.context_window(model) == window


def test_unknown_model_window_raises():
    # Llama 3.1 is in the table now (Meta's model card: 128K); Ollama tags are stripped.
    assert cf.context_window("llama3.1:8b") == 131_072
    with pytest.raises(cf.UnknownModelError):
        cf.context_window("my-local-model:8b")
    with pytest.raises(cf.UnknownModelError):
        cf.context_window("gpt-4x")  # not a name boundary


def test_ollama_context_window():
    show = {
        "parameters": "stop                           \"<|eot_id|>\"\nnum_ctx                        8192",
        "model_info": {"general.architecture": "llama", "llama.context_length": 131072},
    }
    assert cf.ollama_context_window(show) == 8192
    assert cf.ollama_context_window(show, num_ctx=4096) == 4096
    assert cf.ollama_context_window({"model_info": show["model_info"]}) == 131072
    assert cf.ollama_context_window({"parameters": "num_ctx 2048"}) == 2048
    sdk = SimpleNamespace(modelinfo={"general.architecture": "qwen2", "qwen2.context_length": 32768}, parameters=None)
    assert cf.ollama_context_window(sdk) == 32768
    with pytest.raises(cf.UnknownModelError):
        cf.ollama_context_window({"parameters": "stop x"})


# -- batch -----------------------------------------------------------------------------------


@pytest.mark.parametrize("threads", [None, 1, 2, 7])
def test_estimate_many_equals_estimate_of_each(threads):
    hs = [history(n, seed=n) for n in (1, 5, 50, 300, 2, 0)]
    kw = {"provider": "gemini", "system": "sys", "tools": [{"name": "f", "input_schema": {"type": "object"}}]}
    assert cf.estimate_many(hs, threads=threads, **kw) == [cf.estimate(h, **kw) for h in hs]
    assert cf.estimate_many([]) == []
    with pytest.raises(ValueError):
        cf.estimate_many(hs, threads=0)


@pytest.mark.parametrize("threads", [None, 1, 2])
def test_count_many_equals_count_of_each(threads):
    hs = [history(n, seed=n) for n in (1, 5, 50, 300, 2)]
    tools = [{"type": "function", "function": {"name": "bash", "description": "Run a command",
                                                "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}}}]
    assert cf.count_many(hs, model="gpt-4o", tools=tools, threads=threads) == [
        cf.count(h, model="gpt-4o", tools=tools) for h in hs
    ]
    with pytest.raises(cf.UnknownModelError):
        cf.count_many(hs, model="gemini-2.5-pro")


def test_estimate_many_reports_the_message_index_and_field_of_a_bad_history():
    with pytest.raises(cf.InvalidMessageError) as e:
        cf.estimate_many([history(3), [{"role": "user", "content": "ok"}, {"role": "user", "content": 1}]])
    assert (e.value.index, e.value.field) == (1, "content")


# -- threads and memory ----------------------------------------------------------------------


def test_shared_session_is_safe_across_threads():
    s = cf.Session(context_window=1_000_000)
    base = history(200)
    expected = fresh(base)
    errors: list[BaseException] = []
    results: list[int] = []

    def worker(seed: int) -> None:
        try:
            for i in range(100):
                ms = base + history(2 + i % 9, seed=seed)[1:]
                r = s.estimate(ms)
                assert r == fresh(ms)
                s.should_compact(ms)
            results.append(s.estimate(base))
        except BaseException as e:  # noqa: BLE001 - re-raised below
            errors.append(e)

    ts = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors
    assert results == [expected] * 4


def test_shared_session_with_usage_across_threads():
    s = cf.Session()
    errors: list[BaseException] = []

    def worker(seed: int) -> None:
        try:
            ms = history(20, seed=seed)
            for i in range(200):
                ms.append({"role": "user", "content": f"{seed} {i}"})
                s.estimate(ms)
                s.record_usage(1000 + i, ms)
                assert s.last_usage is not None
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    ts = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors


def test_session_keeps_no_reference_to_messages():
    content = "large tool output " * 10_000
    msg = {"role": "tool", "tool_call_id": "c1", "content": content}
    before = (sys.getrefcount(msg), sys.getrefcount(content))
    s = cf.Session(context_window=128_000, max_request_bytes=1 << 20)
    s.estimate([msg])
    s.record_usage(100)
    s.should_compact([msg])
    assert (sys.getrefcount(msg), sys.getrefcount(content)) == before


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/statm")
def test_rss_bounded_over_1000_turns_of_a_growing_history():
    # Each turn appends a 64 KB tool output; every 100 turns the caller compacts (keeps the last
    # 10 messages). Live data stays under ~7 MB; a session that kept messages alive would hold
    # the 64 MB of all outputs.
    s = cf.Session(context_window=10_000_000, max_request_bytes=1 << 30)
    ms = history(3)
    gc.collect()
    start = _rss()
    for turn in range(1000):
        ms.append({"role": "user", "content": f"turn {turn} " + "y" * 65_536})
        s.estimate(ms)
        s.record_usage(1000 + turn)
        s.should_compact(ms)
        if turn % 100 == 99:
            ms = ms[:1] + ms[-10:]
    gc.collect()
    grown = _rss() - start
    assert grown < 24 << 20, f"RSS grew by {grown / 2**20:.1f} MB"


# -- accuracy on real trajectories ------------------------------------------------------------

ROOTS = [pytest.param(LOCAL, id="tests-data"), pytest.param(SHARED, id="shared-data")]


def session_errors(root, **session_kw) -> tuple[list[float], list[float]]:
    """|estimate / real - 1| of every call of every SWE trajectory: call k sent
    messages[:n_messages]; the usage of call k-1 is recorded before call k is estimated.
    Returns (first calls, later calls)."""
    if root == SHARED and not shared_available():
        pytest.skip(f"full transcripts not found at {SHARED}")
    assert load_conversations(root, "mini-swe-agent-gemini3"), f"no SWE trajectories under {root}"
    return transcripts.session_errors(cf, root, **session_kw)


def quantile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


@pytest.mark.parametrize("root", ROOTS)
def test_swe_session_accuracy_floors_with_exact_text(root):
    # Appended messages tokenized with o200k (x the Gemini profile's density). Measured:
    # shared-data 4,310 later calls median 0.13%, p90 1.00%, p99 3.4%; tests-data 489 calls
    # 0.18% / 0.94% / 3.1%. First calls (no usage yet): median 9.1% / 9.9%, max 19.8%.
    first, later = session_errors(root, text_encoding="o200k_base")
    assert statistics.median(later) <= 0.003
    assert quantile(later, 0.90) <= 0.015
    assert quantile(later, 0.99) <= 0.08
    assert statistics.median(first) <= 0.12


@pytest.mark.parametrize("root", ROOTS)
def test_swe_session_accuracy_default_heuristic(root):
    # Sampled text estimate (the default, microseconds per turn), head plus three body windows
    # for texts over 1 KiB, called as a router user calls it (provider="openai",
    # model="google/gemini-3-pro-preview": the model's Gemini family prices it, by Gemini's own
    # text weights). Measured: shared-data 4,310 later calls median 0.15%, p90 1.28%, p99 5.20%;
    # tests-data 489 calls 0.19% / 1.32% / 6.75% (as o200k x 1.2: 0.17 / 1.37 / 6.53% and
    # 0.21 / 1.47 / 7.49%). First calls: median 4.1% / 5.0%, max 25.1% (as o200k: 14.4%).
    first, later = session_errors(root)
    assert statistics.median(later) <= 0.003
    assert quantile(later, 0.90) <= 0.015
    assert quantile(later, 0.99) <= 0.07
    assert statistics.median(first) <= 0.06


def test_text_encoding_option():
    ms = history(30)
    s = cf.Session(text_encoding="o200k_base")
    assert s._core.text_encoding == "o200k_base"
    assert s.estimate(ms) > 0
    with pytest.raises(ValueError, match="text_encoding"):
        cf.Session(text_encoding="gpt2")


def test_a_pickled_session_keeps_its_content_hashes_and_usage_anchor() -> None:
    # sessions.md said the copy's per-message cache "starts empty"; it carries the content hashes
    # and the usage anchor, so the same history as new objects gets the same anchored estimate.
    import copy
    import pickle

    h = [{"role": "user", "content": "hello " * 40}, {"role": "assistant", "content": "hi " * 30}]
    s = cf.Session(model="gpt-4o")
    s.estimate(h)
    s.record_usage({"prompt_tokens": 5000}, h)
    nxt = [*h, {"role": "user", "content": "and then " * 20}]
    c = pickle.loads(pickle.dumps(s))
    expected = 5000 + cf.estimate_each(nxt[2:], model="gpt-4o")[0]
    assert s.estimate(nxt) == c.estimate(copy.deepcopy(nxt)) == expected
