"""Dump every compaction of the shared conversations, to compare two builds byte for byte.

    python benches/dump_compactions.py OUT.jsonl                      # one line per case
    python benches/dump_compactions.py OUT.jsonl --compare BEFORE.jsonl
    python benches/dump_compactions.py OUT.jsonl --quick              # 10 histories per data set

Cases: every tau-bench airline dialogue and SWE trajectory of ``../shared/data`` (tests/data
when absent), in each of the five wire formats (``tests/support/compaction_shapes.convert``),
with each strategy at three budgets (as ``tools/compaction_report.py`` sets them: the head plus
30%, 50% or 70% of the rest), then a second compaction of the result grown by two turns
(iterative: a previous summary merged); and the synthetic 10,000-message history at the budget
of ``benches/bench_compact_peers.py``, with and without a summary cap. Each line holds the
case and a SHA-256 of everything the result carries (messages as JSON, summary, token counts,
removed, pruned, notes, the error raised), so a speed change that alters any output shows.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests" / "support"))

import contextfold as cf  # noqa: E402
from compaction_shapes import FORMATS, convert  # noqa: E402
from synthetic import synthetic_history  # noqa: E402
from transcripts import LOCAL, SHARED, load_conversations, shared_available  # noqa: E402

SHARES = (0.3, 0.5, 0.7)
STRATEGIES = ("mask", "summarize", "hybrid")


def provider_of(fmt: str) -> str:
    return {"anthropic": "anthropic", "gemini": "gemini", "bedrock": "anthropic"}.get(fmt, "openai")


def fingerprint(result: Any) -> str:
    """SHA-256 of everything a compaction result carries."""
    body = {
        "messages": result.messages,
        "summary": result.summary,
        "tokens": [result.tokens_before, result.tokens_after],
        "removed": list(result.removed),
        "pruned": [[p.index, p.kind, p.slot, p.tokens_saved] for p in result.pruned],
        "strategy": result.strategy_used,
        "reason": result.reason,
        "notes": list(result.notes),
        "hash": getattr(result, "summary_hash", None),
    }
    # Keys in their own order: a dict that says the same in another order is other bytes on the wire.
    text = json.dumps(body, default=repr, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def run(c: cf.Compactor, msgs: list) -> tuple[str, Any]:
    try:
        r = c.compact(msgs)
    except cf.CompactionError as e:
        return f"{type(e).__name__}: {e}", None
    return fingerprint(r), r


def cases(quick: bool) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    root = SHARED if shared_available() else LOCAL
    for dataset in ("tau-bench-airline", "mini-swe-agent-gemini3"):
        convs = load_conversations(root, dataset)
        if quick:
            convs = convs[:10]
        for i, conv in enumerate(convs):
            chat, tools = conv["messages"], conv.get("tools")
            for fmt in FORMATS:
                msgs, system = convert(chat, fmt)
                kw: dict[str, Any] = dict(provider=provider_of(fmt), system=system, tools=tools)
                before = cf.estimate(msgs, **kw)
                first_user = next((k for k, m in enumerate(msgs) if m.get("role") == "user"), 0)
                floor = cf.estimate(msgs[: first_user + 1], **kw)
                for strategy in STRATEGIES:
                    for share in SHARES:
                        budget = int(floor + share * (before - floor))
                        c = cf.Compactor(budget=budget, strategy=strategy, **kw)
                        fp, r = run(c, msgs)
                        out.append((f"{dataset}/{i}/{fmt}/{strategy}/{share}", fp))
                        if r is not None and r.summary is not None and fmt == "chat":
                            # A second compaction: the grown result, its summary merged.
                            grown = list(r.messages) + [
                                {"role": "user", "content": "Now also check the other cases, please."},
                                {"role": "assistant", "content": "Checked: nothing else fails."}]
                            fp2, _ = run(c, grown)
                            out.append((f"{dataset}/{i}/{fmt}/{strategy}/{share}/again", fp2))
    h = synthetic_history(10_000)
    budget = cf.estimate(h) // 3
    for cap in (None, 4_000):
        c = cf.Compactor(budget=budget, tail_tokens=budget // 2, summary_max_tokens=cap)
        out.append((f"synthetic/10k/cap={cap}", run(c, h)[0]))
    return out


def main(argv: list[str]) -> None:
    path = argv[1]
    quick = "--quick" in argv
    rows = cases(quick)
    with open(path, "w") as f:
        for name, fp in rows:
            f.write(json.dumps({"case": name, "fp": fp}) + "\n")
    print(f"{len(rows)} compactions written to {path}")
    if "--compare" in argv:
        before = {}
        with open(argv[argv.index("--compare") + 1]) as f:
            for line in f:
                d = json.loads(line)
                before[d["case"]] = d["fp"]
        same = sum(1 for n, fp in rows if before.get(n) == fp)
        diff = [n for n, fp in rows if n in before and before[n] != fp]
        missing = [n for n, _ in rows if n not in before]
        print(f"identical: {same} of {len(rows)}; different: {len(diff)}; not in the other dump: {len(missing)}")
        for n in diff[:20]:
            print("  differs:", n)
        if diff or missing:
            sys.exit(1)


if __name__ == "__main__":
    main(sys.argv)
