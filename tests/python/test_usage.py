"""Usage read whole (`contextfold.usage`): every recorded usage shape, cache parts, and the
history-as-sent prompt of Anthropic's server-side compaction."""

from __future__ import annotations

import contextfold as cf
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
        if compaction:
            it = compaction[0]
            assert u.prompt_tokens == it["input_tokens"] + it["cache_read_input_tokens"] + it["cache_creation_input_tokens"]
            assert u.compacted_prompt_tokens == r.usage
            assert u.cache_read_tokens == it["cache_read_input_tokens"]
            compactions += 1
        else:
            assert u.prompt_tokens == r.usage, r.source
            assert u.compacted_prompt_tokens is None
        if r.raw.get("usage_cache_read_tokens") is not None and r.provider == "anthropic" and not compaction:
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
