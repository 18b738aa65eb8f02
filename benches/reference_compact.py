"""The compaction pipeline agents ship today, in pure Python: the baseline of bench_compact.

Estimate (chars/4 + 10 per message, reference_estimate), prune old tool output outside the
protected tail (reference_prune), walk the tail back by the same estimate without splitting a
tool group, digest the middle (user requests, tool calls with their arguments and outcome, file
paths, the last assistant text) trimmed to a character budget, and assemble head + summary +
tail with a summary role that avoids both neighbours.
"""

from __future__ import annotations

import json
import re

from reference_estimate import reference_estimate, reference_message_tokens
from reference_prune import reference_prune, reference_tail_start

PATH = re.compile(r"(?:[\w.-]+/)+[\w.-]+\.\w{1,5}|[\w-]+\.(?:py|rs|js|ts|json|md|txt|toml|yaml|cfg|sh)\b")


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


def reference_digest(middle: list, max_tokens: int) -> str:
    results = {m["tool_call_id"]: _text(m.get("content")) for m in middle if m.get("role") == "tool"}
    requests, calls, files, last = [], [], [], ""
    for m in middle:
        role = m.get("role")
        text = _text(m.get("content"))
        if role == "user":
            requests.append(" ".join(text.split())[:400])
        elif role == "assistant":
            if text:
                last = " ".join(text.split())[:400]
            for c in m.get("tool_calls") or []:
                try:
                    args = json.loads(c["function"]["arguments"])
                except ValueError:
                    args = {}
                shown = ", ".join(f"{k}={str(v)[:60]}" for k, v in args.items()) if isinstance(args, dict) else ""
                out = results.get(c["id"], "")
                status = "error" if "error" in out[:400].lower() else "ok"
                calls.append(f"{c['function']['name']}({shown}) -> {status}: {' '.join(out.split())[:80]}")
                files.extend(PATH.findall(c["function"]["arguments"]))
        files.extend(PATH.findall(text))
    seen: set[str] = set()
    files = [f for f in files if not (f in seen or seen.add(f))]
    text = "\n".join(["## User requests", *requests, "## Tool calls", *calls, "## Files", ", ".join(files), "## Last state", last])
    return text[: max_tokens * 4]


def reference_compact(messages: list, budget: int, tail_tokens: int, summary_tokens: int) -> list:
    if reference_estimate(messages) <= budget:
        return list(messages)
    pruned = reference_prune(messages, tail_tokens)
    if reference_estimate(pruned) <= budget:
        return pruned
    head = 2 if len(messages) > 1 and messages[0].get("role") == "system" else 1
    start = reference_tail_start(messages, tail_tokens)
    if start <= head:
        return pruned
    summary = reference_digest(messages[head:start], summary_tokens)
    prev, nxt = messages[head - 1].get("role"), messages[start].get("role")
    role = "user" if prev != "user" and nxt != "user" else "assistant"
    out = messages[:head] + [{"role": role, "content": summary}] + messages[start:]
    assert sum(reference_message_tokens(m) for m in out) > 0
    return out
