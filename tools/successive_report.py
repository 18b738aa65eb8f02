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
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "support"))

from contextfold.evaluation import Fixture, Probe, planted, successive, successive_table  # noqa: E402
from transcripts import LOCAL, SHARED, load_conversations, shared_available  # noqa: E402

DATA_SETS = ("tau-bench-airline", "mini-swe-agent-gemini3")


def fixtures(root: Path, name: str) -> list[Fixture]:
    """The conversations of one data set, as fixtures without probes of their own."""
    return [Fixture(r["source"], list(r["messages"]), (Probe("-", ("-",)),), "openai", r.get("tools"), None)
            for r in load_conversations(root, name)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", action="store_true", help="one JSON object per conversation")
    args = ap.parse_args()
    root = SHARED if shared_available() else LOCAL
    if not args.json:
        print(f"data: {root}\n")
    for name in DATA_SETS:
        fx = fixtures(root, name)
        if args.json:
            for f in fx:
                s = successive(f, rules=planted(f))
                print(json.dumps({"data_set": name, "conversation": s.fixture, "sizes": s.sizes, "rooms": s.rooms,
                                  "folded": s.folded, "carried": s.carried, "rules_lost": s.rules_lost}))
            continue
        print(f"### {name} ({len(fx)} conversations)\n")
        print(successive_table(fx))
        lost = [s for s in (successive(f, rules=planted(f)) for f in fx) if s.rules_lost]
        if lost:
            print("\nRules lost (summary tokens / room, per compaction):\n")
            for s in lost:
                rounds = ", ".join(f"{a}/{b}" for a, b in zip(s.sizes, s.rooms, strict=True))
                print(f"- {s.fixture.rsplit('#', 1)[-1].rsplit('/', 1)[-1]}: {s.rules_lost} of 3; {rounds}")
        print()


if __name__ == "__main__":
    main()
