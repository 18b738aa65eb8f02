"""What compaction keeps, per wire format: the project's probe set at the naive cut's budget,
each conversation rewritten in the five formats (``tests/support/wire_shapes.convert``).

The naive cut's budget is taken as a share of the conversation's own estimate in OpenAI chat,
then applied to the converted history's estimate in its format's provider. In the formats whose
APIs take the system prompt beside the messages (Anthropic, Gemini, Bedrock), a leading system
message goes to ``system=``, as a user of those APIs passes it (left in the list, it would be a
user turn and the task would be folded). Deterministic scoring as ``contextfold eval``: a fact
counts when it occurs whole-word in what the continuing model reads.

A second table scores the SWE runs as a tool-calling agent writes them
(``tests/support/terminal_agent.as_terminal_calls``: each command a ``terminal`` call, each
observation its result in a JSON envelope, with an exit-code trailer line, or bare; and as a
coding agent's ``Read`` and ``Bash`` calls), in OpenAI chat, beside the runs as mini-swe-agent
wrote them.

    python tools/format_scorecard.py            # needs ../shared/data (CONTEXTFOLD_SHARED_DATA)
    python tools/format_scorecard.py --held-out # the held-out probe sets instead
    python tools/format_scorecard.py --held-out --multiple 0.75   # at 0.75x the naive budget
    python tools/format_scorecard.py --held-out --messages-share  # the share of the messages alone

``--messages-share`` translates the naive cut's budget differently: the fixed part of a request
(system prompt and tool definitions) whole, in each format's own tokens, plus the naive cut's
share of the messages' tokens. The default applies one share to the whole request, so a format
whose provider prices the fixed part higher (Anthropic's tool definitions: 2,374 tokens against
OpenAI's 1,594 for the airline's 14 tools, its tool-use system prompt included) leaves its
messages less room: on the held-out airline dialogues that alone moved Anthropic 3.5 points
below OpenAI chat.

With ``--held-out`` a third table scores the SWE runs as ``Read`` and ``Bash`` calls in the
formats whose tool results carry the provider's error flag (Anthropic ``is_error``, Bedrock
``status: "error"``), with every run that exited non-zero flagged and with none flagged.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "support"))

import contextfold as cf  # noqa: E402
from contextfold import _core  # noqa: E402
from contextfold import evaluation as ev  # noqa: E402
from transcripts import SHARED, shared_available  # noqa: E402
from terminal_agent import (READ_TOOL_JSON_STYLE, READ_TOOL_STYLE, READ_TOOL_STYLES, STYLES,  # noqa: E402
                            as_terminal_calls, tools_for)
from wire_shapes import PROVIDER, SHAPES, convert  # noqa: E402

FIXTURES = [ROOT / "tests" / "data" / "probes" / "airline.refs.json", ROOT / "tests" / "data" / "probes" / "swe.refs.json"]
HELD_OUT = [ROOT / "tests" / "data" / "probes" / "heldout.refs.json", ROOT / "tests" / "data" / "probes" / "heldout2.refs.json"]
#: The formats that take the system prompt beside the messages.
SYSTEM_APART = ("anthropic", "gemini", "bedrock")


def _fixed(messages: list[dict], provider: str, tools: object, system: object) -> int:
    """Tokens of a request's fixed part: its system prompt (beside the messages or as their
    first) and tool definitions."""
    lead = messages[:1] if messages and messages[0].get("role") in ("system", "developer") else []
    return int(_core.estimate(lead, provider=provider, tools=tools, system=system))  # type: ignore[arg-type]


def score(fixtures: list[ev.Fixture], shape: str, multiple: float = 1.0,
          messages_share: bool = False) -> tuple[int, int, int, int, int]:
    """(facts kept, facts, probes with at least half their facts, probes, compactions raised), at
    ``multiple`` times the naive cut's budget; ``messages_share``: translated as the fixed part
    whole plus the naive cut's share of the messages (see the module docs)."""
    kept = total = half = probes = raised = 0
    for f in fixtures:
        whole, cut = ev._tokens(f.messages, f), ev._tokens(ev.naive_cut(f.messages), f)
        fixed_chat = _fixed(f.messages, "openai", f.tools, f.system) if messages_share else 0
        share = multiple * (cut - fixed_chat) / (whole - fixed_chat)
        src = [dict(m) for m in f.messages]
        system = f.system
        if shape in SYSTEM_APART and src and src[0].get("role") == "system":
            system = src[0]["content"] if system is None else system
            src = src[1:]
        msgs = convert(src, shape)
        provider = PROVIDER[shape]
        size = int(_core.estimate(msgs, provider=provider, tools=f.tools, system=system))  # type: ignore[arg-type]
        fixed = _fixed(msgs, provider, f.tools, system) if messages_share else 0
        c = cf.Compactor(provider=provider, budget=max(1, fixed + int((size - fixed) * share)),  # type: ignore[arg-type]
                         tools=f.tools, system=system, min_free_share=0.0)
        try:
            out: list | None = list(c.compact(msgs).messages)
        except cf.CompactionError:
            raised += 1
            out = None
        text = ev.visible_text(out, system) if out is not None else ""
        for p in f.probes:
            seen = sum(ev.facts_seen(text, p.expected_facts)) if out is not None else 0
            kept += seen
            total += len(p.expected_facts)
            probes += 1
            half += seen * 2 >= len(p.expected_facts)
    return kept, total, half, probes, raised


def flagged(messages: list[dict], codes: list[int | None]) -> list[dict]:
    """``messages`` (an ``as_terminal_calls`` rewrite) with each result of a run that exited
    non-zero flagged as the provider's error (``is_error``, which ``wire_shapes.convert``
    writes in the formats that have one)."""
    out, k = [], 0
    for m in messages:
        if m.get("role") == "tool":
            m = dict(m, is_error=True) if codes[k] not in (0, None) else m
            k += 1
        out.append(m)
    return out


def main() -> None:
    multiple = float(sys.argv[sys.argv.index("--multiple") + 1]) if "--multiple" in sys.argv[1:] else 1.0
    messages_share = "--messages-share" in sys.argv[1:]
    if not shared_available():
        sys.exit("needs ../shared/data (set CONTEXTFOLD_SHARED_DATA): the fixtures name its conversations")
    fixtures = ev.load_fixtures(HELD_OUT if "--held-out" in sys.argv[1:] else FIXTURES, data_dir=SHARED)
    print("| format | facts kept | probes with >= half their facts | raised |")
    print("| --- | --- | --- | --- |")
    for shape in SHAPES:
        kept, total, half, probes, raised = score(fixtures, shape, multiple, messages_share)
        print(f"| {shape} | {100 * kept / total:.1f}% | {half} of {probes} | {raised} |", flush=True)
    swe = [f for f in fixtures if f.name.startswith("mini-swe-agent")]
    print("\n| SWE runs (OpenAI chat) | facts kept | probes with >= half their facts | raised |")
    print("| --- | --- | --- | --- |")
    for style in ("mini-swe-agent", *STYLES, *READ_TOOL_STYLES):
        shaped = swe if style == "mini-swe-agent" else [
            ev.Fixture(f.name, as_terminal_calls(f.messages, style)[0], f.probes, tools=tools_for(style)) for f in swe]
        kept, total, half, probes, raised = score(shaped, "openai", multiple)
        label = (style if style == "mini-swe-agent" else "Read and Bash calls, output alone"
                 if style == READ_TOOL_STYLE else "hermes-agent's terminal, read_file and search_files (JSON results)"
                 if style == READ_TOOL_JSON_STYLE else "Read (lines unnumbered) and Bash calls"
                 if style in READ_TOOL_STYLES else f"terminal calls, {style} results")
        print(f"| {label} | {100 * kept / total:.1f}% | {half} of {probes} | {raised} |", flush=True)
    if "--held-out" not in sys.argv[1:]:
        return
    print("\n| SWE runs as Read and Bash calls | facts kept | probes with >= half their facts | raised |")
    print("| --- | --- | --- | --- |")
    for shape in ("anthropic", "bedrock"):
        for flag in (False, True):
            shaped = []
            for f in swe:
                msgs, codes = as_terminal_calls(f.messages, READ_TOOL_STYLE)
                shaped.append(ev.Fixture(f.name, flagged(msgs, codes) if flag else msgs, f.probes,
                                         tools=tools_for(READ_TOOL_STYLE)))
            kept, total, half, probes, raised = score(shaped, shape, multiple)
            label = f"{shape}, {'failed runs flagged' if flag else 'no flag'}"
            print(f"| {label} | {100 * kept / total:.1f}% | {half} of {probes} | {raised} |", flush=True)


if __name__ == "__main__":
    main()
