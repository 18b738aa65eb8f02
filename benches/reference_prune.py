"""The pruning agents ship today (JSON-safe arguments, token-budget tail), in pure Python.

Per-message estimate chars/4 + 10 (tool-call repr included); a backward walk that protects the
tail by that estimate; outside it, tool results over a size become a placeholder, images a
placeholder, and long tool-call arguments are sliced with a truncation marker. A new list with
copied dicts for edited messages, as contextfold.prune returns.
"""

from __future__ import annotations

from reference_estimate import reference_message_tokens


def reference_tail_start(messages: list, budget: int, min_tail: int = 3) -> int:
    acc = 0
    start = len(messages)
    while start > 1:
        cost = reference_message_tokens(messages[start - 1])
        if acc + cost > budget:
            break
        acc += cost
        start -= 1
    start = min(start, len(messages) - min_tail)
    # Do not split a call from its results: back up to the assistant that made the calls.
    while 1 < start < len(messages) and messages[start].get("role") == "tool":
        start -= 1
    return max(start, 1)


def reference_prune(messages: list, budget: int, result_max_chars: int = 800, args_max_chars: int = 2000) -> list:
    start = reference_tail_start(messages, budget)
    out = list(messages)
    for i in range(1, start):
        m = messages[i]
        new = None
        content = m.get("content")
        if m.get("role") == "tool" and isinstance(content, str) and len(content) > result_max_chars:
            new = dict(m, content=f"[output pruned: {len(content)} chars]")
        elif isinstance(content, list) and any(p.get("type") == "image_url" for p in content):
            new = dict(m, content=[p if p.get("type") != "image_url" else {"type": "text", "text": "[image omitted]"} for p in content])
        calls = m.get("tool_calls")
        if calls and any(len(c["function"]["arguments"]) > args_max_chars for c in calls):
            new = dict(new or m)
            new["tool_calls"] = [
                dict(c, function=dict(c["function"], arguments=c["function"]["arguments"][:args_max_chars] + "...[truncated]"))
                for c in calls
            ]
        if new is not None:
            out[i] = new
    return out
