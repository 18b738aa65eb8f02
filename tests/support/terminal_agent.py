"""A text agent's trajectory rewritten as a tool-calling agent's.

mini-swe-agent fences its command in the assistant's text and gets the observation back as a
user turn (``<returncode>N</returncode><output>...</output>``). Agents that call tools through
the API send the command as a ``terminal`` tool call and get a tool result, wrapped their own
way. The same real runs in those shapes check that what a compaction keeps does not depend on
the wrapper:

- ``"json"``: a JSON envelope ``{"output": ..., "exit_code": N, "error": null}`` (the shape of
  hermes-agent's ``terminal`` tool);
- ``"exit_line"``: the output, then a trailer line ``[Command finished with exit code N]``;
- ``"plain"``: the output alone (no verdict but its words).

The thought before the fence stays the assistant's text; the fence becomes the call.
"""

from __future__ import annotations

import json
import re
from typing import Any

STYLES = ("json", "exit_line", "plain")

TERMINAL_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "terminal",
        "description": "Run a shell command and return its output and exit code.",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
    },
}

_FENCE = re.compile(r"```(?:bash|sh)\s*\n(.*?)\n```", re.S)
_CODE = re.compile(r"<returncode>(-?\d+)</returncode>")
_TAGS = re.compile(r"</?output(?:_head|_tail)?>")


def _result(observation: str, style: str) -> tuple[str, int | None]:
    m = _CODE.match(observation)
    body = _TAGS.sub("", observation[m.end():] if m else observation).strip("\n")
    code = int(m.group(1)) if m else None
    if style == "json":
        return json.dumps({"output": body, "exit_code": -1 if code is None else code, "error": None},
                          ensure_ascii=False), code
    if style == "exit_line" and code is not None:
        return f"{body}\n[Command finished with exit code {code}]", code
    return body, code


def as_terminal_calls(messages: list[dict[str, Any]], style: str) -> tuple[list[dict[str, Any]], list[int | None]]:
    """The trajectory with each fenced command a ``terminal`` call and each observation its
    result in ``style``; also the exit code of each call, in order (None where the harness
    answered without one: a format complaint)."""
    if style not in STYLES:
        raise ValueError(f"style must be one of {STYLES}, got {style!r}")
    out: list[dict[str, Any]] = []
    codes: list[int | None] = []
    pending: str | None = None
    for m in messages:
        content = m.get("content")
        fence = _FENCE.search(content) if m["role"] == "assistant" and isinstance(content, str) else None
        if pending is not None:
            # The harness answers every command once, coded or not (a format complaint); an
            # assistant turn right after a command leaves it without output.
            answered = m["role"] != "assistant"
            text, code = _result(content if answered and isinstance(content, str) else "", style)
            out.append({"role": "tool", "tool_call_id": pending, "content": text})
            codes.append(code if answered else None)
            pending = None
            if answered:
                continue
        if fence is not None:
            pending = f"call_{len(codes) + 1:03d}"
            thought = re.sub(r"^THOUGHT:\s*", "", (content[:fence.start()] + content[fence.end():]).strip())
            out.append({"role": "assistant", "content": thought or None, "tool_calls": [{
                "id": pending, "type": "function",
                "function": {"name": "terminal", "arguments": json.dumps({"command": fence.group(1)})}}]})
        else:
            out.append(dict(m))
    if pending is not None:
        out.pop()  # a call the run never got an answer to: the history ends before it
    return out, codes
