"""A history in any wire format, rendered as a plain-text transcript a summarizer model can read.

The summarizer's provider often differs from the conversation's (an Anthropic agent summarized
by a cheap OpenAI model, a Gemini history summarized by a local Ollama model). Replaying the
middle as native turns would not survive that move (tool_use blocks need tool definitions,
Gemini parts and Bedrock blocks mean nothing to OpenAI, thinking signatures are bound to their
model), so every adapter receives the middle as one transcript inside its own request format.

Reads, per message and whatever ``provider`` says (histories mix shapes): OpenAI chat (also
Ollama's native ``tool_calls``/``images`` and every OpenAI-compatible server), OpenAI Responses
input items, Anthropic Messages blocks, Gemini ``contents`` (``parts`` with ``functionCall`` /
``functionResponse``, camelCase or snake_case), Bedrock Converse blocks (``toolUse`` /
``toolResult``), as dicts or SDK objects, and LangChain messages. Binary payloads become a short marker; every text is
capped at ``max_block_chars`` characters (head and tail kept); tool-call arguments are shrunk
with ``contextfold.shrink_json`` so they stay valid JSON.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from contextfold._core import shrink_json
from contextfold.prune import is_langchain_message

__all__ = ["cap_text", "render_message", "render_transcript"]

# Roles as a reader expects them; Gemini's "model" is the assistant.
_ROLE = {"model": "assistant", "developer": "system", "function": "tool"}


def cap_text(text: str, max_chars: int) -> str:
    """``text`` if it has at most ``max_chars`` characters, else its head (2/3) and tail (1/3)
    around a ``…[cut N chars]…`` marker, at most ``max_chars`` characters in all."""
    if len(text) <= max_chars:
        return text
    marker_room = 32
    keep = max(0, max_chars - marker_room)
    head = keep * 2 // 3
    tail = keep - head
    cut = len(text) - head - tail
    return f"{text[:head]}…[cut {cut} chars]…{text[len(text) - tail :] if tail else ''}"


def render_transcript(messages: Sequence[Any], /, *, max_block_chars: int = 8_000) -> list[str]:
    """One text entry per message, ``"[i] role: ..."``, in order (``i`` is the index in
    ``messages``). ``max_block_chars`` caps each text, argument or tool result (characters)."""
    return [render_message(m, i, max_block_chars=max_block_chars) for i, m in enumerate(messages)]


def render_message(message: Any, index: int, /, *, max_block_chars: int = 8_000) -> str:
    """One message (or Responses item) as transcript text; see ``render_transcript``."""
    m = _langchain_as_openai(message) if is_langchain_message(message) else _plain(message)
    if not isinstance(m, dict):
        return f"[{index}] {cap_text(_text_of(m), max_block_chars)}"
    kind = m.get("type")
    if isinstance(kind, str) and kind != "message" and "role" not in m:
        return f"[{index}] " + _responses_item(kind, m, max_block_chars)
    role = str(m.get("role") or "user")
    role = _ROLE.get(role, role)
    lines: list[str] = []
    content = m.get("content")
    if content is None and "parts" in m:
        content = m.get("parts")
    if isinstance(content, str):
        if content:
            lines.append(cap_text(content, max_block_chars))
    elif isinstance(content, list):
        for block in content:
            line = _block(_plain(block), max_block_chars)
            if line:
                lines.append(line)
    for key in ("reasoning_content", "reasoning", "thinking"):
        value = m.get(key)
        if isinstance(value, str) and value:
            lines.append("(thinking) " + cap_text(value, max_block_chars // 4))
    for call in m.get("tool_calls") or []:
        c = _plain(call)
        fn = _plain(c.get("function") or {}) if isinstance(c, dict) else {}
        name = fn.get("name") if isinstance(fn, dict) else None
        args = fn.get("arguments") if isinstance(fn, dict) else None
        call_id = c.get("id") if isinstance(c, dict) else None
        lines.append(_call(name, args, call_id, max_block_chars))
    legacy = m.get("function_call")
    if isinstance(legacy, dict):
        lines.append(_call(legacy.get("name"), legacy.get("arguments"), None, max_block_chars))
    images = m.get("images")
    if isinstance(images, list) and images:
        lines.append(f"[{len(images)} image(s) omitted]")
    if role == "tool":
        ref = m.get("tool_call_id") or m.get("tool_name") or m.get("name")
        label = f"tool result ({ref})" if ref else "tool result"
        return f"[{index}] {label}: " + "\n".join(lines)
    name = m.get("name")
    who = f"{role} ({name})" if isinstance(name, str) and name else role
    return f"[{index}] {who}: " + "\n".join(lines)


def _langchain_as_openai(message: Any) -> Any:
    """A LangChain message as LangChain's own OpenAI chat rendering of it (its bookkeeping
    fields are not part of what was said)."""
    from langchain_core.messages import convert_to_openai_messages

    return convert_to_openai_messages(message)


def _plain(obj: Any) -> Any:
    """Dicts, lists and scalars as they are; SDK objects (pydantic) as their JSON-mode dump."""
    if obj is None or isinstance(obj, (dict, list, str, int, float, bool)):
        return obj
    dump = getattr(obj, "model_dump", None)
    if callable(dump):
        return dump(mode="json", exclude_none=True, by_alias=True)
    if hasattr(obj, "__dict__"):
        return {k: v for k, v in vars(obj).items() if not k.startswith("_") and v is not None}
    return str(obj)


def _get(d: dict[str, Any], *keys: str) -> Any:
    for k in keys:
        if d.get(k) is not None:
            return d[k]
    return None


def _text_of(value: Any) -> str:
    """Text of a tool result / content value: a string, a list of text blocks, or JSON."""
    value = _plain(value)
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = []
        for item in value:
            item = _plain(item)
            if isinstance(item, dict):
                text = _get(item, "text", "output_text")
                if isinstance(text, str):
                    parts.append(text)
                elif "json" in item:
                    parts.append(json.dumps(item["json"], ensure_ascii=False, separators=(",", ":")))
                else:
                    marker = _binary_marker(item)
                    parts.append(
                        marker or json.dumps(item, ensure_ascii=False, separators=(",", ":"), default=str)
                    )
            else:
                parts.append(str(item))
        return "\n".join(parts)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _args(args: Any, max_chars: int) -> str:
    """Tool-call arguments as compact JSON text of at most ``max_chars`` characters."""
    args = _plain(args)
    text = (
        args
        if isinstance(args, str)
        else json.dumps(args, ensure_ascii=False, separators=(",", ":"), default=str)
    )
    if len(text) <= max_chars:
        return text
    return shrink_json(text, max_chars=max(64, max_chars))


def _call(name: Any, args: Any, call_id: Any, max_chars: int) -> str:
    ref = f" [{call_id}]" if call_id else ""
    return f"→ call {name or '?'}{ref} {_args(args if args is not None else {}, max_chars)}"


def _result(ref: Any, body: Any, max_chars: int, *, error: bool = False) -> str:
    label = "← error" if error else "← result"
    return f"{label}{f' [{ref}]' if ref else ''}: {cap_text(_text_of(body), max_chars)}"


def _binary_marker(b: dict[str, Any]) -> str | None:
    kind = b.get("type")
    if kind in ("image", "image_url", "input_image") or "image" in b or "image_url" in b:
        return "[image omitted]"
    if kind in ("document", "file", "input_file") or "document" in b:
        return "[document omitted]"
    if kind in ("input_audio", "audio") or "input_audio" in b:
        return "[audio omitted]"
    data = _get(b, "inlineData", "inline_data")
    if isinstance(data, dict):
        return f"[inline {_get(data, 'mimeType', 'mime_type') or 'data'} omitted]"
    ref = _get(b, "fileData", "file_data")
    if isinstance(ref, dict):
        return f"[file {_get(ref, 'fileUri', 'file_uri') or ''}]"
    return None


def _block(b: Any, max_chars: int) -> str:
    """One content block (OpenAI part, Anthropic block, Gemini part, Bedrock block)."""
    if isinstance(b, str):
        return cap_text(b, max_chars)
    if not isinstance(b, dict):
        return ""
    kind = b.get("type")
    if b.get("thought") is True or kind == "thinking":  # Gemini thought part, Anthropic thinking
        text = _get(b, "thinking", "text")
        return "(thinking) " + cap_text(text, max_chars // 4) if isinstance(text, str) and text else ""
    if kind in ("redacted_thinking",) or "reasoningContent" in b:
        return ""
    if kind == "tool_use" or kind == "server_tool_use":
        return _call(b.get("name"), b.get("input"), b.get("id"), max_chars)
    if kind == "tool_result" or (isinstance(kind, str) and kind.endswith("_tool_result")):
        return _result(b.get("tool_use_id"), b.get("content"), max_chars, error=bool(b.get("is_error")))
    if kind == "compaction":
        return "(earlier summary) " + cap_text(_text_of(b.get("content")), max_chars)
    if isinstance(b.get("text"), str):  # text, input_text, output_text, Gemini and Bedrock text
        return cap_text(b["text"], max_chars)
    if kind == "refusal":
        return "(refusal) " + cap_text(str(b.get("refusal", "")), max_chars)
    use = _get(b, "toolUse", "functionCall", "function_call")
    if isinstance(use, dict):  # Bedrock toolUse, Gemini functionCall
        return _call(use.get("name"), _get(use, "input", "args"), _get(use, "toolUseId", "id"), max_chars)
    result = b.get("toolResult")
    if isinstance(result, dict):  # Bedrock toolResult
        return _result(
            result.get("toolUseId"), result.get("content"), max_chars, error=result.get("status") == "error"
        )
    response = _get(b, "functionResponse", "function_response")
    if isinstance(response, dict):  # Gemini functionResponse
        return _result(response.get("name"), response.get("response"), max_chars)
    code = _get(b, "executableCode", "executable_code")
    if isinstance(code, dict):
        return "→ code " + cap_text(str(code.get("code", "")), max_chars)
    outcome = _get(b, "codeExecutionResult", "code_execution_result")
    if isinstance(outcome, dict):
        return "← code output: " + cap_text(str(outcome.get("output", "")), max_chars)
    marker = _binary_marker(b)
    if marker:
        return marker
    return cap_text(json.dumps(b, ensure_ascii=False, separators=(",", ":"), default=str), max_chars)


def _responses_item(kind: str, m: dict[str, Any], max_chars: int) -> str:
    """An OpenAI Responses input item other than a message."""
    if kind in ("function_call", "custom_tool_call"):
        return "assistant: " + _call(
            m.get("name"), _get(m, "arguments", "input"), m.get("call_id"), max_chars
        )
    if kind in ("function_call_output", "custom_tool_call_output"):
        return f"tool result ({m.get('call_id')}): " + cap_text(_text_of(m.get("output")), max_chars)
    if kind == "reasoning":
        summary = " ".join(
            s.get("text", "")
            for s in (m.get("summary") or [])
            if isinstance(s, dict) and isinstance(s.get("text"), str)
        )
        return (
            "assistant: (thinking) " + cap_text(summary, max_chars // 4)
            if summary
            else "assistant: (reasoning)"
        )
    if kind in ("compaction", "compaction_summary"):
        return "(opaque compaction item from the server, not readable)"
    if kind.endswith("_call") or kind.endswith("_call_output"):  # web_search_call, shell_call, ...
        fields = {k: v for k, v in m.items() if k not in ("id", "type", "status", "encrypted_content")}
        return f"{kind}: " + cap_text(
            json.dumps(fields, ensure_ascii=False, separators=(",", ":"), default=str), max_chars
        )
    return f"{kind}: " + cap_text(_text_of(m.get("content")), max_chars)
