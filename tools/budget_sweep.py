"""How often ``Compactor.compact`` gives up, and whether it had to.

Every SWE trajectory and tau-bench dialogue of the shared data, in OpenAI chat as recorded and
converted to Anthropic, at budgets of 20%, 40% and 70% of its own size: count the
``CompactionBudgetError`` raised, and among them those where the system prompt, the tools, the
task (first user request) and the last user turn fit the budget (the goal: none). For every
result returned: over budget (must be none), rejected by the independent shape check (none),
task or last user turn lost (none).

    python tools/budget_sweep.py            # ../shared/data (tests/data when absent)
    python tools/budget_sweep.py --json     # one JSON object on stdout
    python tools/budget_sweep.py --no-degrade   # before: the degrading steps switched off
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "support"))

import contextfold as cf  # noqa: E402
from compaction_shapes import convert, shape_problems  # noqa: E402
from transcripts import LOCAL, SHARED, load_conversations, shared_available  # noqa: E402

SHARES = (0.2, 0.4, 0.7)
SHAPES = ("chat", "anthropic")


def user_turns(msgs: list[dict[str, Any]]) -> list[int]:
    """Indices of the user's own turns: not tool results, nor a text agent's observations (a
    user turn opening with its return code: the harness answering a command, which the
    library cuts like a tool output, ``contextfold._core.tail_floor``)."""
    out = []
    for i, m in enumerate(msgs):
        if m.get("role") != "user":
            continue
        c = m.get("content")
        if isinstance(c, list) and c and all(isinstance(b, dict) and b.get("type") == "tool_result" for b in c):
            continue
        if isinstance(c, str) and c.lstrip().startswith("<returncode>"):
            continue
        out.append(i)
    return out


def text_of(m: Any) -> str:
    return json.dumps(m, sort_keys=True, ensure_ascii=False)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--no-degrade", action="store_true", help="switch the degrading steps off (the before)")
    args = ap.parse_args()
    if args.no_degrade:
        import contextfold.compactor

        contextfold.compactor.liftable = lambda reason: False  # type: ignore[assignment]
    root = SHARED if shared_available() else LOCAL
    c: Counter[str] = Counter()
    by_set: Counter[str] = Counter()
    for name in ("mini-swe-agent-gemini3", "tau-bench-airline"):
        for conv in load_conversations(root, name):
            for shape in SHAPES:
                msgs, system = convert(conv["messages"], shape)
                provider = "anthropic" if shape == "anthropic" else "openai"
                kw: dict[str, Any] = dict(provider=provider, system=system, tools=conv.get("tools"))
                size = cf.estimate(msgs, **kw)
                users = user_turns(msgs)
                if not users:
                    continue
                keep = sorted({i for i in range(len(msgs)) if msgs[i].get("role") == "system"} | {users[0], users[-1]})
                must = [msgs[i] for i in keep]
                if users[-1] > users[0] + 1:
                    # Folded between, the task and the last user turn (both sent byte-identical)
                    # would be two user turns side by side: the floor holds the shortest marker
                    # turn between them.
                    must.insert(keep.index(users[-1]), {"role": "assistant", "content": "[…]"})
                floor = cf.estimate(must, **kw)
                for share in SHARES:
                    budget = max(1, int(size * share))
                    c["cases"] += 1
                    try:
                        r = cf.Compactor(budget=budget, **kw).compact(msgs)
                    except cf.CompactionBudgetError:
                        c["raised"] += 1
                        by_set[f"raised {name}"] += 1
                        if floor <= budget:
                            c["raised where system+tools+task+last user turn fit"] += 1
                        continue
                    by_set[f"returned {name}"] += 1
                    if r.changed and r.tokens_after > budget:
                        c["over budget"] += 1
                    if shape_problems(r.messages, shape):
                        c["rejected shape"] += 1
                    out = {text_of(m) for m in r.messages}
                    if text_of(msgs[users[0]]) not in out:
                        c["task not verbatim"] += 1
                    last = msgs[users[-1]]
                    if text_of(last) not in out:
                        c["last user turn not verbatim"] += 1
                    if any("degraded" in n for n in r.notes):
                        c["degraded"] += 1
    report = {**c, **by_set}
    if args.json:
        print(json.dumps(report))
    else:
        for k, v in report.items():
            print(f"{k}: {v}")
        if c["cases"]:
            print(f"raise rate: {c['raised'] / c['cases']:.1%}")


if __name__ == "__main__":
    main()
