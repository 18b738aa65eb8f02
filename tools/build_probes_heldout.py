"""Check the held-out probe sets (tools/probes_heldout.py, tools/probes_heldout2.py, tools/probes_heldout3.py,
tools/probes_heldout4.py) and write their fixture files.

Every expected fact must occur whole-word (case-insensitive) in the part of the conversation a compaction folds
(after the head, before the naive cut's kept tail), as tools/build_probes.py checks the main probe set, and, stricter,
nowhere in the head (system prompt, first user message); a misplaced fact is reported and the build fails. A
conversation may be used by one probe set only (the main set's, or an earlier held-out set's, are refused). Also
reported: how many facts also occur in the naive tail (those the naive cut keeps anyway).

    python tools/build_probes_heldout.py    # writes tests/data/probes/heldout{,2,3,4}.refs.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "tools"))

from contextfold.evaluation import facts_seen  # noqa: E402

import probes_airline  # noqa: E402
import probes_heldout  # noqa: E402
import probes_heldout2  # noqa: E402
import probes_heldout3  # noqa: E402
import probes_heldout4  # noqa: E402
import probes_swe  # noqa: E402
from build_probes import misplaced, rows, spans  # noqa: E402

FILES = ("tau-bench-airline/conversations.jsonl", "mini-swe-agent-gemini3/conversations.jsonl")


def build(name: str, sets: tuple[dict, dict], used: set[str]) -> int:
    """Check one held-out set (its airline and SWE probes) and write ``name``.refs.json; the
    number of problems found."""
    bad = other = total = facts = in_tail = 0
    refs = []
    for file, probes in zip(FILES, sets, strict=True):
        by_source = {r["source"]: r for r in rows(file)}
        for source, plist in probes.items():
            if source in used:
                other += 1
                print(f"{source}: already used by another probe set")
            if source not in by_source:
                other += 1
                print(f"{source}: not in {file}")
                continue
            msgs = by_source[source]["messages"]
            tail = spans(msgs)[2]
            for q, fl in plist:
                total += 1
                facts += len(fl)
                in_tail += sum(facts_seen(tail, fl))
                bad += misplaced(source, q, fl, msgs, head_too=True)
            refs.append({
                "ref": {"file": file, "source": source},
                "probes": [{"question": q, "expected_facts": list(fl)} for q, fl in plist],
            })
    (ROOT / "tests" / "data" / "probes" / f"{name}.refs.json").write_text(json.dumps({"fixtures": refs}, indent=1)
                                                                         + "\n")
    print(f"{name}: {len(refs)} conversations, {total} probes, {facts} facts, {bad} facts misplaced; "
          f"{in_tail} facts also in the naive tail")
    return bad + other


def main() -> int:
    used = set(probes_airline.PROBES) | set(probes_swe.PROBES)
    problems = 0
    for name, module in (("heldout", probes_heldout), ("heldout2", probes_heldout2), ("heldout3", probes_heldout3),
                         ("heldout4", probes_heldout4)):
        problems += build(name, (module.AIRLINE, module.SWE), used)
        used |= set(module.AIRLINE) | set(module.SWE)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
