"""Command line: `contextfold report FILE` prints where a history's tokens go.

FILE is JSON: a list of messages, or an object with "messages" and optionally "provider",
"model", "tools", "system" and "requests" (recorded model calls with their reported
`usage_prompt_tokens`, as in the bundled example), or a JSONL file whose first line is such an
object.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import contextfold


def _load(path: Path) -> dict[str, Any]:
    text = path.read_text()
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        data = json.loads(text.splitlines()[0])
    if isinstance(data, list):
        data = {"messages": data}
    if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
        raise SystemExit(f"{path}: expected a list of messages or an object with 'messages'")
    return data


def _kind(m: Any) -> str:
    role = m.get("role") if isinstance(m, dict) else getattr(m, "role", None)
    if isinstance(m, dict) and m.get("tool_calls"):
        return "assistant+tool_calls"
    return str(role or (m.get("type") if isinstance(m, dict) else "?"))


def _preview(m: Any, width: int = 60) -> str:
    content = m.get("content") if isinstance(m, dict) else None
    if isinstance(content, list):
        content = " ".join(str(p.get("text", f"<{p.get('type')}>")) for p in content if isinstance(p, dict))
    if not content and isinstance(m, dict) and m.get("tool_calls"):
        content = ", ".join(c["function"]["name"] for c in m["tool_calls"])
    s = " ".join(str(content or "").split())
    return s[: width - 1] + "…" if len(s) > width else s


def report(data: dict[str, Any], *, provider: str | None, model: str | None, top: int, tail_budget: int | None = None) -> str:
    """The token breakdown of one history, as text."""
    msgs = data["messages"]
    provider = provider or data.get("provider") or "openai"
    model = model or data.get("model")
    tools, system = data.get("tools"), data.get("system")
    each = contextfold.estimate_each(msgs, provider=provider, model=model)
    overhead = contextfold.request_overhead(provider=provider, model=model, tools=tools, system=system)
    total = sum(each) + overhead
    lines = [
        f"history: {len(msgs)} messages, provider {provider!r}" + (f", model {model!r}" if model else ""),
        f"estimated prompt tokens: {total:,}  (messages {sum(each):,} + overhead {overhead:,})",
        f"wire size: {contextfold.wire_bytes(msgs, provider=provider):,} bytes of JSON",
        "",
        f"{'by kind':24s} {'messages':>9s} {'tokens':>10s} {'share':>6s}",
    ]
    by_kind: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for m, t in zip(msgs, each):
        k = _kind(m)
        by_kind[k][0] += 1
        by_kind[k][1] += t
    for k, (n, t) in sorted(by_kind.items(), key=lambda kv: -kv[1][1]):
        lines.append(f"{k:24s} {n:9d} {t:10,d} {t / max(total, 1):6.1%}")
    lines += ["", f"largest {top} messages:"]
    for i in sorted(range(len(msgs)), key=lambda i: -each[i])[:top]:
        lines.append(f"  #{i:<5d} {_kind(msgs[i]):22s} {each[i]:8,d}  {_preview(msgs[i])}")
    budget = tail_budget or max(1, total // 4)
    start = contextfold.find_tail_start(msgs, budget_tokens=budget, provider=provider, model=model)
    pruned = contextfold.prune(msgs, protect_tail_tokens=budget, provider=provider, model=model)
    pruned_total = contextfold.estimate(pruned, provider=provider, model=model, tools=tools, system=system)
    lines += [
        "",
        f"compaction plan with a {budget:,}-token tail:",
        f"  protected tail: messages {start}..{len(msgs) - 1} ({sum(each[start:]):,} tokens)",
        f"  to summarize:   messages 1..{start - 1} ({sum(each[1:start]):,} tokens)" if start > 1 else "  nothing to summarize",
        f"  prune alone (old tool output, images, long arguments): {total:,} -> {pruned_total:,} tokens",
    ]
    requests = data.get("requests") or []
    recorded = [(r["n_messages"], r["usage_prompt_tokens"]) for r in requests if r.get("usage_prompt_tokens")]
    if recorded:
        errs = []
        for n, real in recorded:
            est = sum(each[:n]) + overhead
            errs.append(est / real - 1)
        errs.sort()
        n_last, real_last = recorded[-1]
        lines += [
            "",
            f"against the provider's reported prompt tokens ({len(recorded)} recorded calls):",
            f"  last call: estimate {sum(each[:n_last]) + overhead:,} vs reported {real_last:,}",
            f"  median error {errs[len(errs) // 2]:+.1%}, worst {max(errs, key=abs):+.1%}",
        ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="contextfold", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rep = sub.add_parser("report", help="token breakdown of a history")
    rep.add_argument("file", type=Path)
    rep.add_argument("--provider", choices=contextfold.PROVIDERS)
    rep.add_argument("--model")
    rep.add_argument("--top", type=int, default=8, help="how many of the largest messages to list")
    rep.add_argument("--tail-budget", type=int, help="tokens of the protected tail (default: a quarter of the estimate)")
    sub.add_parser("version", help="print the version")
    args = parser.parse_args(argv)
    if args.command == "version":
        print(contextfold.__version__)
        return 0
    try:
        print(report(_load(args.file), provider=args.provider, model=args.model, top=args.top, tail_budget=args.tail_budget))
    except contextfold.InvalidMessageError as e:
        print(f"{args.file}: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
