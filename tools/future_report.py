"""What the continuation needed: facts no one wrote by hand, read off what each real agent did
next. Every conversation of ../shared/data is cut where the model is about to answer (at half
and at three quarters of its messages); the history before the cut is compacted at the naive
cut's budget (head + last 30% of the messages, as the scorecard), and its facts are the exact
tokens the agent wrote after the cut (its text and tool-call arguments) that it could only have
taken from the history: they occur in the history outside its head (system prompt, tools, first
user turn, which every strategy keeps), and no message after the cut showed them first.

A token counts when it is specific: it mixes letters and digits (``HAT229``, ``mia_li_3668``),
joins words with ``_``, ``.``, ``/`` or ``-`` (paths, dotted and snake names, dates), is
CamelCase, or is a number of three digits or more. Scored like the probes (whole word, case
insensitive, anywhere in what the continuing model sees), for the naive cut and the Compactor.

    python tools/future_report.py                  # the table (tests/data without ../shared/data)
    python tools/future_report.py --multiple 1.5   # at 1.5x the naive cut's budget
    python tools/future_report.py --loop           # the history compacted as an agent loop does it
    python tools/future_report.py --misses         # what the Compactor lost that the naive cut kept
    python tools/future_report.py --json           # one JSON object per data set on stdout
    python tools/future_report.py --tool-calls json  # the SWE runs as a tool-calling agent sends them

With ``--tool-calls STYLE`` the SWE runs are rewritten as a tool-calling agent's
(``tests/support/terminal_agent.py``: each fenced command a ``terminal`` call, each observation
its result in STYLE: ``json``, ``exit_line`` or ``plain``; or, with ``read_tool``, a coding
agent's ``Read`` call for each command that prints a file's lines and a ``Bash`` call for the
rest, ``read_tool_raw`` the same with the file's lines unnumbered, ``read_tool_json``
hermes-agent's ``read_file`` returning a JSON record beside its ``terminal``); the facts are read
off the same agent's next turns, its call arguments included.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import statistics
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "support"))

from contextfold import CompactionError, Compactor  # noqa: E402
from contextfold.compactor import detect_wire_format  # noqa: E402
from contextfold.degrade import floor_tokens  # noqa: E402
from contextfold.evaluation import (Fixture, _arguments, _fact_pattern, _head_end, _tokens, agent_loop, facts_seen,  # noqa: E402
                                   naive_cut, visible_text)
from terminal_agent import READ_TOOL_STYLES, STYLES, as_terminal_calls, tools_for  # noqa: E402
from transcripts import LOCAL, SHARED, load_conversations, shared_available  # noqa: E402

DATA_SETS = ("tau-bench-airline", "mini-swe-agent-gemini3")
CUTS = (0.5, 0.75)

_CANDIDATE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_./\-]*[A-Za-z0-9_]")


def _specific(token: str) -> bool:
    letters = any(c.isalpha() for c in token)
    digits = any(c.isdigit() for c in token)
    if letters and digits:
        return True
    if not letters:
        return sum(c.isdigit() for c in token) >= 3
    if re.search(r"[A-Za-z0-9][_./\-][A-Za-z0-9]", token):
        return True
    return bool(re.search(r"[a-z][A-Z]", token))


def _said(message: Any) -> str:
    """What an assistant message wrote: its text and its tool calls' arguments."""
    out = [message.get("content") if isinstance(message.get("content"), str) else ""]
    for call in message.get("tool_calls") or []:
        out.append(_arguments(str((call.get("function") or {}).get("arguments") or "")))
    return "\n".join(out)


def needed(history: Sequence[Any], future: Sequence[Any], head: str) -> list[str]:
    """Tokens the agent wrote in ``future`` that only ``history`` (outside its ``head``) showed."""
    past = visible_text(history)
    shown: list[str] = []
    facts: list[str] = []
    seen: set[str] = set()  # (the facts, lower case: a fact counts once whatever its case)
    for m in future:
        if m.get("role") == "assistant":
            before = "\n".join(shown)
            for tok in _CANDIDATE.findall(_said(m)):
                tok = tok.strip("./-")
                if len(tok) < 3 or not _specific(tok) or tok.lower() in seen:
                    continue
                pat = _fact_pattern(tok)
                if pat.search(past) and not pat.search(head) and not pat.search(before):
                    facts.append(tok)
                    seen.add(tok.lower())
        shown.append(visible_text([m]))
    return facts


@dataclass
class Case:
    name: str
    cut: float
    facts: list[str]
    naive: list[bool]
    compactor: list[bool] | None
    used: float
    #: A compaction that raised because what it must keep is over the budget (the system
    #: prompt, tools, task and last user turn, and a marker between two user turns).
    floor_over: bool = False


def cases(conversations: Sequence[dict[str, Any]], multiple: float = 1.0, *, loop: bool = False) -> Iterator[Case]:
    """Each conversation cut at each of ``CUTS``, its history compacted at ``multiple`` times the
    naive cut's budget (with ``loop``: fed round by round and compacted each time it passes 1.2x
    that budget, as ``contextfold.evaluation.agent_loop`` runs an agent), and scored."""
    for conv in conversations:
        msgs = list(conv["messages"])
        for share in CUTS:
            at = int(len(msgs) * share)
            while at < len(msgs) and msgs[at].get("role") != "assistant":
                at += 1
            if at >= len(msgs) - 1 or at < 4:
                continue
            history, future = msgs[:at], msgs[at:]
            fx = Fixture(conv["source"], history, (), "openai", conv.get("tools"), None)
            head = visible_text(history[:_head_end(history)]) + "\n" + visible_text(conv.get("tools") or [])
            facts = needed(history, future, head)
            if not facts:
                continue
            budget = max(1, int(_tokens(naive_cut(history), fx) * multiple))
            cut = naive_cut(history) if multiple == 1.0 else naive_cut(history, budget=budget, tools=fx.tools)
            naive_text = visible_text(cut)
            text: str | None
            if loop:
                last, _ = agent_loop(fx, budget=budget)
                text, used = visible_text(last), _tokens(last, fx) / budget
            else:
                c = Compactor(provider="openai", budget=budget, tools=fx.tools,
                              wire_format=detect_wire_format(history, "openai"), min_free_share=0.0)
                try:
                    r = c.compact(history)
                    text, used = visible_text(r.messages), r.tokens_after / budget
                except CompactionError:
                    text, used = None, 0.0
            floor_over = text is None and floor_tokens(history, {"provider": "openai", "tools": fx.tools},
                                                       detect_wire_format(history, "openai")) > budget
            yield Case(conv["source"], share, facts, facts_seen(naive_text, facts),
                       None if text is None else facts_seen(text, facts), used, floor_over)


def totals(cs: Sequence[Case]) -> dict[str, Any]:
    """One data set's sums: facts, kept by each side, cuts with more / fewer kept, raises."""
    return {
        "cuts": len(cs),
        "facts": sum(len(c.facts) for c in cs),
        "naive": sum(sum(c.naive) for c in cs),
        "compactor": sum(sum(c.compactor) for c in cs if c.compactor is not None),
        "more": sum(1 for c in cs if c.compactor is not None and sum(c.compactor) > sum(c.naive)),
        "fewer": sum(1 for c in cs if c.compactor is None or sum(c.compactor) < sum(c.naive)),
        "raised": sum(1 for c in cs if c.compactor is None),
        "raised where the floor fits": sum(1 for c in cs if c.compactor is None and not c.floor_over),
        "budget_used_median": statistics.median([c.used for c in cs if c.compactor is not None] or [0.0]),
    }


def table(rows: dict[str, list[Case]]) -> str:
    out = ["| data set | cuts | facts | naive cut kept | Compactor kept | vs naive | cuts with more kept / fewer | raised | budget used (median) |",
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name, cs in rows.items():
        t = totals(cs)
        n, nv, cf = max(1, t["facts"]), t["naive"], t["compactor"]
        out.append(f"| {name} | {t['cuts']} | {t['facts']} | {nv} ({nv / n:.1%}) | {cf} ({cf / n:.1%}) "
                   f"| {cf / max(1, nv):.2f}x | {t['more']} / {t['fewer']} | {t['raised']} "
                   f"| {t['budget_used_median']:.1%} |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--misses", action="store_true", help="list the facts the Compactor lost that the naive cut kept")
    p.add_argument("--lost", action="store_true", help="list the facts the Compactor lost")
    p.add_argument("--multiple", type=float, default=1.0, help="budget as a multiple of the naive cut's")
    p.add_argument("--loop", action="store_true", help="compact as an agent loop does, round by round")
    p.add_argument("--limit", type=int, default=0, help="conversations per data set (0: all)")
    p.add_argument("--json", action="store_true", help="one JSON object (data set -> totals) on stdout")
    p.add_argument("--tool-calls", choices=(*STYLES, *READ_TOOL_STYLES),
                   help="the SWE runs as tool calls, results in this style (read_tool, read_tool_raw: Read and Bash calls; "
                        "read_tool_json: hermes-agent's read_file and terminal)")
    args = p.parse_args(argv)
    root = SHARED if shared_available() else LOCAL
    if root is LOCAL:
        print("../shared/data is absent: reading the subset in tests/data", file=sys.stderr)
    rows: dict[str, list[Case]] = {}
    kinds: collections.Counter[str] = collections.Counter()
    for name in DATA_SETS:
        convs = load_conversations(root, name)
        if args.tool_calls and name == "mini-swe-agent-gemini3":
            convs = [dict(c, messages=as_terminal_calls(c["messages"], args.tool_calls)[0],
                          tools=tools_for(args.tool_calls)) for c in convs]
            name = f"{name}, terminal calls ({args.tool_calls})"
        rows[name] = list(cases(convs[:args.limit] if args.limit else convs, args.multiple, loop=args.loop))
        for c in rows[name]:
            for f, nv, cf in zip(c.facts, c.naive, c.compactor or [False] * len(c.facts), strict=True):
                if not cf and (args.lost or (args.misses and nv)):
                    print(f"{c.name.rsplit('#', 1)[-1][:40]:40} {c.cut:.2f} naive={int(nv)} {f}")
                if not cf:
                    kinds["lost, naive kept" if nv else "lost by both"] += 1
    if args.json:
        print(json.dumps({name: totals(cs) for name, cs in rows.items()}))
        return 0
    print(table(rows))
    if args.misses or args.lost:
        print(dict(kinds))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
