"""Exact OpenAI counts: API contract, floors against recorded usage, tiktoken cross-check.

The floors are pinned on the OpenAI / Azure chat.completions requests of the committed subset
(tests/data, see its README); tools/derive_openai_rendering.py prints the same table on the
full set. Families: plain (no tools, no response_format, no media), tools, response_format
(no tools), images (image_url parts).
"""

from __future__ import annotations

import os
import random
import statistics
import threading
from pathlib import Path

import pytest

import contextfold as cf
from transcripts import LOCAL, ROOT, load_requests

CACHE = Path(os.environ.get("TIKTOKEN_CACHE_DIR", ROOT.parent / "shared" / "data" / "tiktoken-cache"))


def _openai_chat():
    return [
        r
        for r in load_requests(LOCAL)
        if r.provider in ("openai", "azure") and r.api == "chat.completions" and r.usage
    ]


def _family(r) -> str:
    parts = [p for m in r.messages if isinstance(m.get("content"), list) for p in m["content"]]
    kinds = {p.get("type") for p in parts}
    if kinds - {"text", "image_url"}:
        return "other-media"  # audio, files: billed by meters no tokenizer reproduces
    if "image_url" in kinds:
        return "images"
    if r.tools:
        return "tools"
    if r.options.get("response_format"):
        return "response_format"
    return "plain"


@pytest.fixture(scope="module")
def table():
    fams: dict[str, list[tuple[int, int, str]]] = {}
    for r in _openai_chat():
        try:
            c = cf.count(r.messages, model=r.model, tools=r.tools, response_format=r.options.get("response_format"))
        except cf.UnknownModelError:
            continue
        fams.setdefault(_family(r), []).append((c, r.usage, r.source))
    # Requests of an unknown model are passed over: the table must still hold the recorded ones.
    assert sum(map(len, fams.values())) >= 300, {k: len(v) for k, v in fams.items()}
    return fams


def _stats(rows):
    errs = sorted(abs(c - u) / u for c, u, _ in rows)
    return {
        "n": len(rows),
        "exact": sum(c == u for c, u, _ in rows) / len(rows),
        "median": statistics.median(errs),
        "p90": errs[min(len(errs) - 1, int(0.9 * len(errs)))],
        "max": errs[-1],
    }


# ---------------------------------------------------------------- floors


def test_plain_requests_are_exact(table):
    rows = table["plain"]
    s = _stats(rows)
    assert s["n"] >= 250
    assert s["exact"] >= 0.95, s
    # Known misses: gpt-4o-search-preview drops the system prompt (its own hidden one replaces
    # it), and two 64-token requests that replay a tool call without `tools` bill one token more
    # than counted (1.5%). Every other plain request is within 1%.
    off = [src for c, u, src in rows if abs(c - u) / u > 0.01]
    assert all("web_search" in src or "roundtrip_wire_stable" in src for src in off), off
    assert len(off) <= 3


def test_images_median_within_3_percent(table):
    s = _stats(table["images"])
    assert s["n"] >= 15
    assert s["median"] <= 0.03, s


def test_response_format_requests_are_exact(table):
    # Measured: all 71 exact (19 schemas on the full set with the tool requests that carry one;
    # see tools/derive_response_format.py). Before the schema was rendered as the model reads it
    # (required / additionalProperties / defaults / bounds hidden, non-ASCII escaped, root title
    # billed apart, joined to the system message): median 0.14%, p90 1.85%, 48% exact; before
    # minimum/maximum were dropped: median 1.48%, 11% exact.
    s = _stats(table["response_format"])
    assert s["n"] >= 50
    assert s["exact"] == 1.0, [(c, u, src) for c, u, src in table["response_format"] if c != u]


def test_tools_median_and_exact_share(table):
    # The median goal (<= 0.3%). Measured: median 0.00%, 80.1% exact (65.6% before tools
    # without property comments were billed 1 less and parallel batches 4 - 4 x calls; 62.6%
    # before the response_format rules; before the per-call, compact-argument, system-seam and
    # gpt-5 preamble rules: median 0.30%, 33% exact; the cookbook formula: median 13.8%).
    s = _stats(table["tools"])
    assert s["n"] >= 150
    assert s["median"] <= 0.001, s
    assert s["exact"] >= 0.80, s


def test_tools_p90_pinned(table):
    # The goal (p90 <= 1%). Measured: p90 0.75% (1.92% before tools without property
    # comments were billed 1 less and parallel batches 4 - 4 x calls; 2.08% before the
    # response_format rules). Over 1% (17 of 186): one nested array-of-objects tool (8 requests,
    # 22 tokens under: no rendering derived from the data explains it), gpt-5-nano batches of
    # 3 parallel calls (4, 7 under), and a few short requests 2-4 tokens off.
    s = _stats(table["tools"])
    assert s["p90"] <= 0.0076, s


def test_requests_with_single_calls_are_exact_on_gpt41_and_gpt4o_mini(table, parallel_sources):
    # The per-call rule (2 tokens a call on the gpt-4o / gpt-4.1 generation, arguments billed as
    # compact JSON), the tool block joining the system message and tools without property
    # comments 1 less: 25 of 27 gpt-4.1-mini, 19 of 20 gpt-4o-mini and 33 of 38 gpt-4o requests
    # with calls are exact (2 and 7 with 1 token a call).
    calls = {r.source: r for r in _openai_chat() if any(m.get("tool_calls") for m in r.messages)}
    for prefix, floor in (("gpt-4.1-mini", 0.92), ("gpt-4o-mini", 0.95), ("gpt-4o", 0.86)):
        rows = [
            (c, u)
            for c, u, src in table["tools"]
            if src in calls and src not in parallel_sources and calls[src].model.startswith(prefix)
        ]
        assert len(rows) >= 15, prefix
        exact = sum(c == u for c, u in rows) / len(rows)
        assert exact >= floor, (prefix, exact, rows)


def _without_tools_or_images(table):
    """The issue's "requests without tools or images" (response_format allowed)."""
    return table["plain"] + table["response_format"]


def test_requests_without_tools_or_images_pinned(table):
    # Measured on 365 requests: 99.5% exact, p99 0.00% (the goal: >= 95%, p99 <= 1%;
    # 89.3% and 2.60% before the response_format rules). The two misses: gpt-4o-search-preview
    # (its hidden prompt replaces the system message) and a YAML document sent as a file URL.
    s = _stats(_without_tools_or_images(table))
    assert s["n"] >= 350
    assert s["exact"] >= 0.99, s
    assert _p99(_without_tools_or_images(table)) <= 0.01


def _p99(rows) -> float:
    errs = sorted(abs(c - u) / u for c, u, _ in rows)
    return errs[min(len(errs) - 1, int(0.99 * len(errs)))]


def test_full_shared_set_pinned():
    # The same floors on the full ../shared/data set (tests/data holds all but one of its OpenAI
    # chat requests); skipped, visibly, when it is absent.
    from transcripts import SHARED, shared_available

    if not shared_available():
        pytest.skip(f"../shared/data not found at {SHARED} (set CONTEXTFOLD_SHARED_DATA)")
    rows: dict[str, list[tuple[int, int, str]]] = {}
    for r in load_requests(SHARED):
        if r.provider not in ("openai", "azure") or r.api != "chat.completions" or not r.usage:
            continue
        try:
            c = cf.count(r.messages, model=r.model, tools=r.tools, response_format=r.options.get("response_format"))
        except cf.UnknownModelError:
            continue
        rows.setdefault(_family(r), []).append((c, r.usage, r.source))
    plain = _without_tools_or_images(rows)
    assert len(plain) >= 350
    assert _stats(plain)["exact"] >= 0.99
    assert _p99(plain) <= 0.01
    assert _stats(rows["response_format"])["exact"] == 1.0
    s = _stats(rows["tools"])
    assert s["median"] <= 0.001 and s["p90"] <= 0.0076 and s["exact"] >= 0.79, s


@pytest.fixture(scope="module")
def parallel_sources():
    return {r.source for r in _openai_chat() if any(len(m.get("tool_calls") or []) > 1 for m in r.messages)}


def test_parallel_calls_are_exact_before_gpt5(table, parallel_sources):
    # Every recorded batch of parallel calls (2-3 calls; results up to 1,100 tokens, which are
    # billed JSON-escaped) on the gpt-4o / gpt-4.1 generation is exact with the batch constant
    # 4 - 4 x calls (with the single constant -9 fitted before: 2-call batches 5 under, 3-call
    # batches 1 under). gpt-5-nano's 3-call batches (4 requests of one test) keep -9 and stay
    # 7 under (1.3-1.5%).
    models = {r.source: r.model for r in _openai_chat()}
    rows = [(c, u, src) for c, u, src in table["tools"] if src in parallel_sources]
    assert len(rows) >= 20
    older = [(c, u, src) for c, u, src in rows if not models[src].startswith(("gpt-5", "o"))]
    assert len(older) >= 15
    assert all(c == u for c, u, _ in older), older
    assert all(abs(c - u) / u <= 0.016 and abs(c - u) <= 7 for c, u, _ in rows), rows


# ---------------------------------------------------------------- contract


def test_encoding_for_and_unknown_model():
    assert cf.encoding_for("gpt-4o-mini") == "o200k_base"
    assert cf.encoding_for("ft:gpt-4o-2024-08-06:org::abc") == "o200k_base"
    assert cf.encoding_for("gpt-4") == "cl100k_base"
    assert cf.encoding_for("gpt-oss-120b") == "o200k_harmony"
    with pytest.raises(cf.UnknownModelError, match="encoding="):
        cf.encoding_for("claude-sonnet-4-5")
    assert issubclass(cf.UnknownModelError, ValueError)
    with pytest.raises(cf.UnknownModelError):
        cf.count([{"role": "user", "content": "hi"}], model="llama3")


def test_count_text_options():
    assert cf.count_text("hello world", model="gpt-4o") == 2
    assert cf.count_text("hello world", encoding="cl100k_base") == 2
    assert cf.count_text("", encoding="o200k_base") == 0
    with pytest.raises(ValueError, match="valid"):
        cf.count_text("x", encoding="p99k")
    with pytest.raises(TypeError):
        cf.count_text("x")


def test_cookbook_example():
    # OpenAI cookbook "How to count tokens with tiktoken": 129 for gpt-4, 124 for gpt-4o.
    msgs = [
        {"role": "system", "content": "You are a helpful, pattern-following assistant that translates corporate jargon into plain English."},
        {"role": "system", "name": "example_user", "content": "New synergies will help drive top-line growth."},
        {"role": "system", "name": "example_assistant", "content": "Things working well together will increase revenue."},
        {"role": "system", "name": "example_user", "content": "Let's circle back when we have more bandwidth to touch base on opportunities for increased leverage."},
        {"role": "system", "name": "example_assistant", "content": "Let's talk later when we're less busy about how to do better."},
        {"role": "user", "content": "This late pivot means we don't have time to boil the ocean for the client deliverable."},
    ]
    assert cf.count(msgs, model="gpt-4") == 129
    assert cf.count(msgs, model="gpt-4o") == 124
    each = cf.count_each(msgs, model="gpt-4o")
    assert len(each) == 6 and sum(each) + 3 == 124


def test_count_each_is_prefix_stable_and_sums_to_count(parallel_sources):
    # Cacheable per-message counts: a message's count never changes when messages are appended
    # after it, batches of parallel calls included (their results share one billed message).
    reqs = [r for r in _openai_chat() if r.source in parallel_sources]
    assert reqs
    for r in reqs:
        each = cf.count_each(r.messages, model=r.model)
        priming = cf.count(r.messages, model=r.model) - sum(each)
        assert priming in (2, 3), r.source  # reply priming (one less on reasoning models)
        for k in range(1, len(r.messages)):
            assert cf.count_each(r.messages[:k], model=r.model) == each[:k], (r.source, k)
            assert cf.count(r.messages[:k], model=r.model) == sum(each[:k]) + priming


def test_tools_and_response_format_add_tokens_and_nothing_is_mutated():
    import copy

    msgs = [{"role": "user", "content": "weather in Paris?"}]
    tools = [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Get the weather",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
            },
        }
    ]
    rf = {"type": "json_schema", "json_schema": {"name": "Out", "schema": {"type": "object", "properties": {}}}}
    before = copy.deepcopy((msgs, tools, rf))
    base = cf.count(msgs, model="gpt-4o")
    assert cf.count(msgs, model="gpt-4o", tools=tools) > base
    assert cf.count(msgs, model="gpt-4o", response_format=rf) > base
    assert cf.count(msgs, model="gpt-4o", response_format={"type": "json_object"}) == base
    assert (msgs, tools, rf) == before


def test_bad_input_names_index_and_field():
    with pytest.raises(cf.InvalidMessageError) as e:
        cf.count([{"role": "user", "content": "ok"}, {"role": "assistant", "content": 5}], model="gpt-4o")
    assert e.value.index == 1
    with pytest.raises(TypeError):
        cf.count([{"role": "user", "content": "x"}], model="gpt-4o", tools={"not": "a list"})


def test_threads_agree_with_one_thread():
    hist = [{"role": "user", "content": f"message {i} " * 50} for i in range(200)]
    want = cf.count(hist, model="gpt-4o")
    got: list[int] = []
    ts = [threading.Thread(target=lambda: got.append(cf.count(hist, model="gpt-4o"))) for _ in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert got == [want] * 4


# ---------------------------------------------------------------- tiktoken cross-check


def _strings(n: int) -> list[str]:
    rng = random.Random(1234)
    pieces = [
        "hello", " world", "  ", "\n", "\n\n", "\t", "    ", "<|endoftext|>", "<|im_start|>", "<|fim_prefix|>",
        "def f(x):\n    return x**2\n", "{\"a\": [1, 2.5, null]}", "é", "ü", "中文", "日本語のテキスト", "😀", "👩‍💻",
        "ñ", "Ω", "1234567890", "3.14159", "x=y+z;", "https://example.com/a?b=c", "\u00a0", "\u200b", "'s", "'LL",
        "SELECT * FROM t;", "   \n   ", "!!!", "...", "----", "\r\n", "ÀÉÎÕÜ", "ʕ•ᴥ•ʔ", "\x00", "🏳️‍🌈",
    ]
    out = []
    for _ in range(n):
        k = rng.randint(0, 12)
        s = "".join(rng.choice(pieces) for _ in range(k))
        if rng.random() < 0.2:
            s += "".join(chr(rng.randint(32, 0x2FFF)) for _ in range(rng.randint(1, 30)))
        if rng.random() < 0.1:
            s = " " * rng.randint(1, 40) + s + " " * rng.randint(0, 40)
        out.append(s)
    return out


@pytest.mark.parametrize("encoding", ["o200k_base", "cl100k_base"])
def test_count_text_matches_tiktoken(encoding):
    if not CACHE.is_dir():
        pytest.skip(f"tiktoken cache not found at {CACHE} (set TIKTOKEN_CACHE_DIR)")
    os.environ["TIKTOKEN_CACHE_DIR"] = str(CACHE)
    tiktoken = pytest.importorskip("tiktoken")
    cached = list(CACHE.iterdir())
    if not cached:
        pytest.skip(f"tiktoken cache at {CACHE} is empty: {encoding} cannot load offline")
    # Only the offline case skips: with the cache present any other tiktoken error fails the test.
    enc = tiktoken.get_encoding(encoding)
    strings = _strings(10_000)
    bad = [s for s in strings if cf.count_text(s, encoding=encoding) != len(enc.encode_ordinary(s))]
    assert not bad, bad[:5]


def _json_strings(v, out: list[str]) -> None:
    if isinstance(v, str):
        out.append(v)
    elif isinstance(v, list):
        for x in v:
            _json_strings(x, out)
    elif isinstance(v, dict):
        for x in v.values():
            _json_strings(x, out)


@pytest.mark.parametrize("encoding", ["o200k_base", "cl100k_base"])
def test_count_text_matches_tiktoken_on_every_recorded_string(encoding):
    """Every string of every recorded request and conversation in ../shared/data (prose in
    several scripts, code, tool output, JSON), counted one by one in one thread so the memory of
    merged pieces is reused across texts, equals tiktoken-py's encode_ordinary."""
    import json

    from transcripts import SHARED, shared_available

    if not shared_available():
        pytest.skip(f"shared data not found at {SHARED}")
    if not CACHE.is_dir() or not any(CACHE.iterdir()):
        pytest.skip(f"tiktoken cache not found at {CACHE} (set TIKTOKEN_CACHE_DIR)")
    os.environ["TIKTOKEN_CACHE_DIR"] = str(CACHE)
    tiktoken = pytest.importorskip("tiktoken")
    enc = tiktoken.get_encoding(encoding)
    strings: list[str] = []
    for path in sorted(SHARED.glob("*/*.jsonl")):
        for line in path.read_text().splitlines():
            _json_strings(json.loads(line), strings)
    strings = list(dict.fromkeys(strings))
    assert len(strings) > 5_000
    bad = [s[:80] for s in strings if cf.count_text(s, encoding=encoding) != len(enc.encode_ordinary(s))]
    assert not bad, bad[:5]
