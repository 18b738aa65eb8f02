"""LangChain messages read by meaning: every message type prices exactly like the OpenAI chat
dicts that say the same thing (role, content, tool calls, tool call id), whatever bookkeeping
(``additional_kwargs``, ``response_metadata``, ids, ``usage_metadata``, ``artifact``) it carries;
the same holds for an application's own pydantic models. Edits (prune, the Compactor) come back
as copies of the caller's classes."""

from __future__ import annotations

import base64
import copy
import json
import struct
import subprocess
import sys
import zlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

import contextfold as cf
from contextfold.errors import InvalidMessageError
from transcripts import LOCAL, load_conversations

pytest.importorskip("langchain_core", reason="pip install '.[test]'")

from langchain_core.messages import (  # noqa: E402
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    ChatMessage,
    ChatMessageChunk,
    FunctionMessage,
    FunctionMessageChunk,
    HumanMessage,
    HumanMessageChunk,
    RemoveMessage,
    SystemMessage,
    SystemMessageChunk,
    ToolMessage,
    ToolMessageChunk,
    convert_to_messages,
    convert_to_openai_messages,
)

PROVIDERS = ("openai", "anthropic", "gemini")


def _png(w: int, h: int) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b"")


PNG = base64.b64encode(_png(800, 600)).decode()
PDF = base64.b64encode(b"%PDF-1.4\n" + b"0" * 3000).decode()
WAV = base64.b64encode(b"RIFF" + b"\0" * 4000).decode()
ARGS = {"city": "Zürich", "days": 3, "units": ["metric"]}
# What LangChain's integrations and convert_to_openai_messages send for those arguments.
ARGS_TEXT = json.dumps(ARGS, ensure_ascii=False)
BOOKKEEPING = {
    "additional_kwargs": {"trace": "x" * 500, "logprobs": list(range(50))},
    "response_metadata": {"model_name": "gpt-4o-2024-08-06", "system_fingerprint": "fp_" + "a" * 40},
    "id": "run-7f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b",
}
USAGE = {"input_tokens": 1200, "output_tokens": 40, "total_tokens": 1240}


def call(id_: str = "call_Ab12Cd34Ef56", name: str = "get_weather", args: dict | None = None) -> dict:
    return {"id": id_, "type": "function", "function": {"name": name, "arguments": json.dumps(ARGS if args is None else args, ensure_ascii=False)}}


LC_CALL = {"id": "call_Ab12Cd34Ef56", "name": "get_weather", "args": ARGS}

# (LangChain message, the OpenAI chat dict that says the same), one per message type and shape.
CASES = {
    "system": (SystemMessage("You are terse.", **BOOKKEEPING), {"role": "system", "content": "You are terse."}),
    "system_chunk": (SystemMessageChunk(content="You are terse."), {"role": "system", "content": "You are terse."}),
    "developer": (
        SystemMessage("Answer in French.", additional_kwargs={"__openai_role__": "developer"}),
        {"role": "developer", "content": "Answer in French."},
    ),
    "human": (HumanMessage("What is the weather in Zürich?", name="alice", **BOOKKEEPING),
              {"role": "user", "name": "alice", "content": "What is the weather in Zürich?"}),
    "human_chunk": (HumanMessageChunk(content="hi"), {"role": "user", "content": "hi"}),
    "human_openai_blocks": (
        HumanMessage([{"type": "text", "text": "What is this?"},
                      {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}", "detail": "high"}}]),
        {"role": "user", "content": [{"type": "text", "text": "What is this?"},
                                     {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}", "detail": "high"}}]},
    ),
    "human_v1_image_base64": (
        HumanMessage(["Describe", {"type": "image", "base64": PNG, "mime_type": "image/png", "id": "blk_1", "extras": {"x": "y" * 300}}]),
        {"role": "user", "content": [{"type": "text", "text": "Describe"},
                                     {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}}]},
    ),
    "human_v1_image_url": (
        HumanMessage([{"type": "image", "url": "https://example.com/cat.png"}]),
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}]},
    ),
    "human_v0_image_base64": (
        HumanMessage([{"type": "image", "source_type": "base64", "data": PNG, "mime_type": "image/png"}]),
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}}]},
    ),
    "human_anthropic_image": (
        HumanMessage([{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}]),
        {"role": "user", "content": [{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}]},
    ),
    "human_v1_file_pdf": (
        HumanMessage([{"type": "file", "base64": PDF, "mime_type": "application/pdf", "filename": "a.pdf"}]),
        {"role": "user", "content": [{"type": "file", "file": {"file_data": f"data:application/pdf;base64,{PDF}", "filename": "a.pdf"}}]},
    ),
    "human_v1_audio": (
        HumanMessage([{"type": "audio", "base64": WAV, "mime_type": "audio/wav"}]),
        {"role": "user", "content": [{"type": "input_audio", "input_audio": {"data": WAV, "format": "wav"}}]},
    ),
    "human_text_plain": (
        HumanMessage([{"type": "text-plain", "text": "notes: buy milk", "mime_type": "text/plain"}]),
        {"role": "user", "content": [{"type": "text", "text": "notes: buy milk"}]},
    ),
    "human_non_standard": (
        HumanMessage([{"type": "non_standard", "value": {"type": "text", "text": "provider-native"}}]),
        {"role": "user", "content": [{"type": "text", "text": "provider-native"}]},
    ),
    "ai_text": (AIMessage("It is sunny.", usage_metadata=USAGE, **BOOKKEEPING), {"role": "assistant", "content": "It is sunny."}),
    "ai_tool_call": (
        AIMessage("", tool_calls=[LC_CALL], usage_metadata=USAGE, **BOOKKEEPING),
        {"role": "assistant", "content": "", "tool_calls": [call()]},
    ),
    "ai_parallel_calls": (
        AIMessage("Checking both.", tool_calls=[LC_CALL, {"id": "call_Zz98", "name": "get_time", "args": {}}]),
        {"role": "assistant", "content": "Checking both.", "tool_calls": [call(), call("call_Zz98", "get_time", {})]},
    ),
    "ai_named": (AIMessage("ok", name="planner"), {"role": "assistant", "name": "planner", "content": "ok"}),
    "ai_blocks_with_reasoning": (
        AIMessage([{"type": "reasoning", "reasoning": "The user wants the weather, so call the tool."},
                   {"type": "text", "text": "Let me check."}], tool_calls=[LC_CALL]),
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "The user wants the weather, so call the tool."},
                                          {"type": "text", "text": "Let me check."}], "tool_calls": [call()]},
    ),
    "ai_anthropic_thinking": (
        AIMessage([{"type": "thinking", "thinking": "Call it.", "signature": "EqQBCkYIARgCIkB" * 8}, {"type": "text", "text": "ok"}]),
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "Call it.", "signature": "EqQBCkYIARgCIkB" * 8},
                                          {"type": "text", "text": "ok"}]},
    ),
    "ai_responses_reasoning_summary": (
        AIMessage([{"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Plan: look it up."}]},
                   {"type": "text", "text": "Done."}]),
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "Plan: look it up."}, {"type": "text", "text": "Done."}]},
    ),
    # ChatAnthropic keeps the call twice (a tool_use block and tool_calls); it is sent once.
    "ai_anthropic_tool_use_repeated": (
        AIMessage([{"type": "text", "text": "Let me check."},
                   {"type": "tool_use", "id": "call_Ab12Cd34Ef56", "name": "get_weather", "input": ARGS}], tool_calls=[LC_CALL]),
        {"role": "assistant", "content": [{"type": "text", "text": "Let me check."}], "tool_calls": [call()]},
    ),
    # output_version="v1" content repeats the call as a tool_call block.
    "ai_v1_tool_call_block_repeated": (
        AIMessage([{"type": "text", "text": "Checking."}, {"type": "tool_call", **LC_CALL}], tool_calls=[LC_CALL]),
        {"role": "assistant", "content": [{"type": "text", "text": "Checking."}], "tool_calls": [call()]},
    ),
    "ai_chunk_from_stream": (
        AIMessageChunk(content="", tool_call_chunks=[{"name": "get_weather", "args": ARGS_TEXT, "id": "call_Ab12Cd34Ef56", "index": 0}]),
        {"role": "assistant", "content": "", "tool_calls": [call()]},
    ),
    "tool": (
        ToolMessage("Sunny, 22 °C", tool_call_id="call_Ab12Cd34Ef56", artifact={"raw": "r" * 2000}, status="error", **BOOKKEEPING),
        {"role": "tool", "tool_call_id": "call_Ab12Cd34Ef56", "content": "Sunny, 22 °C"},
    ),
    "tool_named_with_artifact": (
        ToolMessage("Sunny", tool_call_id="call_1", name="get_weather", artifact=[1, 2, 3]),
        {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "Sunny"},
    ),
    "tool_blocks": (
        ToolMessage([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}], tool_call_id="call_1"),
        {"role": "tool", "tool_call_id": "call_1", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
    ),
    "tool_chunk": (ToolMessageChunk(content="Sunny", tool_call_id="call_1"), {"role": "tool", "tool_call_id": "call_1", "content": "Sunny"}),
    "function": (FunctionMessage("42", name="calculator", **BOOKKEEPING), {"role": "function", "name": "calculator", "content": "42"}),
    "function_chunk": (FunctionMessageChunk(content="42", name="calculator"), {"role": "function", "name": "calculator", "content": "42"}),
    "chat": (ChatMessage("Looks right.", role="critic", **BOOKKEEPING), {"role": "critic", "content": "Looks right."}),
    "chat_chunk": (ChatMessageChunk(content="Looks right.", role="critic"), {"role": "critic", "content": "Looks right."}),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_message_type_prices_like_its_openai_dict(case):
    lc, d = CASES[case]
    for provider in PROVIDERS:
        assert cf.estimate([lc], provider=provider) == cf.estimate([d], provider=provider), provider
        assert cf.estimate_each([lc], provider=provider) == cf.estimate_each([d], provider=provider), provider
    assert cf.estimate([lc], model="gpt-4o") == cf.estimate([d], model="gpt-4o")
    assert cf.count([lc], model="gpt-4o") == cf.count([d], model="gpt-4o")


def test_the_four_message_exchange_prices_like_its_dicts_and_ignores_bookkeeping():
    lc = [CASES[k][0] for k in ("system", "human", "ai_tool_call", "tool")]
    dicts = [CASES[k][1] for k in ("system", "human", "ai_tool_call", "tool")]
    for provider in PROVIDERS:
        assert cf.estimate(lc, provider=provider) == cf.estimate(dicts, provider=provider)
    assert cf.count(lc, model="gpt-4o") == cf.count(dicts, model="gpt-4o")
    assert cf.breakdown(lc).total == cf.estimate(dicts)
    assert cf.breakdown(lc).per_message == cf.breakdown(dicts).per_message
    assert cf.count_each(lc, model="gpt-4o") == cf.count_each(dicts, model="gpt-4o")
    assert cf.estimate_many([lc, lc[:2]]) == cf.estimate_many([dicts, dicts[:2]])
    assert cf.count_many([lc, lc[:2]], model="gpt-4o") == cf.count_many([dicts, dicts[:2]], model="gpt-4o")
    # A session pricing the history as it grows, turn by turn.
    session = cf.Session(provider="openai", model="gpt-4o")
    for n in range(1, len(lc) + 1):
        assert session.estimate(lc[:n]) == cf.estimate(dicts[:n], model="gpt-4o")
    # LangChain's own converter says the same messages.
    assert cf.estimate(convert_to_openai_messages(lc)) == cf.estimate(lc)
    # Bookkeeping of any size changes nothing.
    heavy = [m.model_copy(update={"additional_kwargs": {"blob": "z" * 50_000}, "response_metadata": {"m": "y" * 9000}}) for m in lc]
    assert cf.estimate(heavy) == cf.estimate(lc)


def test_a_history_mixing_dicts_and_langchain_messages_reads_each_by_its_shape():
    mixed = [CASES["system"][1], CASES["human"][0], CASES["ai_tool_call"][1], CASES["tool"][0]]
    dicts = [CASES[k][1] for k in ("system", "human", "ai_tool_call", "tool")]
    assert cf.estimate_each(mixed) == cf.estimate_each(dicts)
    assert cf.find_tail_start(mixed, budget_tokens=10, min_tail=1) == cf.find_tail_start(dicts, budget_tokens=10, min_tail=1)


def test_real_tau_bench_conversation_prices_like_langchains_openai_rendering():
    c = max(load_conversations(LOCAL, "tau-bench-airline"), key=lambda c: len(c["messages"]))
    lc = convert_to_messages(c["messages"])
    dicts = convert_to_openai_messages(lc)
    assert len(lc) > 20
    for provider in PROVIDERS:
        assert cf.estimate_each(lc, provider=provider) == cf.estimate_each(dicts, provider=provider)
    assert cf.count(lc, model="gpt-4o", tools=c["tools"]) == cf.count(dicts, model="gpt-4o", tools=c["tools"])
    assert cf.find_tail_start(lc, budget_tokens=800) == cf.find_tail_start(dicts, budget_tokens=800)


# Random exchanges, compared with LangChain's own OpenAI rendering of them.
_text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=60)
_ids = st.from_regex(r"call_[A-Za-z0-9]{4,24}", fullmatch=True)
_json = st.recursive(
    st.none() | st.booleans() | st.integers(-10**20, 10**20) | st.floats() | _text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
_bookkeeping = st.fixed_dictionaries({}, optional={
    "additional_kwargs": st.dictionaries(st.text(max_size=8), _text, max_size=3),
    "response_metadata": st.dictionaries(st.text(max_size=8), _text, max_size=3),
    "id": _text,
})


@st.composite
def exchanges(draw):
    out: list[BaseMessage] = []
    if draw(st.booleans()):
        out.append(SystemMessage(draw(_text), **draw(_bookkeeping)))
    for _ in range(draw(st.integers(1, 4))):
        out.append(HumanMessage(draw(_text), name=draw(st.none() | st.sampled_from(["alice", "bob"])), **draw(_bookkeeping)))
        calls = [{"id": draw(_ids), "name": draw(st.from_regex(r"[a-z_]{1,20}", fullmatch=True)),
                  "args": draw(st.dictionaries(st.text(max_size=10), _json, max_size=4))}
                 for _ in range(draw(st.integers(0, 3)))]
        out.append(AIMessage(draw(_text), tool_calls=calls, **draw(_bookkeeping)))
        for c in calls:
            out.append(ToolMessage(draw(_text), tool_call_id=c["id"], artifact=draw(_json), **draw(_bookkeeping)))
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(exchanges(), st.sampled_from(PROVIDERS))
def test_random_exchanges_price_like_langchains_openai_rendering(msgs, provider):
    dicts = convert_to_openai_messages(msgs)
    assert cf.estimate(msgs, provider=provider) == cf.estimate(dicts, provider=provider)
    assert cf.estimate_each(msgs, provider=provider) == cf.estimate_each(dicts, provider=provider)
    assert cf.count(msgs, model="gpt-4o") == cf.count(dicts, model="gpt-4o")


# An application's own pydantic models: only the wire keys are read.
class Block(BaseModel):
    text: str
    id: str = "blk_0123456789"
    created_at: float = 1.7e9


class AppMessage(BaseModel):
    role: str
    content: str | list[Block]
    id: str = "msg_0123456789abcdef"
    created_at: float = 1.7e9
    metadata: dict = {"trace": "x" * 400}
    usage: dict = {"input_tokens": 12, "output_tokens": 40}


class AppItem(BaseModel):
    type: str = "custom_step"
    input: str = "ls -la"
    bookkeeping: dict = {"trace": "x" * 400}
    created_at: float = 1.7e9


def test_an_unknown_pydantic_model_prices_like_its_wire_keys_only():
    assert cf.estimate([AppMessage(role="user", content="hello there")]) == cf.estimate([{"role": "user", "content": "hello there"}])
    # A block without a type: read by its keys (pydantic's `json()` method is not a field).
    assert cf.estimate([AppMessage(role="user", content=[Block(text="hello there")])]) == cf.estimate(
        [{"role": "user", "content": [{"text": "hello there"}]}])
    # A part or item no format knows is priced by its size: the size of its wire keys.
    assert cf.estimate([AppItem()]) == cf.estimate([{"type": "custom_step", "input": "ls -la"}])
    assert cf.count([AppMessage(role="user", content="hello there")], model="gpt-4o") == cf.count(
        [{"role": "user", "content": "hello there"}], model="gpt-4o")


def test_a_remove_message_or_an_unknown_type_names_the_message_and_field():
    with pytest.raises(InvalidMessageError) as e:
        cf.estimate([HumanMessage("a"), RemoveMessage(id="x")])
    assert (e.value.index, e.value.field) == (1, "type")
    assert "never sent" in str(e.value)

    class Custom(BaseMessage):
        type: str = "critique"

    with pytest.raises(InvalidMessageError) as e:
        cf.estimate([Custom(content="x")])
    assert (e.value.index, e.value.field) == (0, "type")


BIG = "\n".join(f"-rw-r--r-- 1 root root {i:>6} Nov 23 19:{i % 60:02d} file_{i:04d}.py" for i in range(300))


def agent_history() -> list[BaseMessage]:
    msgs: list[BaseMessage] = [SystemMessage("You list files."), HumanMessage("List /d0 to /d5, and look at the picture.")]
    for i in range(6):
        args = {"path": f"/d{i}", "pattern": "*" * 3000}
        msgs += [AIMessage("", tool_calls=[{"id": f"call_{i}", "name": "ls", "args": args}], id=f"ai-{i}", response_metadata={"n": i}),
                 ToolMessage(f"/d{i}:\n{BIG}", tool_call_id=f"call_{i}", artifact={"n": i}, id=f"tool-{i}")]
    msgs += [HumanMessage([{"type": "text", "text": "and this one?"}, {"type": "image", "base64": PNG, "mime_type": "image/png"}], id="img"),
             AIMessage("A blank picture.")]
    msgs += [HumanMessage("Thanks. Summarize."), AIMessage("Six directories of 300 files.")]
    return msgs


def test_prune_edits_langchain_messages_as_copies_of_their_class():
    msgs = agent_history()
    snap = copy.deepcopy(msgs)
    out = cf.prune(msgs, protect_tail_tokens=40, protect_first_n=2, min_tail=2, tool_result_max_tokens=50, arguments_max_chars=200)
    assert msgs == snap  # the caller's messages are untouched
    assert [type(m) for m in out] == [type(m) for m in msgs]
    assert [m.id for m in out] == [m.id for m in msgs]
    results = [m for m in out if isinstance(m, ToolMessage)]
    assert all("output pruned" in m.content and m.artifact is not None for m in results)
    calls = [m.tool_calls[0] for m in out if isinstance(m, AIMessage) and m.tool_calls]
    assert all(isinstance(c["args"], dict) and len(json.dumps(c["args"])) < 400 and c["args"]["path"].startswith("/d") for c in calls)
    image_msg = next(m for m in out if m.id == "img")
    assert image_msg.content[1]["type"] == "text" and "image omitted" in image_msg.content[1]["text"]
    assert cf.estimate(out) < cf.estimate(msgs) // 10
    # Unedited messages are the caller's objects.
    assert out[0] is msgs[0] and out[-1] is msgs[-1]


def test_the_compactor_returns_langchain_messages_for_a_langchain_history():
    msgs = agent_history()
    snap = copy.deepcopy(msgs)
    for strategy in ("mask", "summarize", "hybrid"):
        r = cf.Compactor(budget=1500, tail_tokens=300, strategy=strategy).compact(msgs)
        assert r.tokens_after < r.tokens_before
        assert all(isinstance(m, BaseMessage) for m in r.messages), strategy
        assert cf.estimate(r.messages) == r.tokens_after
        assert msgs == snap
    assert r.summary  # the last run folded the middle into a summary
    assert any(isinstance(m, AIMessage | HumanMessage) and cf.compactor.OPEN in str(m.content) for m in r.messages)


def test_a_summary_merged_into_a_langchain_message_keeps_its_class_and_ids():
    from contextfold.summary_assembly import merge_into

    human = HumanMessage("the task", id="h1", additional_kwargs={"k": "v"})
    merged = merge_into(human, "<summary>", at_start=True, fmt="chat")
    assert (type(merged), merged.id, merged.additional_kwargs, merged.content) == (HumanMessage, "h1", {"k": "v"}, "<summary>\n\nthe task")
    blocks = AIMessage([{"type": "text", "text": "done"}], id="a1", tool_calls=[LC_CALL])
    merged = merge_into(blocks, "<summary>", at_start=False, fmt="chat")
    assert (type(merged), merged.id, merged.tool_calls[0]["args"]) == (AIMessage, "a1", ARGS)
    assert merged.content == [{"type": "text", "text": "done"}, {"type": "text", "text": "<summary>"}]
    assert human.content == "the task" and blocks.content == [{"type": "text", "text": "done"}]


def test_detection_never_imports_langchain():
    code = ("import sys, contextfold as cf\n"
            "cf.estimate([{'role': 'user', 'content': 'hi'}], provider='openai')\n"
            "class M:\n    role = 'user'\n    content = 'hi'\n"
            "cf.estimate([M()])\n"
            "assert not any(m.startswith('langchain') for m in sys.modules), sorted(sys.modules)\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_wire_bytes_of_langchain_messages_are_those_of_what_is_sent():
    lc = [CASES[k][0] for k in ("system", "human", "ai_tool_call", "tool")]
    sent = convert_to_openai_messages(lc)
    assert cf.wire_bytes(lc) == cf.wire_bytes(sent) == len(json.dumps(sent, separators=(",", ":"), ensure_ascii=False).encode())
    session = cf.Session(provider="openai", model="gpt-4o", max_request_bytes=10**6)
    assert session.wire_bytes(lc) == cf.wire_bytes(sent)


def test_the_summarizer_transcript_reads_langchain_messages_as_what_they_say():
    from contextfold._core import render_transcript

    lc = agent_history()
    assert render_transcript(lc) == render_transcript(convert_to_openai_messages(lc))
    assert "ai-0" not in "\n".join(render_transcript(lc))  # ids are bookkeeping


def test_gemini_thought_signatures_kept_by_langchain_google_genai_are_priced_by_shape():
    # langchain-google-genai keeps a call's signature in additional_kwargs (call id -> base64);
    # it is sent back with the call, so it is priced as the Gemini reader prices thoughtSignature.
    from test_thought_signatures import PER_CHAR, gemini_api_sig, vertex_sig

    def history(sig: str | None) -> list[BaseMessage]:
        kw = {"__gemini_function_call_thought_signatures__": {"c1": sig}} if sig else {}
        return [
            HumanMessage("Read README.md"),
            AIMessage("", tool_calls=[{"name": "read", "args": {"path": "README.md"}, "id": "c1"}], additional_kwargs=kw),
            ToolMessage("contextfold keeps histories inside the window.", tool_call_id="c1"),
        ]

    model = "gemini-3-flash-preview"
    api, none = gemini_api_sig(), history(None)
    with_api = cf.estimate(history(api), provider="gemini", model=model)
    assert abs(with_api - cf.estimate(none, provider="gemini", model=model) - PER_CHAR * len(api)) <= 1
    # A Vertex-issued signature is free and settles the platform, as in Gemini's own messages.
    vertex = history(vertex_sig())
    assert cf.estimate(vertex, provider="gemini", model=model) == cf.estimate(
        vertex, provider="gemini", model="vertex_ai/" + model)
