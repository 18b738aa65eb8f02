"""The pure-Python estimator agents ship today (tool calls counted whole), as the baseline.

chars / 4 + 10 per message, where a message's chars are its text content, every tool call's
repr (id, type, name, arguments and the syntax around them), and for an image part a fixed
765-token image estimate instead of its base64 length. Same algorithm for dicts and SDK objects.
"""

from __future__ import annotations

from typing import Any

IMAGE_TOKENS = 765
PER_MESSAGE = 10


def _get(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, dict) else getattr(obj, key, None)


def reference_message_tokens(m: Any) -> int:
    chars = 0
    images = 0
    content = _get(m, "content")
    if isinstance(content, str):
        chars += len(content)
    elif isinstance(content, list):
        for part in content:
            kind = _get(part, "type")
            if kind == "text":
                chars += len(_get(part, "text") or "")
            elif kind in ("image_url", "image", "input_image"):
                images += 1
            else:
                chars += len(str(part))
    calls = _get(m, "tool_calls")
    if calls:
        chars += len(str(calls))
    if _get(m, "tool_call_id"):
        chars += len(_get(m, "tool_call_id"))
    return chars // 4 + PER_MESSAGE + images * IMAGE_TOKENS


def reference_estimate_each(messages: list) -> list[int]:
    return [reference_message_tokens(m) for m in messages]


def reference_estimate(messages: list) -> int:
    return sum(reference_message_tokens(m) for m in messages)
