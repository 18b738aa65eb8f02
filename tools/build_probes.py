"""Write the probe set's fixture files from the hand-written probes (tools/probes_*.py) and check
every expected fact: it must occur whole-word in the part of the conversation a compaction folds
(after the head, before the naive cut's kept tail); a fact found only in the kept tail or nowhere
is reported and the build fails.

    python tools/build_probes.py            # writes tests/data/probes/*.json
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data"
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(ROOT / "tools"))

from contextfold.evaluation import _head_end, _tail_from, facts_seen, visible_text  # noqa: E402

import probes_airline  # noqa: E402
import probes_swe  # noqa: E402

# Fixtures carried whole in tests/data (so the suite runs without ../shared/data).
INLINE = 4


def rows(file: str) -> list[dict]:
    with (DATA / file).open(encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def spans(msgs: list) -> tuple[str, str, str]:
    """The visible text of the head, of the span a compaction folds (after the head, before the
    naive cut's kept tail) and of that tail."""
    head = _head_end(msgs)
    start = _tail_from(msgs, max(head, len(msgs) - math.ceil(0.3 * len(msgs))))
    return visible_text(msgs[:head]), visible_text(msgs[head:start]), visible_text(msgs[start:])


def misplaced(source: str, question: str, facts: list[str], msgs: list, *, head_too: bool = False) -> int:
    """How many of ``facts`` are not in the folded span of ``msgs`` (each reported); with
    ``head_too``, a fact also found in the head counts as misplaced."""
    head_text, folded, _ = spans(msgs)
    whole = visible_text(msgs)
    bad = 0
    for f, ok, anywhere, at_head in zip(facts, facts_seen(folded, facts), facts_seen(whole, facts),
                                        facts_seen(head_text, facts)):
        if not ok:
            bad += 1
            where = "only outside the folded span" if anywhere else "nowhere"
            print(f"{source}: {question!r}: fact {f!r} found {where}")
        elif head_too and at_head:
            bad += 1
            print(f"{source}: {question!r}: fact {f!r} also occurs in the head")
    return bad


def main() -> int:
    out_dir = ROOT / "tests" / "data" / "probes"
    out_dir.mkdir(parents=True, exist_ok=True)
    bad = 0
    total = 0
    for file, probes, name in (
        ("tau-bench-airline/conversations.jsonl", probes_airline.PROBES, "airline"),
        ("mini-swe-agent-gemini3/conversations.jsonl", probes_swe.PROBES, "swe"),
    ):
        by_source = {r["source"]: r for r in rows(file)}
        refs, inline = [], []
        for source, plist in probes.items():
            row = by_source[source]
            msgs = row["messages"]
            for q, facts in plist:
                total += 1
                bad += misplaced(source, q, facts, msgs)
            doc = {"probes": [{"question": q, "expected_facts": list(f)} for q, f in plist]}
            refs.append({"ref": {"file": file, "source": source}, **doc})
            if len(inline) < INLINE:
                inline.append({"name": source, "messages": msgs, "tools": row.get("tools"), **doc})
        (out_dir / f"{name}.refs.json").write_text(json.dumps({"fixtures": refs}, indent=1) + "\n")
        (out_dir / f"{name}.inline.json").write_text(json.dumps({"fixtures": inline}) + "\n")
    print(f"{total} probes, {bad} facts misplaced")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
