"""Compact a real agent trajectory to a token budget and show before / after and what was folded.

    python3 examples/compact.py                                   # the bundled SWE trajectory, 1/4 budget
    python3 examples/compact.py examples/swe-trajectory.json 6000 # a history file and a budget (tokens)

The file holds ``{"messages": [...], "model": ..., "tools": [...]}`` or a bare list of
messages. Offline: the default summarizer is contextfold's extractive digest (no LLM, no key).
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import contextfold as cf


def preview(message: object, width: int = 70) -> str:
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, list):
        content = " ".join(str(b.get("text", b.get("type", ""))) for b in content if isinstance(b, dict))
    text = " ".join(str(content or "").split())
    if isinstance(message, dict) and message.get("tool_calls"):
        text = "calls " + ", ".join(c["function"]["name"] for c in message["tool_calls"]) + " " + text
    return text[:width] + ("…" if len(text) > width else "")


def main(argv: list[str]) -> None:
    path = Path(argv[1]) if len(argv) > 1 else Path(__file__).with_name("swe-trajectory.json")
    data = json.loads(path.read_text())
    messages = data["messages"] if isinstance(data, dict) else data
    model = data.get("model") if isinstance(data, dict) else None
    tools = data.get("tools") if isinstance(data, dict) else None
    provider = "gemini" if "gemini" in (model or "") else "anthropic" if "claude" in (model or "") else "openai"
    before = cf.estimate(messages, provider=provider, model=model, tools=tools)
    budget = int(argv[2]) if len(argv) > 2 else before // 4

    compactor = cf.Compactor(provider=provider, model=model, tools=tools, budget=budget)
    result = compactor.compact(messages)

    print(f"{path.name}: {len(messages)} messages, {before:,} tokens ({provider} estimate), budget {budget:,}")
    if not result.changed:
        print(f"nothing done: {result.reason}")
        return
    print(f"strategy: {result.strategy_used}"
          + (" (extractive summary, offline)" if result.summary is not None else " (old outputs masked)"))
    print(f"before -> after: {len(messages)} messages / {result.tokens_before:,} tokens"
          f" -> {len(result.messages)} messages / {result.tokens_after:,} tokens")
    if result.removed:
        print(f"folded: messages {result.removed[0]}-{result.removed[-1]} ({len(result.removed)} messages)"
              " into one summary; the system prompt, the task and the recent tail stay verbatim")
    if result.pruned:
        saved = sum(p.tokens_saved for p in result.pruned)
        print(f"masked: {len(result.pruned)} old outputs, {saved:,} tokens saved")
    for note in result.notes:
        print(f"note: {note}")
    if result.summary:
        print("\nthe summary:")
        lines = result.summary.splitlines()
        for line in lines[:30]:
            print(textwrap.shorten("  " + line, 110, placeholder=" …") if line.strip() else "")
        if len(lines) > 30:
            print(f"  … ({len(lines) - 30} more lines)")
    print("\nthe new history:")
    costs = cf.estimate_each(result.messages, provider=provider, model=model)
    for i, (m, tokens) in enumerate(zip(result.messages, costs)):
        role = m.get("role", m.get("type", "?")) if isinstance(m, dict) else "?"
        print(f"  [{i:>2}] {role:<9} {tokens:>6,} tok  {preview(m)}")


if __name__ == "__main__":
    main(sys.argv)
