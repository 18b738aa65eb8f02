"""Check the held-out probe set (tools/probes_heldout.py) and write its fixture file.

Every expected fact must occur whole-word (case-insensitive) in the part of the conversation a compaction folds
(after the head, before the naive cut's kept tail), exactly as tools/build_probes.py checks the main probe set; a fact
found only in the head or the kept tail, or nowhere, is reported and the build fails. The script also refuses
conversations already used by tools/probes_airline.py or tools/probes_swe.py, and reports how many facts also
occur in the naive tail (those the naive cut keeps anyway).

    python tools/build_probes_heldout.py    # writes tests/data/probes/heldout.refs.json
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
import probes_heldout  # noqa: E402
import probes_swe  # noqa: E402


def rows(file: str) -> list[dict]:
    with (DATA / file).open(encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def main() -> int:
    out_dir = ROOT / "tests" / "data" / "probes"
    out_dir.mkdir(parents=True, exist_ok=True)
    used = set(probes_airline.PROBES) | set(probes_swe.PROBES)
    bad = other = total = facts = in_tail = in_head = 0
    refs = []
    for file, probes in (
        ("tau-bench-airline/conversations.jsonl", probes_heldout.AIRLINE),
        ("mini-swe-agent-gemini3/conversations.jsonl", probes_heldout.SWE),
    ):
        by_source = {r["source"]: r for r in rows(file)}
        for source, plist in probes.items():
            if source in used:
                other += 1
                print(f"{source}: already used by the main probe set")
            if source not in by_source:
                other += 1
                print(f"{source}: not in {file}")
                continue
            msgs = by_source[source]["messages"]
            head = _head_end(msgs)
            start = _tail_from(msgs, max(head, len(msgs) - math.ceil(0.3 * len(msgs))))
            head_text = visible_text(msgs[:head])
            folded = visible_text(msgs[head:start])
            tail = visible_text(msgs[start:])
            whole = visible_text(msgs)
            for q, fl in plist:
                total += 1
                facts += len(fl)
                in_tail += sum(facts_seen(tail, fl))
                in_head += sum(facts_seen(head_text, fl))
                for f, ok, anywhere in zip(fl, facts_seen(folded, fl), facts_seen(whole, fl)):
                    if not ok:
                        bad += 1
                        where = "only outside the folded span" if anywhere else "nowhere"
                        print(f"{source}: {q!r}: fact {f!r} found {where}")
            refs.append({
                "ref": {"file": file, "source": source},
                "probes": [{"question": q, "expected_facts": list(fl)} for q, fl in plist],
            })
    (out_dir / "heldout.refs.json").write_text(json.dumps({"fixtures": refs}, indent=1) + "\n")
    print(f"{len(refs)} conversations, {total} probes, {facts} facts, {bad} facts misplaced; "
          f"{in_tail} facts also in the naive tail, {in_head} also in the head")
    return 1 if bad or other else 0


if __name__ == "__main__":
    raise SystemExit(main())
