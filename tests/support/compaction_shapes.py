"""OpenAI-chat histories converted to the other wire formats, and independent checks of a
history's shape (pairs, roles), for the compaction tests and tools/compaction_report.py.

Plain Python written apart from the core, so a test that compares the two can fail.
"""

from __future__ import annotations

import json
import re
from typing import Any

FORMATS = ("chat", "anthropic", "responses", "gemini", "bedrock")

#: The provider whose estimator prices each of ``FORMATS``.
PROVIDER = {"chat": "openai", "responses": "openai", "anthropic": "anthropic", "gemini": "gemini", "bedrock": "anthropic"}


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "\n".join(p.get("text", "") for p in content if isinstance(p, dict))


def _merge_same_role(msgs: list[dict], key: str) -> list[dict]:
    out: list[dict] = []
    for m in msgs:
        if out and out[-1]["role"] == m["role"]:
            out[-1] = dict(out[-1], **{key: out[-1][key] + m[key]})
        else:
            out.append(m)
    return out


def convert(messages: list[dict], fmt: str) -> tuple[list[dict], Any]:
    """``(messages, system)`` of an OpenAI chat history in ``fmt`` (system separate where the
    format keeps it apart; for chat and Responses it stays a message and ``system`` is None)."""
    if fmt == "chat":
        return messages, None
    system = "\n".join(_text(m["content"]) for m in messages if m["role"] == "system") or None
    rest = [m for m in messages if m["role"] != "system"]
    if fmt == "responses":
        out: list[dict] = [{"role": "system", "content": system}] if system else []
        for m in rest:
            if m["role"] == "tool":
                out.append({"type": "function_call_output", "call_id": m["tool_call_id"], "output": _text(m["content"])})
                continue
            if _text(m.get("content")):
                out.append({"role": m["role"], "content": _text(m["content"])})
            for c in m.get("tool_calls") or []:
                out.append({"type": "function_call", "call_id": c["id"], "name": c["function"]["name"],
                            "arguments": c["function"]["arguments"]})
        return out, None
    if fmt == "anthropic":
        out = []
        for m in rest:
            if m["role"] == "tool":
                out.append({"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": m["tool_call_id"], "content": _text(m["content"])}]})
                continue
            blocks: list[dict] = []
            if _text(m.get("content")):
                blocks.append({"type": "text", "text": _text(m["content"])})
            for c in m.get("tool_calls") or []:
                blocks.append({"type": "tool_use", "id": c["id"], "name": c["function"]["name"],
                               "input": json.loads(c["function"]["arguments"] or "{}")})
            out.append({"role": m["role"], "content": blocks or [{"type": "text", "text": "(empty)"}]})
        return _merge_same_role(out, "content"), system
    if fmt == "gemini":
        names = {c["id"]: c["function"]["name"] for m in rest for c in m.get("tool_calls") or []}
        out = []
        for m in rest:
            if m["role"] == "tool":
                out.append({"role": "user", "parts": [{"functionResponse": {
                    "id": m["tool_call_id"], "name": names.get(m["tool_call_id"], ""),
                    "response": {"result": _text(m["content"])}}}]})
                continue
            parts: list[dict] = []
            if _text(m.get("content")):
                parts.append({"text": _text(m["content"])})
            for c in m.get("tool_calls") or []:
                parts.append({"functionCall": {"id": c["id"], "name": c["function"]["name"],
                                               "args": json.loads(c["function"]["arguments"] or "{}")}})
            out.append({"role": "model" if m["role"] == "assistant" else "user", "parts": parts or [{"text": "(empty)"}]})
        return _merge_same_role(out, "parts"), [{"text": system}] if system else None
    if fmt == "bedrock":
        out = []
        for m in rest:
            if m["role"] == "tool":
                out.append({"role": "user", "content": [{"toolResult": {
                    "toolUseId": m["tool_call_id"], "content": [{"text": _text(m["content"])}]}}]})
                continue
            blocks = []
            if _text(m.get("content")):
                blocks.append({"text": _text(m["content"])})
            for c in m.get("tool_calls") or []:
                blocks.append({"toolUse": {"toolUseId": c["id"], "name": c["function"]["name"],
                                           "input": json.loads(c["function"]["arguments"] or "{}")}})
            out.append({"role": m["role"], "content": blocks or [{"text": "(empty)"}]})
        return _merge_same_role(out, "content"), [{"text": system}] if system else None
    raise ValueError(fmt)


def _blocks(m: dict) -> list:
    c = m.get("content", m.get("parts"))
    return c if isinstance(c, list) else []


def calls_and_results(m: dict) -> tuple[list[str], list[str]]:
    """Ids of the calls a message makes and of the results it carries, in any format."""
    calls = [c["id"] for c in m.get("tool_calls") or []]
    results = [m["tool_call_id"]] if m.get("tool_call_id") else []
    if m.get("type") == "function_call":
        calls.append(m["call_id"])
    if m.get("type") == "function_call_output":
        results.append(m["call_id"])
    for b in _blocks(m):
        if not isinstance(b, dict):
            continue
        if b.get("type") == "tool_use":
            calls.append(b["id"])
        if b.get("type") == "tool_result":
            results.append(b["tool_use_id"])
        if "toolUse" in b:
            calls.append(b["toolUse"]["toolUseId"])
        if "toolResult" in b:
            results.append(b["toolResult"]["toolUseId"])
        if "functionCall" in b:
            calls.append(b["functionCall"].get("id") or b["functionCall"]["name"])
        if "functionResponse" in b:
            results.append(b["functionResponse"].get("id") or b["functionResponse"]["name"])
    return calls, results


def shape_problems(messages: list, fmt: str) -> list[str]:
    """What a provider of ``fmt`` would reject: unanswered calls, results without their call
    (chat: in the run of tool messages right after; Anthropic / Gemini / Bedrock: in the next
    message), same-role neighbours, a first turn that is not the user's and content the API takes
    as none (strict formats), arguments that are not JSON, a Responses reasoning item without the
    item it belongs to, call ids the provider refuses."""
    problems = []
    strict = fmt in ("anthropic", "gemini", "bedrock")
    msgs = [m if isinstance(m, dict) else m.model_dump() for m in messages]
    open_calls: dict[str, int] = {}
    for i, m in enumerate(msgs):
        calls, results = calls_and_results(m)
        if strict:
            prev_calls = set(calls_and_results(msgs[i - 1])[0]) if i else set()
            problems += [f"{i}: result {r} not right after its call" for r in results if r not in prev_calls]
            next_results = set(calls_and_results(msgs[i + 1])[1]) if i + 1 < len(msgs) else set()
            problems += [f"{i}: call {c} unanswered" for c in calls if c not in next_results]
        else:
            for r in results:
                if open_calls.pop(r, None) is None:
                    problems.append(f"{i}: result {r} without a call")
            if fmt == "chat" and m.get("role") != "tool" and open_calls:
                problems += [f"{j}: call {c} unanswered" for c, j in open_calls.items()]
                open_calls.clear()
            for c in calls:
                open_calls[c] = i
        for c in m.get("tool_calls") or []:
            try:
                json.loads(c["function"]["arguments"])
            except ValueError:
                problems.append(f"{i}: arguments not JSON")
        if m.get("type") == "function_call":
            try:
                json.loads(m["arguments"])
            except ValueError:
                problems.append(f"{i}: arguments not JSON")
    if not strict:
        problems += [f"{j}: call {c} unanswered" for c, j in open_calls.items()]
    if fmt == "responses":
        # OpenAI: "Item 'rs_..' of type 'reasoning' was provided without its required following
        # item": a reasoning item precedes the call or assistant message it belongs to.
        for i, m in enumerate(msgs):
            if m.get("type") == "reasoning":
                nxt = msgs[i + 1] if i + 1 < len(msgs) else None
                # An output item of the model: more reasoning, a call (function, custom or
                # hosted: `tool_search_call`, `web_search_call`, ...) or its message.
                kind = str(nxt.get("type", "")) if nxt is not None else ""
                if nxt is None or not (kind == "reasoning" or kind.endswith("_call") or nxt.get("role") == "assistant"):
                    problems.append(f"{i}: reasoning item without its following item")
    # Call ids: Anthropic "tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'";
    # Bedrock `toolUseId` the same pattern, 1-64 characters; Responses `call_id` at most 64.
    word_id = re.compile(r"[a-zA-Z0-9_-]+")
    for i, m in enumerate(msgs):
        for c in calls_and_results(m)[0]:
            if fmt in ("anthropic", "bedrock") and not word_id.fullmatch(c):
                problems.append(f"{i}: call id {c!r} not of [a-zA-Z0-9_-]+")
            if fmt in ("bedrock", "responses") and len(c) > 64:
                problems.append(f"{i}: call id {c!r} over 64 characters")
    # Content the API takes as none: Anthropic refuses an empty or whitespace-only text block
    # ("text content blocks must contain non-whitespace text") and a message without content
    # but the final assistant one ("all messages must have non-empty content except for the
    # optional final assistant message"); Bedrock an empty text block ("The text field in the
    # ContentBlock object at messages.N.content.0 is blank"); Gemini a turn without parts.
    if strict:
        blank = (lambda t: not t.strip()) if fmt == "anthropic" else (lambda t: t == "") if fmt == "bedrock" \
            else (lambda t: False)
        for i, m in enumerate(msgs):
            content = m.get("parts" if fmt == "gemini" else "content")
            final_assistant = i == len(msgs) - 1 and m.get("role") in ("assistant", "model")
            if isinstance(content, str):
                if blank(content) and not final_assistant:
                    problems.append(f"{i}: blank content")
            elif not content:
                problems.append(f"{i}: no content")
            else:
                problems += [f"{i}: blank text block {k}" for k, b in enumerate(content)
                             if isinstance(b, dict) and isinstance(b.get("text"), str) and blank(b["text"])
                             and b.get("type", "text") == "text"]
            # "final assistant content cannot end with trailing whitespace" (Anthropic, and
            # Claude through Converse).
            if final_assistant and fmt in ("anthropic", "bedrock"):
                last = content if isinstance(content, str) else next(
                    (b.get("text") for b in reversed(content or []) if isinstance(b, dict)
                     and not (isinstance(b.get("text"), str) and blank(b["text"]))), None)
                if isinstance(last, str) and last[-1:].isspace():
                    problems.append(f"{i}: final assistant text ends in whitespace")
    if strict:
        roles = [m.get("role") for m in msgs if m.get("role") != "system"]
        if roles and roles[0] != "user":
            problems.append("first turn is not the user's")
        problems += [f"{k}: two {a} turns in a row" for k, (a, b) in enumerate(zip(roles, roles[1:])) if a == b]
    return problems


def same_role_pairs(messages: list) -> int:
    """Neighbours sharing a user / assistant role (tool messages and items without a role
    excluded)."""
    roles = [(m if isinstance(m, dict) else m.model_dump()).get("role") for m in messages]
    roles = ["assistant" if r == "model" else r for r in roles]
    return sum(1 for a, b in zip(roles, roles[1:]) if a == b and a in ("user", "assistant"))
