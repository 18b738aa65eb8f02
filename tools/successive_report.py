"""Successive compactions of every real conversation, not only the probe set's 20.

The probe set's successive table (``contextfold eval``) reads 14 airline dialogues and 6 SWE
runs. This runs the same harness (``contextfold.evaluation.successive``: the conversation fed
message by message, three standing rules planted at seeded places, a compaction each time the
history grows past the budget by a step) over all 149 tau-bench dialogues and 120 SWE runs of
the shared data, and prints one row per data set, then the conversations that lost a rule with
each compaction's summary size and room (tokens): where a rule goes, the room says whether it
could have fitted.

    python tools/successive_report.py            # ../shared/data (tests/data when absent)
    python tools/successive_report.py --json     # one JSON object per conversation
    python tools/successive_report.py --why      # why a last summary is over 1.2x its first
    python tools/successive_report.py --new-process  # each compaction by a new Compactor sharing nothing

``--why`` sorts the conversations whose last summary is over 1.2x the first by cause, reading
the room the Compactor gave each summary (``summary_room``, wrapped here to be read) beside its
stable room (what the budget leaves when the tail meets its target exactly):

- *first summary short of its room*: the first compaction folded little, and its summary says
  all of it in less than 80% of the room it was given (the tail took the rest);
- *rooms set by the last turn, every compaction*: in each compaction the room was under 95% of
  the stable room, because the messages that must stay whole (the last user turn, a pending tool
  round) took more than the tail's target: the summary's size follows the size of that turn;
- *stable room grown with the fold's depth*: the stable room of the last compaction is over 1.1x
  the first's, because the default tail shrinks as a compaction folds more of a deeper history
  (``compactor.LOOP_TAIL_SHARE``: a trade of agent-loop facts against growth, measured there);
- *... some compactions*: rooms set by the last turn in some of them;
- *other*: none of these.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "support"))

from contextfold.evaluation import Fixture, Probe, planted, successive, successive_table  # noqa: E402
from transcripts import LOCAL, SHARED, load_conversations, shared_available  # noqa: E402

DATA_SETS = ("tau-bench-airline", "mini-swe-agent-gemini3")


def fixtures(root: Path, name: str) -> list[Fixture]:
    """The conversations of one data set, as fixtures without probes of their own."""
    return [Fixture(r["source"], list(r["messages"]), (Probe("-", ("-",)),), "openai", r.get("tools"), None)
            for r in load_conversations(root, name)]


def why(fx: list[Fixture]) -> collections.Counter[str]:
    """The causes (see the module docs) of the conversations of ``fx`` whose last summary is over
    1.2x the first."""
    import contextfold.compactor as compactor_module

    rooms: list[tuple[int, int | None]] = []
    given = compactor_module.summary_room

    def read(plan: Any, budget: int, cap: int | None, stable: int | None = None) -> int:
        room = given(plan, budget, cap, stable)
        rooms.append((room, stable))
        return room

    causes: collections.Counter[str] = collections.Counter()
    compactor_module.summary_room = read  # type: ignore[assignment]
    try:
        for f in fx:
            rooms.clear()
            s = successive(f, rules=planted(f))
            if not s.sizes or s.sizes[-1] <= 1.2 * s.sizes[0]:
                causes["at most 1.2x"] += 1
                continue
            # (The summary's own room: the last one the run asked for before its first compaction's size.)
            first_room = next((r for r, st in rooms if st is not None), None)
            if first_room and s.sizes[0] < 0.8 * first_room:
                causes["first summary short of its room"] += 1
                continue
            steady = [(r, st) for r, st in rooms if st is not None]
            under = sum(1 for r, st in steady if r < 0.95 * st)  # type: ignore[operator]
            grown = bool(steady) and steady[-1][1] > 1.1 * steady[0][1]  # type: ignore[operator]
            causes["rooms set by the last turn, every compaction" if steady and under == len(steady)
                   else "stable room grown with the fold's depth" if grown
                   else "rooms set by the last turn, some compactions" if under else "other"] += 1
    finally:
        compactor_module.summary_room = given  # type: ignore[assignment]
    return causes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true", help="one JSON object per conversation")
    ap.add_argument("--why", action="store_true", help="why a last summary is over 1.2x its first, by cause")
    ap.add_argument("--new-process", action="store_true",
                    help="each compaction by a new Compactor sharing nothing (it merges each summary from its text)")
    args = ap.parse_args()
    root = SHARED if shared_available() else LOCAL
    if args.why:
        for name in DATA_SETS:
            causes = why(fixtures(root, name))
            print(f"### {name}\n")
            for cause, n in causes.most_common():
                print(f"- {cause}: {n}")
            print()
        return
    if not args.json:
        print(f"data: {root}\n")
    for name in DATA_SETS:
        fx = fixtures(root, name)
        if args.json:
            for f in fx:
                s = successive(f, rules=planted(f), alone=args.new_process)
                print(json.dumps({"data_set": name, "conversation": s.fixture, "sizes": s.sizes, "rooms": s.rooms,
                                  "folded": s.folded, "carried": s.carried, "rules_lost": s.rules_lost}))
            continue
        print(f"### {name} ({len(fx)} conversations)\n")
        print(successive_table(fx, alone=args.new_process))
        lost = [s for s in (successive(f, rules=planted(f), alone=args.new_process) for f in fx) if s.rules_lost]
        if lost:
            print("\nRules lost (summary tokens / room, per compaction):\n")
            for s in lost:
                rounds = ", ".join(f"{a}/{b}" for a, b in zip(s.sizes, s.rooms, strict=True))
                print(f"- {s.fixture.rsplit('#', 1)[-1].rsplit('/', 1)[-1]}: {s.rules_lost} of 3; {rounds}")
        print()


if __name__ == "__main__":
    main()
