"""Measure the Compactor on every SWE trajectory and tau-bench dialogue of the shared data.

For each history, each wire shape (OpenAI chat as recorded, converted to Anthropic, and to
Responses / Gemini / Bedrock), each strategy and three budgets: the compaction's result must pass an independent shape check (pairs, roles,
JSON), stay within the budget (summarize / hybrid; the budgets are the system prompt, tools and
task, which always stay, plus 30%, 50% or 70% of the rest), keep the system prompt, the task and one
pinned message verbatim, and leave the input untouched. Also measured: the share of the folded
middle's identifiers (tool names, short string arguments, file paths in the assistant's turns)
present in the extractive summary, the share of the first summary's identifiers still present
after a second compaction of the grown history, and the time per compaction.

    python tools/compaction_report.py            # ../shared/data (tests/data when absent)
    python tools/compaction_report.py --quick    # first 10 histories per data set
"""

from __future__ import annotations

import argparse
import copy
import json
import re
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "support"))

import contextfold as cf  # noqa: E402
from transcripts import LOCAL, SHARED, load_conversations, shared_available  # noqa: E402
from compaction_shapes import convert, shape_problems  # noqa: E402

SHARES = (0.3, 0.5, 0.7)
STRATEGIES = ("mask", "summarize", "hybrid")
SHAPES = ("chat", "anthropic", "responses", "gemini", "bedrock")
PATH = re.compile(
    r"(?<![\w/.-])(?:[\w.-]+/)+[\w.-]+\.[A-Za-z]{1,5}(?![\w/])"
    r"|(?<![\w/.-])[\w-]+\.(?:py|rs|js|ts|json|md|txt|toml|yaml|yml|cfg|c|h|cpp|go|java|sh|html|css|ini|rst)(?![\w])"
)


def provider_of(shape: str, dataset: str) -> str:
    if shape == "anthropic":
        return "anthropic"
    if shape == "gemini" or (shape == "chat" and dataset.startswith("mini-swe")):
        return "gemini"
    return "openai"


def identifiers(chat_messages: list[dict]) -> set[str]:
    """Tool names, short string arguments (ids, codes) and file paths the assistant wrote."""
    out: set[str] = set()

    def strings(v: Any) -> None:
        if isinstance(v, str):
            if 2 <= len(v) <= 40 and not any(c.isspace() for c in v):
                out.add(v)
        elif isinstance(v, list):
            for x in v:
                strings(x)
        elif isinstance(v, dict):
            for x in v.values():
                strings(x)

    for m in chat_messages:
        if m.get("role") != "assistant":
            continue
        for c in m.get("tool_calls") or []:
            out.add(c["function"]["name"])
            try:
                strings(json.loads(c["function"]["arguments"]))
            except ValueError:
                pass
        text = m.get("content") if isinstance(m.get("content"), str) else ""
        out.update(p.lstrip("./") for p in PATH.findall(text or ""))
    return out


def present(ids: set[str], text: str) -> float | None:
    if not ids:
        return None
    return sum(1 for i in ids if i in text) / len(ids)


def run(root: Path, quick: bool) -> dict[str, Any]:
    rows: dict[tuple[str, str, str, float], dict[str, Any]] = defaultdict(lambda: defaultdict(int))
    quality: dict[str, list[float]] = defaultdict(list)
    iterative: dict[str, list[float]] = defaultdict(list)
    times: dict[tuple[str, str], list[float]] = defaultdict(list)
    for dataset in ("mini-swe-agent-gemini3", "tau-bench-airline"):
        convs = load_conversations(root, dataset)
        if quick:
            convs = convs[:10]
        for conv in convs:
            chat = conv["messages"]
            tools = conv.get("tools")
            for shape in SHAPES:
                msgs, system = convert(chat, shape)
                provider = provider_of(shape, dataset)
                kw: dict[str, Any] = dict(provider=provider, system=system, tools=tools)
                before = cf.estimate(msgs, **kw)
                first_user = next(i for i, m in enumerate(msgs) if m.get("role") == "user")
                floor = cf.estimate(msgs[: first_user + 1], **kw)
                snap = copy.deepcopy(msgs)
                pin = min(3, len(msgs) - 1)
                for strategy in STRATEGIES:
                    for share in SHARES:
                        row = rows[(dataset, shape, strategy, share)]
                        row["cases"] += 1
                        budget = int(floor + share * (before - floor))
                        c = cf.Compactor(budget=budget, strategy=strategy, pinned=[pin], **kw)
                        t0 = time.perf_counter()
                        try:
                            r = c.compact(msgs)
                        except cf.CompactionBudgetError:
                            row["budget_infeasible"] += 1
                            continue
                        except cf.CompactionError:
                            row["verification_failed"] += 1
                            continue
                        times[(dataset, strategy)].append(time.perf_counter() - t0)
                        if msgs != snap:
                            row["input_altered"] += 1
                        if not r.changed:
                            row["backed_off" if (r.reason or "").startswith("backed off") else "unchanged"] += 1
                            continue
                        row["compacted"] += 1
                        if shape_problems(r.messages, shape):
                            row["shape_problems"] += 1
                        if r.tokens_after <= budget:
                            row["within_budget"] += 1
                        if not any(m is msgs[pin] for m in r.messages):
                            row["pinned_lost"] += 1
                        if not any(m is msgs[first_user] for m in r.messages):
                            row["task_lost"] += 1
                        if strategy == "summarize" and shape == "chat" and share == 0.5:
                            folded = [chat[i] for i in r.removed]
                            q = present(identifiers(folded), r.summary or "")
                            if q is not None:
                                quality[dataset].append(q)
                # Iterative: compact 60% of the history, append the rest, compact again.
                if shape == "chat":
                    cut = int(len(chat) * 0.6)
                    part = chat[:cut]
                    budget = int(floor + 0.5 * (cf.estimate(part, **kw) - floor))
                    c = cf.Compactor(budget=budget, strategy="summarize", **kw)
                    try:
                        r1 = c.compact(part)
                        if r1.strategy_used != "summarize":
                            continue
                        kept1 = {i for i in identifiers([chat[i] for i in r1.removed]) if i in (r1.summary or "")}
                        grown = r1.messages + chat[cut:]
                        c2 = cf.Compactor(budget=budget, strategy="summarize", **kw)
                        r2 = c2.compact(grown)
                    except cf.CompactionError:
                        continue
                    if r2.strategy_used == "summarize" and kept1:
                        iterative[dataset].append(sum(1 for i in kept1 if i in (r2.summary or "")) / len(kept1))
    return {"rows": rows, "quality": quality, "iterative": iterative, "times": times}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    root = SHARED if shared_available() else LOCAL
    print(f"data: {root}")
    res = run(root, args.quick)
    print("\n| data set | shape | strategy | budget | cases | compacted | within budget | infeasible | "
          "backed off / unchanged | shape problems | verification raised | pinned / task lost | input altered |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for (dataset, shape, strategy, share), row in sorted(res["rows"].items()):
        print(f"| {dataset} | {shape} | {strategy} | {int(share * 100)}% | {row['cases']} | {row['compacted']} | "
              f"{row['within_budget']} | {row['budget_infeasible']} | {row['backed_off']} / {row['unchanged']} | {row['shape_problems']} | "
              f"{row['verification_failed']} | {row['pinned_lost']} / {row['task_lost']} | {row['input_altered']} |")
    print("\nAll five shapes together (cases = histories x 5 shapes; problems = shape problems + verification"
          " raised + pinned or task lost + input altered):\n")
    print("| data set | strategy | budget | cases | compacted | within budget | infeasible budget | backed off / unchanged | problems |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|")
    agg: dict[tuple[str, str, float], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for (dataset, _shape, strategy, share), row in res["rows"].items():
        for k, v in row.items():
            agg[(dataset, strategy, share)][k] += v
    for (dataset, strategy, share), row in sorted(agg.items()):
        problems = row["shape_problems"] + row["verification_failed"] + row["pinned_lost"] + row["task_lost"] + row["input_altered"]
        print(f"| {dataset} | {strategy} | {int(share * 100)}% | {row['cases']} | {row['compacted']} | {row['within_budget']} | "
              f"{row['budget_infeasible']} | {row['backed_off']} / {row['unchanged']} | {problems} |")
    print("\nSummary quality proxy (identifiers of the folded middle present in the extractive summary, chat, 50% budget):")
    for dataset, qs in res["quality"].items():
        print(f"  {dataset}: median {statistics.median(qs):.0%} over {len(qs)} summaries (p10 {sorted(qs)[len(qs) // 10]:.0%})")
    print("\nIterative (identifiers the first summary kept, still present after a second compaction):")
    for dataset, qs in res["iterative"].items():
        print(f"  {dataset}: median {statistics.median(qs):.0%}, mean {statistics.mean(qs):.0%} over {len(qs)} histories")
    print("\nTime per compact() (extractive summarizer, debug or release build as installed):")
    for (dataset, strategy), ts in sorted(res["times"].items()):
        print(f"  {dataset} {strategy}: median {statistics.median(ts) * 1e3:.2f} ms, max {max(ts) * 1e3:.2f} ms")


if __name__ == "__main__":
    main()
