"""How much of its budget one compaction uses, over every conversation of the shared data: each
SWE run and tau-bench dialogue compacted (hybrid, the default strategy) to its head and 30%, 50%
and 70% of the rest; per data set and share, the median `tokens_after / budget`, how many land
under 95% and 90% of it, and how many over (the goal is 95-100%). With ``--successive``, every
compaction of the successive harness instead (`contextfold.evaluation.successive`: the
conversation fed message by message, three rules planted, a budget of its head and 30% of the
rest), and the ten lowest with their conversation and compaction.

    python tools/budget_use.py                 # ../shared/data (tests/data when absent)
    python tools/budget_use.py --successive
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "support"))
sys.path.insert(0, str(ROOT / "tools"))

import contextfold as cf  # noqa: E402
from contextfold.evaluation import _head_end, _tokens, planted, successive, successive_setup  # noqa: E402
from successive_report import fixtures  # noqa: E402
from transcripts import LOCAL, SHARED, shared_available  # noqa: E402

SHARES = (0.3, 0.5, 0.7)


def successive_use(root: Path) -> None:
    """The budget each successive compaction used: the budget less what its summary's room
    left unused (`Successive.rooms` is the summary's size plus what the history left)."""
    print("| data set | compactions | used (median) | under 95% | under 90% |")
    print("| --- | --- | --- | --- | --- |")
    lowest: list[tuple[float, str, int]] = []
    for name in ("tau-bench-airline", "mini-swe-agent-gemini3"):
        used: list[float] = []
        for f in fixtures(root, name):
            rules = planted(f)
            _, _, budget = successive_setup(f, rules=rules)
            s = successive(f, rules=rules)
            for k, (size, room) in enumerate(zip(s.sizes, s.rooms, strict=True)):
                used.append((budget - (room - size)) / budget)
                lowest.append((used[-1], f.name.rsplit("#", 1)[-1].rsplit("/", 1)[-1], k))
        print(f"| {name} | {len(used)} | {statistics.median(used):.1%} | {sum(u < 0.95 for u in used)} | "
              f"{sum(u < 0.9 for u in used)} |")
    print("\nLowest:\n")
    for u, conv, k in sorted(lowest)[:10]:
        print(f"- {conv}, compaction {k}: {u:.1%}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--successive", action="store_true", help="every compaction of the successive harness")
    args = ap.parse_args()
    root = SHARED if shared_available() else LOCAL
    print(f"data: {root}\n")
    if args.successive:
        successive_use(root)
        return
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
