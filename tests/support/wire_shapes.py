"""Test helper: one OpenAI-chat dialogue rewritten in each of the five wire formats.

The same dialogue (system prompt, user and assistant turns, tool calls with their results,
images) becomes an OpenAI chat history, OpenAI Responses input items, Anthropic Messages,
Gemini contents and Bedrock Converse messages, as each API documents them. Consecutive tool
results become one user message where the format groups them (Anthropic, Gemini, Bedrock); the
system prompt becomes the first user message in the formats that take it out of the list.
"""

from __future__ import annotations

import json
from typing import Any

SHAPES = ("openai", "responses", "anthropic", "gemini", "bedrock")
# The estimator profile that prices each shape's provider.
PROVIDER = {"openai": "openai", "responses": "openai", "anthropic": "anthropic", "gemini": "gemini", "bedrock": "anthropic"}


def _text_of(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content if isinstance(p, dict))


def _images(content: Any) -> list[str]:
    """The data URLs of a chat message's image parts."""
    if not isinstance(content, list):
        return []
    return [p["image_url"]["url"] for p in content if isinstance(p, dict) and p.get("type") == "image_url"]


def _b64(url: str) -> tuple[str, str]:
    head, data = url.split(",", 1)
    return head[len("data:"):].split(";")[0], data


def convert(messages: list[dict], shape: str) -> list[dict]:
    """The chat-format ``messages`` in ``shape`` (one of ``SHAPES``)."""
    if shape == "openai":
        return [dict(m) for m in messages]
    out: list[dict] = []
    names: dict[str, str] = {}
    pending: list[dict] = []  # grouped tool results (Anthropic, Gemini, Bedrock)

    def flush() -> None:
        if pending:
            out.append({"role": "user", ("parts" if shape == "gemini" else "content"): list(pending)})
            pending.clear()

    for m in messages:
        role, content = m["role"], m.get("content")
        text, images = _text_of(content), _images(content)
        if role == "tool":
            cid, name = m["tool_call_id"], names.get(m["tool_call_id"], "")
            if shape == "responses":
                out.append({"type": "function_call_output", "call_id": cid, "output": text})
            elif shape == "anthropic":
                block = {"type": "tool_result", "tool_use_id": cid, "content": text}
                if m.get("is_error"):
                    # (A flag the chat shape cannot carry: kept on the test's own tool message.)
                    block["is_error"] = True
                pending.append(block)
            elif shape == "gemini":
                pending.append({"functionResponse": {"id": cid, "name": name, "response": {"result": text}}})
            else:
                result = {"toolUseId": cid, "content": [{"text": text or " "}]}
                if m.get("is_error"):
                    result["status"] = "error"
                pending.append({"toolResult": result})
            continue
        flush()
        calls = m.get("tool_calls") or []
        for c in calls:
            names[c["id"]] = c["function"]["name"]
        if shape == "responses":
            if text or images or not calls:
                parts: Any = text
                if images:
                    kind = "output_text" if role == "assistant" else "input_text"
                    parts = [{"type": kind, "text": text}] + [{"type": "input_image", "image_url": u} for u in images]
                out.append({"role": role, "content": parts})
            for c in calls:
                out.append({"type": "function_call", "call_id": c["id"], "name": c["function"]["name"], "arguments": c["function"]["arguments"]})
            continue
        wire_role = "user" if role == "system" else role
        if shape == "gemini" and wire_role == "assistant":
            wire_role = "model"
        blocks: list[dict] = []
        if text or not (calls or images):
            if shape == "anthropic":
                blocks.append({"type": "text", "text": text})
            else:
                blocks.append({"text": text})
        for u in images:
            mime, data = _b64(u)
            if shape == "anthropic":
                blocks.append({"type": "image", "source": {"type": "base64", "media_type": mime, "data": data}})
            elif shape == "gemini":
                blocks.append({"inlineData": {"mimeType": mime, "data": data}})
            else:
                blocks.append({"image": {"format": mime.split("/")[1], "source": {"bytes": data}}})
        for c in calls:
            args = json.loads(c["function"]["arguments"] or "{}")
            if shape == "anthropic":
                blocks.append({"type": "tool_use", "id": c["id"], "name": c["function"]["name"], "input": args})
            elif shape == "gemini":
                blocks.append({"functionCall": {"id": c["id"], "name": c["function"]["name"], "args": args}})
            else:
                blocks.append({"toolUse": {"toolUseId": c["id"], "name": c["function"]["name"], "input": args}})
        if shape == "anthropic" and len(blocks) == 1 and blocks[0]["type"] == "text":
            out.append({"role": wire_role, "content": text})
        else:
            out.append({"role": wire_role, ("parts" if shape == "gemini" else "content"): blocks})
    flush()
    return out


def _parts(m: dict, shape: str) -> list[dict]:
    """A message's content parts as dicts (none when its content is a string)."""
    parts = m.get("parts" if shape == "gemini" else "content")
    if not isinstance(parts, list):
        return []
    return [p if isinstance(p, dict) else p.model_dump(mode="json", exclude_none=True) for p in parts]


def result_texts(messages: list[Any], shape: str) -> dict[str, str]:
    """The text of every tool result by call id (as JSON text for a Gemini response)."""
    out: dict[str, str] = {}
    for m in messages:
        m = m if isinstance(m, dict) else m.model_dump(mode="json", exclude_none=True)
        if shape == "openai" and m.get("role") == "tool":
            out[m["tool_call_id"]] = _text_of(m["content"])
        elif shape == "responses" and m.get("type") == "function_call_output":
            out[m["call_id"]] = _text_of(m["output"])
        for p in _parts(m, shape):
            if p.get("type") == "tool_result":
                out[p["tool_use_id"]] = _text_of(p["content"])
            elif "functionResponse" in p:
                out[p["functionResponse"]["id"]] = json.dumps(p["functionResponse"]["response"])
            elif "toolResult" in p:
                out[p["toolResult"]["toolUseId"]] = _text_of(p["toolResult"]["content"])
    return out


def arguments(messages: list[Any], shape: str) -> dict[str, Any]:
    """Every call's arguments by call id, parsed (a string must hold valid JSON)."""
    out: dict[str, Any] = {}
    for m in messages:
        m = m if isinstance(m, dict) else m.model_dump(mode="json", exclude_none=True)
        for c in m.get("tool_calls") or []:
            out[c["id"]] = json.loads(c["function"]["arguments"])
        if m.get("type") == "function_call":
            out[m["call_id"]] = json.loads(m["arguments"])
        for p in _parts(m, shape):
            if p.get("type") == "tool_use":
                out[p["id"]] = p["input"]
            elif "functionCall" in p:
                out[p["functionCall"]["id"]] = p["functionCall"]["args"]
            elif "toolUse" in p:
                out[p["toolUse"]["toolUseId"]] = p["toolUse"]["input"]
    return out


def check_converse_message(message: dict[str, Any]) -> None:
    """Fail where ``message`` is not a Bedrock Converse message by botocore's model of the API
    (``Converse``'s input shape); nothing where botocore is not installed (it is not in the
    test extras)."""
    try:
        import botocore.session
        from botocore.validate import ParamValidator
    except ImportError:
        return
    model = botocore.session.get_session().get_service_model("bedrock-runtime")
    shape = model.operation_model("Converse").input_shape
    report = ParamValidator().validate({"modelId": "m", "messages": [message]}, shape)
    assert not report.has_errors(), report.generate_report()
