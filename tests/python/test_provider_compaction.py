"""The providers' own compaction as ``summarizer=``, through the real openai and anthropic SDKs
against a loopback upstream that records what it received.

No recording of either reply exists in ../shared/data/replay (it holds a compaction block sent
back, Anthropic's round trip, and the request side of /responses/compact in the pydantic-ai
requests), so the replies are built from the providers' documented shapes: OpenAI's
``CompactedResponse`` (``object: "response.compaction"``, ``output``: the user messages then one
``compaction`` item with ``encrypted_content``, ``usage``) and Anthropic's message with a
``compaction`` content block (``content``, ``signature``) and ``usage.iterations`` (the SDKs'
``CompactedResponse`` / ``BetaCompactionBlock`` / ``BetaCompactionIterationUsage`` types, and
the API references they are generated from)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import anthropic
import openai
import pytest

import contextfold as cf
from contextfold import _core
from contextfold.summary_assembly import OPEN
from contextfold.summarize import AnthropicCompaction, OpenAIResponsesCompaction

from proxy_support import RecordingUpstream
from test_integrations import responses_items, tau

ENCRYPTED = "gAAAAABp" + "Zm9sZGVk" * 40  # opaque: only its verbatim return matters
SIGNATURE = "EqQBCkYIBxgCKkB" + "c2lnbmVk" * 12


def openai_compact_answer(method: str, path: str, raw: bytes) -> tuple[int, dict[str, str], bytes]:
    """POST /v1/responses/compact in the documented shape: the user messages of the input,
    then one encrypted compaction item."""
    assert path == "/v1/responses/compact", path
    body = json.loads(raw)
    users = [{"type": "message", "role": "user", "id": f"msg_{i}", "status": "completed",
              "content": [{"type": "input_text", "text": m["content"]}]}
             for i, m in enumerate(body["input"]) if m.get("role") == "user" and isinstance(m.get("content"), str)]
    out = {"id": "resp_cmp_1", "object": "response.compaction", "created_at": 1776203680,
           "output": [*users, {"type": "compaction", "id": "cmp_1", "encrypted_content": ENCRYPTED}],
           "usage": {"input_tokens": 4000, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 300,
                     "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 4300}}
    return 200, {"content-type": "application/json"}, json.dumps(out).encode()


def anthropic_compact_answer(method: str, path: str, raw: bytes) -> tuple[int, dict[str, str], bytes]:
    """A Messages reply paused after compaction: one signed compaction block, the compaction's
    cost in usage.iterations."""
    out = {"id": "msg_cmp_1", "type": "message", "role": "assistant", "model": "claude-haiku-4-5",
           "content": [{"type": "compaction", "content": "The traveller asked to change a reservation; "
                        "the agent looked up user mia_li_3668 and her flights.", "signature": SIGNATURE}],
           "stop_reason": "compaction", "stop_sequence": None,
           "usage": {"input_tokens": 0, "output_tokens": 0, "cache_creation_input_tokens": 0,
                     "cache_read_input_tokens": 0,
                     "iterations": [{"type": "compaction", "input_tokens": 5200, "output_tokens": 180,
                                     "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}]}}
    return 200, {"content-type": "application/json"}, json.dumps(out).encode()


def failing(method: str, path: str, raw: bytes) -> tuple[int, dict[str, str], bytes]:
    return 500, {"content-type": "application/json"}, b'{"error": {"message": "boom", "type": "server_error"}}'


def anthropic_history() -> tuple[str, list[dict[str, Any]]]:
    conv = tau()
    out: list[dict[str, Any]] = []
    for m in conv["messages"][1:]:
        if m["role"] == "tool":
            block = {"type": "tool_result", "tool_use_id": m["tool_call_id"], "content": m["content"]}
            if out and out[-1]["role"] == "user" and isinstance(out[-1]["content"], list):
                out[-1]["content"].append(block)
            else:
                out.append({"role": "user", "content": [block]})
        elif m["role"] == "assistant":
            blocks: list[dict[str, Any]] = [{"type": "text", "text": m["content"]}] if m.get("content") else []
            for c in m.get("tool_calls") or []:
                blocks.append({"type": "tool_use", "id": c["id"], "name": c["function"]["name"],
                               "input": json.loads(c["function"]["arguments"])})
            out.append({"role": "assistant", "content": blocks})
        else:
            out.append({"role": "user", "content": m["content"]})
    return conv["messages"][0]["content"], out


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_openai_responses_compaction_item_replaces_the_middle_verbatim(mode):
    items = responses_items(tau()["messages"])
    full = cf.estimate(items, model="gpt-4o")
    with RecordingUpstream(openai_compact_answer) as up:
        def compactor(client: Any) -> cf.Compactor:
            # (A tail of three messages at least opens this dialogue's on an assistant turn at this
            # share, the case below; from a share of 0.5 it opens on a function call since texts
            # of up to 1 KiB are read whole.)
            return cf.Compactor(model="gpt-4o", wire_format="responses", budget=int(full * 0.45), strategy="summarize",
                                summarizer=OpenAIResponsesCompaction(client, "gpt-4o-mini"), min_tail=3)

        if mode == "sync":
            with openai.OpenAI(base_url=up.url + "/v1", api_key="sk-test") as client:
                result = compactor(client).compact(items)
        else:
            async def go() -> cf.CompactionResult:
                async with openai.AsyncOpenAI(base_url=up.url + "/v1", api_key="sk-test") as client:
                    return await compactor(client).compact_async(items)
            result = asyncio.run(go())
    assert result.strategy_used == "summarize" and not result.fallback_used, result.notes
    (sent,) = up.seen
    assert sent.path == "/v1/responses/compact"
    assert sent.body["model"] == "gpt-4o-mini"
    assert sent.body["input"] == [items[i] for i in result.removed]  # exactly the folded middle
    kept = [m for m in result.messages if m.get("type") == "compaction"]
    assert kept == [{"type": "compaction", "id": "cmp_1", "encrypted_content": ENCRYPTED}]
    # (The tail opens on the assistant's turn, where a text summary is merged into it: the item
    # goes before it all the same; it was dropped there, and the user messages the compaction
    # returned were merged as the summary.)
    at = result.messages.index(kept[0])
    assert result.messages[at + 1].get("role") == "assistant", result.messages[at + 1]
    assert not any(OPEN in str(m.get("content")) for m in result.messages)
    tokens, failures = _core.compaction_verify(result.messages, _core.PricedRequest(format="responses", model="gpt-4o"))
    assert failures == [] and tokens <= int(full * 0.45)
    # A later compaction keeps the provider's item verbatim (never re-summarized).
    again = cf.Compactor(model="gpt-4o", wire_format="responses", budget=int(full * 0.3), strategy="summarize")
    assert kept[0] in again.compact(result.messages + items[-6:]).messages


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_anthropic_compaction_block_is_placed_where_the_summary_goes_and_sent_back_verbatim(mode):
    system, history = anthropic_history()
    full = cf.estimate(history, provider="anthropic", system=system)
    with RecordingUpstream(anthropic_compact_answer) as up:
        def compactor(client: Any) -> cf.Compactor:
            return cf.Compactor(provider="anthropic", system=system, budget=int(full * 0.5), strategy="summarize",
                                summarizer=AnthropicCompaction(client, "claude-haiku-4-5"))

        if mode == "sync":
            with anthropic.Anthropic(base_url=up.url, api_key="k") as client:
                result = compactor(client).compact(history)
        else:
            async def go() -> cf.CompactionResult:
                async with anthropic.AsyncAnthropic(base_url=up.url, api_key="k") as client:
                    return await compactor(client).compact_async(history)
            result = asyncio.run(go())
    assert result.strategy_used == "summarize" and not result.fallback_used, result.notes
    (sent,) = up.seen
    assert sent.path.startswith("/v1/messages")
    assert "compact-2026-01-12" in sent.headers["anthropic-beta"]
    edit = sent.body["context_management"]["edits"][0]
    assert edit["type"] == "compact_20260112" and edit["pause_after_compaction"] is True
    assert sent.body["messages"][0]["role"] == "user"
    blocks = [b for m in result.messages if isinstance(m.get("content"), list) for b in m["content"]
              if b.get("type") == "compaction"]
    assert blocks == [json.loads(anthropic_compact_answer("POST", "", b"")[2])["content"][0]]
    # Where the seam takes no turn of its own (the task's user turn before it, an assistant turn
    # after it), the block opens that assistant turn, as the provider writes it in a response.
    (holder,) = [m for m in result.messages if isinstance(m.get("content"), list)
                 and any(b.get("type") == "compaction" for b in m["content"])]
    assert holder["role"] == "assistant" and holder["content"][0]["type"] == "compaction"
    tokens, failures = _core.compaction_verify(result.messages, _core.PricedRequest(format="anthropic", provider="anthropic", system=system))
    assert failures == [] and tokens <= int(full * 0.5)


def test_a_compaction_block_opens_the_tail_turn_only_where_the_provider_would_write_it():
    """``native_merges``: the provider's assistant turn merges at the start of an assistant
    turn of the tail (the seam between the task and that turn takes no turn of its own), never
    before a thinking block (a turn's signed thinking stays first), never into a user turn."""
    from contextfold.summary_assembly import native_merges, with_native_blocks

    block = {"role": "assistant", "content": [{"type": "compaction", "content": "summary", "encrypted_content": "x"}]}
    call = {"role": "assistant", "content": [{"type": "text", "text": "Looking."},
                                             {"type": "tool_use", "id": "t1", "name": "f", "input": {}}]}
    thinking = {"role": "assistant", "content": [{"type": "thinking", "thinking": "hm", "signature": "s"}, call["content"][1]]}
    user = {"role": "user", "content": "more"}
    plan = {"summary_role": None, "merge_at_start": True, "merge_index": 1}
    assert native_merges(plan, [user, call], [block], "anthropic")
    assert with_native_blocks(call, block)["content"] == [*block["content"], *call["content"]]
    assert call["content"][0]["type"] == "text"  # the caller's message is not changed
    assert not native_merges(plan, [user, thinking], [block], "anthropic")
    assert not native_merges(plan, [user, user], [block], "anthropic")
    assert not native_merges({**plan, "merge_at_start": False}, [user, call], [block], "anthropic")
    assert not native_merges({**plan, "summary_role": "assistant"}, [user, call], [block], "anthropic")
    assert not native_merges(plan, [user, call], [block], "bedrock")


@pytest.mark.parametrize("which", ["openai", "anthropic"])
def test_a_failing_provider_compaction_falls_back_to_the_extractive_digest(which):
    with RecordingUpstream(failing) as up:
        if which == "openai":
            items = responses_items(tau()["messages"])
            client: Any = openai.OpenAI(base_url=up.url + "/v1", api_key="sk-test")
            summarizer: Any = OpenAIResponsesCompaction(client, "gpt-4o-mini")
            compactor = cf.Compactor(model="gpt-4o", wire_format="responses", budget=int(cf.estimate(items) * 0.5),
                                     strategy="summarize", summarizer=summarizer)
            result = compactor.compact(items)
        else:
            system, items = anthropic_history()
            client = anthropic.Anthropic(base_url=up.url, api_key="k")
            summarizer = AnthropicCompaction(client, "claude-haiku-4-5")
            compactor = cf.Compactor(provider="anthropic", system=system, strategy="summarize", summarizer=summarizer,
                                     budget=int(cf.estimate(items, provider="anthropic", system=system) * 0.5))
            result = compactor.compact(items)
        client.close()
    assert len(up.seen) == 1  # asked once, its retries off: the fallback is at once
    assert result.strategy_used == "summarize" and result.fallback_used
    assert any("InternalServerError" in n for n in result.notes)
    assert "<contextfold:summary>" in json.dumps(result.messages)
    assert not any(b"compaction" in json.dumps(m).encode() and "encrypted_content" in json.dumps(m) for m in result.messages)
