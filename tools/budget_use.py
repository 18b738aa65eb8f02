"""How much of its budget one compaction uses, over every conversation of the shared data: each
SWE run and tau-bench dialogue compacted (hybrid, the default strategy) to its head and 30%, 50%
and 70% of the rest; per data set and share, the median `tokens_after / budget`, how many land
under 95% and 90% of it, and how many over (the goal is 95-100%).

    python tools/budget_use.py          # ../shared/data (tests/data when absent)
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "support"))
sys.path.insert(0, str(ROOT / "tools"))

import contextfold as cf  # noqa: E402
from contextfold.evaluation import _head_end, _tokens  # noqa: E402
from successive_report import fixtures  # noqa: E402
from transcripts import LOCAL, SHARED, shared_available  # noqa: E402

SHARES = (0.3, 0.5, 0.7)


def main() -> None:
    root = SHARED if shared_available() else LOCAL
    print(f"data: {root}\n")
    print("| data set | share | compacted | raised | used (median) | under 95% | under 90% | over |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for name in ("tau-bench-airline", "mini-swe-agent-gemini3"):
        fxs = fixtures(root, name)
        for share in SHARES:
            used: list[float] = []
            raised = 0
            for f in fxs:
                fixed = _tokens(f.messages[:_head_end(f.messages)], f)
                budget = fixed + int((_tokens(f.messages, f) - fixed) * share)
                c = cf.Compactor(provider=f.provider, budget=budget, tools=f.tools, system=f.system,
                                 min_free_share=0.0)
                try:
                    r = c.compact(f.messages)
                except cf.CompactionError:
                    raised += 1
                    continue
                used.append(r.tokens_after / budget)
            print(f"| {name} | {share:.0%} | {len(used)} | {raised} | {statistics.median(used):.1%} | "
                  f"{sum(u < 0.95 for u in used)} | {sum(u < 0.9 for u in used)} | {sum(u > 1.0 for u in used)} |")


if __name__ == "__main__":
    main()
