"""Does recall return the exact original for every placeholder? Measured on the shared data.

Every SWE trajectory and tau-bench dialogue, in all five wire formats, compacted with
``Compactor(recoverable=True)`` at budgets of 30%, 50% and 70% of its size: every fold id the
result names is recalled through the recall tool (a scripted model paging with
``compactor.answer``), and the pages joined must equal, byte for byte, a text the input held
(a tool output, arguments, an observation) or, for a folded span, the folded messages. Also
counted: histories after an answer that fail the format's checks or exceed the budget. A
compaction that kept no room for a recall round (its note says "no room kept for a recall
round": the round would take over a quarter of the room, docs/guides/recall.md) answers over
the budget by design: its pages are still checked for exactness, and the answers counted apart.
A fold whose text holds a cut made earlier in the same compaction (an output cut in its middle,
then folded) gives back that cut text, whose marker names the id of the whole output: counted
apart as exact through that id (a second recall).

    python tools/recall_report.py
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests" / "support"), str(ROOT / "tests" / "python")]

import contextfold as cf  # noqa: E402
from compaction_shapes import FORMATS, convert  # noqa: E402
from test_recall import PROVIDER, originals, scripted_recall  # noqa: E402
from transcripts import LOCAL, SHARED, load_conversations, shared_available  # noqa: E402

ID = re.compile(r"id=(cf[0-9a-f]{12})")
#: The note of a compaction that kept no room for a recall round (``Compactor``'s step 3).
NO_ROUND = "no room kept for a recall round"


def is_span(text: str, msgs: list) -> bool:
    try:
        span = json.loads(text)
    except json.JSONDecodeError:
        return False
    return isinstance(span, list) and all(m in msgs for m in span)


def nested_exact(comp: cf.Compactor, back: str, known: object) -> bool:
    """Whether ``back`` is an output a degrading step cut in its middle before a later step of
    the same compaction folded it: the cut's marker inside it names the id that restores the
    whole output (``[~167 tokens cut; id=..., contextfold_recall restores it]``), so a second
    recall gives the original byte for byte."""
    for i in ID.findall(back):
        if " tokens cut; id=" + i in back:
            try:
                if comp.recall(i) in known:  # type: ignore[operator]
                    return True
            except KeyError:
                pass
    return False


def main() -> None:
    root = SHARED if shared_available() else LOCAL
    c: Counter[str] = Counter()
    for name in ("mini-swe-agent-gemini3", "tau-bench-airline"):
        for conv in load_conversations(root, name):
            for fmt in FORMATS:
                msgs, system = convert(conv["messages"], fmt)
                kw = dict(provider=PROVIDER[fmt], system=system)
                size = cf.estimate(msgs, tools=conv.get("tools"), **kw)
                known = originals(msgs, fmt)
                for share in (0.3, 0.5, 0.7):
                    comp = cf.Compactor(budget=max(2_000, int(size * share)), recoverable=True, wire_format=fmt,
                                        tools=conv.get("tools"), **kw)
                    try:
                        r = comp.compact(msgs)
                    except cf.CompactionBudgetError:
                        c["raised"] += 1
                        continue
                    c["compactions"] += 1
                    no_round = any(n.startswith(NO_ROUND) for n in r.notes)
                    for fold_id in sorted(set(ID.findall(json.dumps(r.messages, ensure_ascii=False)))):
                        c["placeholders"] += 1
                        try:
                            back = scripted_recall(comp, fmt, fold_id, r.messages, dict(kw, tools=r.tools),
                                                   None if no_round else r.budget)
                        except AssertionError:
                            c["answer rejected or over budget"] += 1
                            continue
                        if no_round:
                            c["answered over the budget: no room kept for a recall round"] += 1
                        # A tool output, arguments or observation of the input, or a folded span
                        # (a JSON list of the input's messages).
                        exact = back in known or (back.startswith("[") and is_span(back, msgs))
                        if not exact and nested_exact(comp, back, known):
                            c["exact through the id of a cut inside it"] += 1
                            exact = True
                        c["exact" if exact else "not exact"] += 1
    for k, v in c.items():
        print(f"{k}: {v}")
    if c["placeholders"]:
        print(f"exact: {c['exact'] / c['placeholders']:.2%}")


if __name__ == "__main__":
    main()
