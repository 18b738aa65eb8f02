"""The folded middle reaches a summarizer of any provider as a transcript, whatever the
conversation's wire format: OpenAI chat (dicts and SDK objects), Responses items, Anthropic,
Gemini (dicts and google-genai objects), Bedrock Converse, Ollama native.

Real dialogues (tau-bench airline, tests/data) are converted to each shape; every tool name,
call id, short argument value and tool result must survive into the transcript, and nothing
opaque (thinking signatures, encrypted reasoning) may leak into it.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import contextfold
from contextfold import LLMSummarizer, SummaryRequest, SummaryResult
from contextfold._core import cap_text, render_transcript
from replay_server import ReplayServer, recorded
from transcripts import LOCAL, load_conversations

SIGNATURE = "EqQBCkYIBxgCKkDs" + "s1gn" * 40


def dialogues() -> list[list[dict[str, Any]]]:
    """The tau-bench airline dialogues without their system prompt (the pinned head)."""
    return [
        [m for m in c["messages"] if m["role"] != "system"]
        for c in load_conversations(LOCAL, "tau-bench-airline")
    ]


def _calls(m: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (c["id"], c["function"]["name"], json.loads(c["function"]["arguments"]))
        for c in m.get("tool_calls") or []
    ]


def to_anthropic(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for m in history:
        if m["role"] == "tool":
            block = {"type": "tool_result", "tool_use_id": m["tool_call_id"], "content": m["content"]}
            if out and out[-1]["role"] == "user" and isinstance(out[-1]["content"], list):
                out[-1]["content"].append(block)
            else:
                out.append({"role": "user", "content": [block]})
        elif m["role"] == "assistant":
            blocks: list[dict[str, Any]] = [
                {"type": "thinking", "thinking": "Checking the policy first.", "signature": SIGNATURE}
            ]
            if m.get("content"):
                blocks.append({"type": "text", "text": m["content"]})
            blocks += [{"type": "tool_use", "id": i, "name": n, "input": a} for i, n, a in _calls(m)]
            out.append({"role": "assistant", "content": blocks})
        else:
            out.append({"role": "user", "content": m["content"]})
    return out


def to_gemini(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for m in history:
        if m["role"] == "tool":
            out.append(
                {
                    "role": "user",
                    "parts": [
                        {"functionResponse": {"name": m["name"], "response": {"result": m["content"]}}}
                    ],
                }
            )
        elif m["role"] == "assistant":
            parts: list[dict[str, Any]] = [{"text": m["content"]}] if m.get("content") else []
            parts += [
                {"functionCall": {"name": n, "args": a}, "thoughtSignature": SIGNATURE}
                for _, n, a in _calls(m)
            ]
            out.append({"role": "model", "parts": parts})
        else:
            out.append({"role": "user", "parts": [{"text": m["content"]}]})
    return out


def to_bedrock(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for m in history:
        if m["role"] == "tool":
            out.append(
                {
                    "role": "user",
                    "content": [
                        {"toolResult": {"toolUseId": m["tool_call_id"], "content": [{"text": m["content"]}]}}
                    ],
                }
            )
        elif m["role"] == "assistant":
            blocks: list[dict[str, Any]] = [{"text": m["content"]}] if m.get("content") else []
            blocks += [{"toolUse": {"toolUseId": i, "name": n, "input": a}} for i, n, a in _calls(m)]
            out.append({"role": "assistant", "content": blocks})
        else:
            out.append({"role": "user", "content": [{"text": m["content"]}]})
    return out


def to_responses(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for m in history:
        if m["role"] == "tool":
            out.append({"type": "function_call_output", "call_id": m["tool_call_id"], "output": m["content"]})
        elif m["role"] == "assistant":
            out.append({"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": SIGNATURE})
            if m.get("content"):
                out.append(
                    {
                        "type": "message",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": m["content"]}],
                    }
                )
            out += [
                {"type": "function_call", "call_id": i, "name": n, "arguments": json.dumps(a)}
                for i, n, a in _calls(m)
            ]
        else:
            out.append({"role": "user", "content": m["content"]})
    return out


def to_ollama(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for m in history:
        if m["role"] == "assistant":
            calls = [{"function": {"name": n, "arguments": a}} for _, n, a in _calls(m)]
            out.append(
                {
                    "role": "assistant",
                    "content": m.get("content") or "",
                    **({"tool_calls": calls} if calls else {}),
                }
            )
        elif m["role"] == "tool":
            out.append({"role": "tool", "tool_name": m["name"], "content": m["content"]})
        else:
            out.append(m)
    return out


SHAPES = {
    "openai": lambda h: h,
    "anthropic": to_anthropic,
    "gemini": to_gemini,
    "bedrock": to_bedrock,
    "responses": to_responses,
    "ollama": to_ollama,
}


def identifiers(history: list[dict[str, Any]], *, with_ids: bool) -> set[str]:
    """Tool names, call ids and short string argument values of a chat history."""
    out: set[str] = set()
    for m in history:
        for call_id, name, args in _calls(m):
            out.add(name)
            if with_ids:
                out.add(call_id)
            out |= {v for v in args.values() if isinstance(v, str) and 0 < len(v) <= 40}
    return out


@pytest.mark.parametrize("shape", SHAPES)
def test_every_identifier_of_real_dialogues_survives_in_each_wire_format(shape: str) -> None:
    checked = 0
    for history in dialogues():
        converted = SHAPES[shape](history)
        text = "\n".join(render_transcript(converted, max_block_chars=100_000))
        # Gemini and Ollama native calls carry no ids
        for ident in identifiers(history, with_ids=shape not in ("gemini", "ollama")):
            assert ident in text, (shape, ident)
            checked += 1
        for m in history:
            if m["role"] == "tool":
                assert m["content"][:60] in text or json.dumps(m["content"])[1:60] in text
            elif m["role"] == "user":
                assert m["content"][:60] in text
        assert SIGNATURE not in text and "s1gns1gn" not in text
    assert checked > 100


def test_each_message_is_one_entry_with_its_index_and_role() -> None:
    history = dialogues()[0]
    for shape in SHAPES:
        if shape == "responses":
            continue  # items, not messages: more entries than chat messages
        entries = render_transcript(SHAPES[shape](history))
        roles = [e.split(" ", 2)[1].rstrip(":") for e in entries]
        assert all(e.startswith(f"[{i}] ") for i, e in enumerate(entries))
        assert set(roles) <= {"user", "assistant", "tool"}, (shape, set(roles))
    anthropic_entries = render_transcript(to_anthropic(history))
    assert any("(thinking) Checking the policy first." in e for e in anthropic_entries)


def test_sdk_objects_render_like_their_dicts() -> None:
    openai_types = pytest.importorskip("openai.types.chat")
    history = dialogues()[0][:12]
    objects = [
        openai_types.ChatCompletionMessage.model_validate(m) if m["role"] == "assistant" else m
        for m in history
    ]
    assert render_transcript(objects) == render_transcript(history)
    genai_types = pytest.importorskip("google.genai.types", reason="google-genai not installed")
    contents = to_gemini(history)
    assert render_transcript([genai_types.Content.model_validate(c) for c in contents]) == render_transcript(
        contents
    )


def test_long_texts_are_capped_head_and_tail_and_arguments_stay_json() -> None:
    big = "START " + "x" * 20_000 + " END"
    args = json.dumps({"path": "src/app.py", "content": "y" * 20_000})
    history = [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "write_file", "arguments": args}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": big},
    ]
    call, result = render_transcript(history, max_block_chars=1_000)
    shrunk = call.split("→ call write_file [c1] ", 1)[1]
    assert len(shrunk) <= 1_000 and json.loads(shrunk)["path"] == "src/app.py"
    assert result.startswith("[1] tool result (c1): START") and result.endswith(" END")
    assert len(result) < 1_100 and "…[cut " in result
    assert cap_text("short", 10) == "short"
    assert len(cap_text("z" * 5000, 300)) <= 300


def test_images_and_opaque_items_become_markers() -> None:
    history = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "see"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64," + "A" * 5000}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "B" * 5000}}
            ],
        },
        {"role": "user", "parts": [{"inlineData": {"mimeType": "image/jpeg", "data": "C" * 5000}}]},
        {"type": "compaction", "id": "cmp_1", "encrypted_content": "D" * 500},
        {
            "role": "assistant",
            "content": [{"type": "redacted_thinking", "data": "E" * 500}, {"type": "text", "text": "ok"}],
        },
    ]
    text = "\n".join(render_transcript(history))
    lines = render_transcript(history)
    # Every image, whatever its format's block, is one marker.
    assert all(line.endswith("[image omitted]") for line in lines[:3]), lines
    assert "opaque compaction item" in text
    assert not any(c * 100 in text for c in "ABCDE")


@pytest.mark.parametrize("shape", ["anthropic", "gemini", "bedrock", "responses"])
def test_a_foreign_history_is_summarized_by_an_openai_model(shape: str) -> None:
    history = dialogues()[1]
    provider = {"anthropic": "anthropic", "gemini": "gemini", "bedrock": "anthropic", "responses": "openai"}[
        shape
    ]
    request = SummaryRequest(SHAPES[shape](history), provider)
    template = "\n".join(f"## {s}\nok" for s in contextfold.summarize.SECTIONS)
    openai = pytest.importorskip("openai")

    class Fallback:
        def summarize(self, r: SummaryRequest) -> SummaryResult:
            return SummaryResult("digest")

        async def asummarize(self, r: SummaryRequest) -> SummaryResult:
            return SummaryResult("digest")

    with ReplayServer(recorded("test_max_completion_tokens[gpt-4o-mini].yaml#0", text=template)) as server:
        summarizer = LLMSummarizer(
            openai.OpenAI(base_url=server.url + "/v1", api_key="test"), "gpt-4o-mini", fallback=Fallback()
        )
        result = summarizer.summarize(request)
    assert result.fallback_used is False, result.error
    user = server.requests[0].body["messages"][1]["content"]
    for ident in identifiers(history, with_ids=shape != "gemini"):
        assert ident in user, ident
