"""Usage read whole (`contextfold.usage`): every recorded usage shape, cache parts, and the
history-as-sent prompt of Anthropic's server-side compaction."""

from __future__ import annotations

import json

import contextfold as cf
import pytest
from contextfold.usage import Usage, usage_of
from transcripts import LOCAL, SHARED, load_requests, shared_available


def _recorded() -> list:
    return load_requests(SHARED) if shared_available() else load_requests(LOCAL)


def test_every_recorded_usage_reads_as_the_recorded_prompt_and_cache() -> None:
    checked = compactions = 0
    for r in _recorded():
        raw = r.raw.get("usage")
        if not isinstance(raw, dict) or r.provider not in ("anthropic", "openai", "azure", "bedrock"):
            continue
        u = usage_of(raw)
        iterations = raw.get("iterations") or []
        compaction = [it for it in iterations if it.get("type") == "compaction"]
        # The recorded usage_prompt_tokens is the top-level sum; the request as sent is the
        # first iteration (the same number unless the server looped or compacted).
        looped = len(iterations) > 1
        if iterations:
            it = iterations[0]
            assert u.prompt_tokens == it["input_tokens"] + it["cache_read_input_tokens"] + it["cache_creation_input_tokens"]
            assert u.cache_read_tokens == it["cache_read_input_tokens"]
        if compaction:
            assert u.compacted_prompt_tokens == r.usage
            compactions += 1
        else:
            if not looped:
                assert u.prompt_tokens == r.usage, r.source
            assert u.compacted_prompt_tokens is None
        if r.raw.get("usage_cache_read_tokens") is not None and r.provider == "anthropic" and not looped:
            assert u.cache_read_tokens == r.raw["usage_cache_read_tokens"], r.source
            assert u.cache_write_tokens == r.raw["usage_cache_write_tokens"], r.source
        checked += 1
    assert checked >= 20
    if shared_available():
        assert compactions >= 2


def test_openai_cached_tokens_are_read_from_the_details() -> None:
    u = usage_of({"prompt_tokens": 1200, "completion_tokens": 5, "prompt_tokens_details": {"cached_tokens": 1024}})
    assert u == Usage(1200, 1024, 0)
    u = usage_of({"usage": {"input_tokens": 900, "input_tokens_details": {"cached_tokens": 768}}, "model": "gpt-5"})
    assert (u.prompt_tokens, u.cache_read_tokens, u.model) == (900, 768, "gpt-5")
    u = usage_of({"usageMetadata": {"promptTokenCount": 5000, "cachedContentTokenCount": 4096}})
    assert (u.prompt_tokens, u.cache_read_tokens) == (5000, 4096)


def test_session_anchors_a_server_compaction_on_the_history_as_sent() -> None:
    s = cf.Session(provider="anthropic", model="claude-sonnet-4-5")
    history = [{"role": "user", "content": "word " * 2000}]
    s.estimate(history)
    usage = {"input_tokens": 220, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0,
             "iterations": [{"type": "compaction", "input_tokens": 2100, "cache_read_input_tokens": 0,
                             "cache_creation_input_tokens": 0, "output_tokens": 90},
                            {"type": "message", "input_tokens": 220, "cache_read_input_tokens": 0,
                             "cache_creation_input_tokens": 0, "output_tokens": 8}]}
    assert s.record_usage(usage) == 2100
    assert s.estimate(history) == 2100
    assert s.last_usage_detail is not None and s.last_usage_detail.compacted_prompt_tokens == 220


def _zero_cache() -> dict:
    return {"cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}


# The final message_delta usage of the recorded advisor exchange (../shared/data/replay,
# test_anthropic/test_anthropic_advisor_tool_stream.yaml#0): message_start said 1,128.
ADVISOR_FINAL = {"input_tokens": 2411, **_zero_cache(), "output_tokens": 145,
                 "iterations": [{"input_tokens": 1128, "output_tokens": 135, **_zero_cache(), "type": "message"},
                                {"input_tokens": 2543, "output_tokens": 18, **_zero_cache(), "type": "advisor_message",
                                 "model": "claude-opus-4-8"},
                                {"input_tokens": 1283, "output_tokens": 10, **_zero_cache(), "type": "message"}]}


def test_anthropic_advisor_usage_anchors_on_the_request_as_sent_not_the_executor_sum() -> None:
    from anthropic.types.beta import BetaUsage

    assert usage_of(ADVISOR_FINAL) == Usage(1128, 0, 0)
    sdk = BetaUsage.model_validate(ADVISOR_FINAL)
    assert usage_of(sdk) == Usage(1128, 0, 0)
    history = [{"role": "user", "content": "x " * 1000}]
    for usage in (ADVISOR_FINAL, sdk):
        s = cf.Session(provider="anthropic", model="claude-sonnet-5")
        s.estimate(history)
        assert s.record_usage(usage, history) == 1128
        assert s.estimate(history) == 1128
    # Cache parts are the first iteration's too: they are parts of its prompt.
    cached = {**ADVISOR_FINAL, "cache_read_input_tokens": 2000,
              "iterations": [{**ADVISOR_FINAL["iterations"][0], "input_tokens": 128, "cache_read_input_tokens": 1000},
                             *ADVISOR_FINAL["iterations"][1:]]}
    assert usage_of(cached) == Usage(1128, 1000, 0)


def test_recorded_advisor_stream_usage_reads_as_its_message_start_prompt() -> None:
    path = SHARED / "replay" / "exchanges.jsonl"
    if not path.exists():
        pytest.skip("../shared/data/replay is not on this machine")
    with path.open() as f:
        row = next(json.loads(line) for line in f if "test_anthropic_advisor_tool_stream.yaml#0" in line)
    events = [json.loads(line[5:]) for line in row["response_body"].splitlines() if line.startswith("data:")]
    start = next(e["message"]["usage"] for e in events if e["type"] == "message_start")
    final = [e["usage"] for e in events if e["type"] == "message_delta"][-1]
    sent = start["input_tokens"] + start["cache_read_input_tokens"] + start["cache_creation_input_tokens"]
    assert (sent, final["input_tokens"]) == (1128, 2411)
    assert usage_of(start).prompt_tokens == usage_of(final).prompt_tokens == sent


def test_late_or_paused_compaction_keeps_the_request_as_sent_and_the_next_executor_prompt() -> None:
    def it(kind: str, tokens: int, read: int = 0) -> dict:
        return {"type": kind, "input_tokens": tokens, "cache_read_input_tokens": read,
                "cache_creation_input_tokens": 0, "output_tokens": 5}

    # A server-side tool loop grew the context past the trigger mid-request.
    late = {"input_tokens": 190_000 + 21_000, **_zero_cache(),
            "iterations": [it("message", 148_000, 42_000), it("compaction", 151_000), it("message", 21_000)]}
    assert usage_of(late) == Usage(190_000, 42_000, 0, 21_000)
    # The advisor's sub-inference after a compaction is not the executor's prompt.
    advised = {"input_tokens": 900, **_zero_cache(),
               "iterations": [it("compaction", 60_000), it("advisor_message", 61_000), it("message", 900)]}
    assert usage_of(advised) == Usage(60_000, 0, 0, 900)
    # pause_after_compaction: the model answered from nothing yet.
    paused = {"input_tokens": 0, **_zero_cache(), "iterations": [it("compaction", 60_000)]}
    assert usage_of(paused) == Usage(60_000, 0, 0, None)


def test_openai_cache_write_tokens_are_read_from_dicts_and_sdk_objects() -> None:
    from openai.types.completion_usage import CompletionUsage
    from openai.types.responses import ResponseUsage

    # Recorded (../shared/data/replay,
    # test_openai_responses_model_web_search_tool_without_external_access.yaml#0).
    responses = {"input_tokens": 8576, "input_tokens_details": {"cache_write_tokens": 4418, "cached_tokens": 0},
                 "output_tokens": 52, "output_tokens_details": {"reasoning_tokens": 32}, "total_tokens": 8628}
    # Recorded through OpenRouter from Claude (test_openrouter_cache_messages_anthropic_real_api.yaml#1).
    chat = {"prompt_tokens": 3329, "completion_tokens": 53, "total_tokens": 3382,
            "prompt_tokens_details": {"cached_tokens": 3211, "cache_write_tokens": 115, "audio_tokens": 0}}
    for usage in (responses, ResponseUsage.model_validate(responses)):
        assert usage_of(usage) == Usage(8576, 0, 4418)
    for usage in (chat, CompletionUsage.model_validate(chat)):
        assert usage_of(usage) == Usage(3329, 3211, 115)
    s = cf.Session(model="gpt-5")
    s.record_usage(ResponseUsage.model_validate(responses), [{"role": "user", "content": "hi"}])
    assert s.last_usage_detail == Usage(8576, 0, 4418)


def test_every_recorded_openai_cache_detail_reads_as_recorded() -> None:
    checked = written = 0
    for r in _recorded():
        raw = r.raw.get("usage")
        details = isinstance(raw, dict) and (raw.get("input_tokens_details") or raw.get("prompt_tokens_details"))
        if not isinstance(details, dict) or "cache_write_tokens" not in details:
            continue
        u = usage_of(raw)
        assert (u.prompt_tokens, u.cache_read_tokens, u.cache_write_tokens) == (
            r.usage, details.get("cached_tokens") or 0, details["cache_write_tokens"]), r.source
        checked += 1
        written += details["cache_write_tokens"] > 0
    if shared_available():
        assert checked >= 50 and written >= 8


def test_gemini_usage_metadata_alone_keeps_its_cached_part() -> None:
    from google.genai import types as gt

    # Recorded (../shared/data/replay, test_google_model_cached_content.yaml#1).
    rest = {"cacheTokensDetails": [{"modality": "TEXT", "tokenCount": 3512}], "cachedContentTokenCount": 3512,
            "candidatesTokenCount": 2, "promptTokenCount": 3520, "thoughtsTokenCount": 42, "totalTokenCount": 3564}
    meta = gt.GenerateContentResponseUsageMetadata.model_validate(rest)
    response = gt.GenerateContentResponse(usage_metadata=meta, model_version="gemini-2.5-flash")
    assert usage_of(response) == Usage(3520, 3512, 0, None, "gemini-2.5-flash")
    assert usage_of(meta) == usage_of(rest) == Usage(3520, 3512)
    s = cf.Session(model="gemini-2.5-flash")
    s.record_usage(meta, [{"role": "user", "content": "What is in the cached file?"}])
    assert s.last_usage_detail == Usage(3520, 3512)


def test_every_recorded_gemini_usage_metadata_reads_as_recorded_prompt_and_cache() -> None:
    checked = cached = 0
    for r in _recorded():
        raw = r.raw.get("usage")
        if not isinstance(raw, dict) or "promptTokenCount" not in raw or r.api.startswith("countTokens"):
            continue
        u = usage_of(raw)  # the REST usageMetadata itself, as recorded
        assert u.prompt_tokens == r.usage, r.source
        if r.raw.get("usage_cache_read_tokens") is not None:
            assert u.cache_read_tokens == r.raw["usage_cache_read_tokens"], r.source
            cached += u.cache_read_tokens > 0
        checked += 1
    assert checked >= 10
    if shared_available():
        assert checked >= 300 and cached >= 10


def test_a_responses_streams_completed_event_reads_as_its_responses_usage() -> None:
    """A Responses stream ends on ``response.completed``, which holds the response: its usage
    is read there, from the SDK's event object and from the event's JSON alike (a chat
    stream's last chunk already was)."""
    from openai.types.responses import Response, ResponseCompletedEvent, ResponseUsage
    from openai.types.responses.response_usage import InputTokensDetails, OutputTokensDetails

    usage = ResponseUsage(input_tokens=53, output_tokens=9, total_tokens=62,
                          input_tokens_details=InputTokensDetails.model_construct(cached_tokens=32),
                          output_tokens_details=OutputTokensDetails(reasoning_tokens=0))
    event = ResponseCompletedEvent.model_construct(
        type="response.completed", sequence_number=7,
        response=Response.model_construct(model="gpt-5-2025-08-07", usage=usage))
    read = usage_of(event)
    assert (read.prompt_tokens, read.cache_read_tokens, read.model) == (53, 32, "gpt-5-2025-08-07")
    as_json = json.loads(event.model_dump_json())
    assert usage_of(as_json).prompt_tokens == 53
    s = cf.Session(model="gpt-5")
    history = [{"role": "user", "content": "hi"}]
    s.record_usage(event, history)
    assert s.last_usage_detail.prompt_tokens == 53
