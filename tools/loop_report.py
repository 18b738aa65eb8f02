"""Facts an agent loop keeps: each probe fixture fed round by round and compacted each time it
passes 1.2x its budget (``contextfold.evaluation.agent_loop``), scored on the last history,
beside one compaction of the whole history at the same budget. The budget is the naive cut's
(head + last 30% of the messages), as the scorecard's; the loop is run with one Compactor
kept across it and with a new one per compaction (a caller that keeps none).

    python tools/loop_report.py                 # the four probe sets, ../shared/data
    python tools/loop_report.py --formats       # per wire format: reading the turns vs merging
    python tools/loop_report.py --proxy         # the loop through the proxy's request path (and with --recall)
    python tools/loop_report.py --proxy --formats   # ... in each API the proxy serves
    python tools/loop_report.py --interleaved   # many conversations through one Compactor
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

from contextfold import CompactionError, fold_sources
from contextfold.evaluation import (
    Fixture,
    _tokens,
    agent_loop,
    facts_seen,
    load_fixtures,
    loop_table,
    naive_cut,
    proxy_loop,
    visible_text,
)

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "support"))
PROBES = ROOT / "tests" / "data" / "probes"
SETS = {"project's probe set": ("airline.refs.json", "swe.refs.json"),
        "held-out probe sets": ("heldout.refs.json", "heldout2.refs.json")}


def in_shape(fx: Fixture, shape: str, *, system_apart: bool, tools: bool = True) -> tuple[Fixture, int]:
    """``fx`` converted to ``shape`` as the format scorecard converts it (``system_apart``: a
    leading system message becomes the fixture's system prompt; ``tools``: its tools kept), and
    its budget there: the naive cut's share of the history, as in the chat format."""
    from wire_shapes import PROVIDER, convert

    share = _tokens(naive_cut(fx.messages), fx) / _tokens(fx.messages, fx)
    src, system = [dict(m) for m in fx.messages], fx.system
    if system_apart and src and src[0].get("role") == "system":
        system = src[0]["content"] if system is None else system
        src = src[1:]
    g = dataclasses.replace(fx, messages=convert(src, shape), provider=PROVIDER[shape], system=system,
                            tools=fx.tools if tools else None)
    return g, max(1, int(_tokens(g.messages, g) * share))


def per_format(data: Path) -> None:
    """The four sets' agent loops in each wire format (converted as the format scorecard
    converts them), reading the turns behind the summaries and merging them instead
    (``fold_sources.SPAN_BUDGETS = 0``): facts kept, compactions, loops that raised."""
    from wire_shapes import SHAPES

    fixtures = load_fixtures([PROBES / f for files in SETS.values() for f in files], data_dir=data)
    total = sum(len(p.expected_facts) for fx in fixtures for p in fx.probes)
    print(f"| format | reading the turns (facts of {total}, compactions) | merging the summaries | loops that raised |")
    print("| --- | --- | --- | --- |")
    for shape in SHAPES:
        cells, raised = [], 0
        for span_budgets in (fold_sources.SPAN_BUDGETS, 0):
            saved, fold_sources.SPAN_BUDGETS = fold_sources.SPAN_BUDGETS, span_budgets
            kept = runs = 0
            for fx in fixtures:
                g, budget = in_shape(fx, shape, system_apart=shape in ("anthropic", "gemini", "bedrock"))
                system = g.system
                try:
                    out, n = agent_loop(g, budget=budget, min_free_share=0.0)
                except CompactionError:
                    raised += 1
                    continue
                runs += n
                text = visible_text(out, system)
                kept += sum(sum(facts_seen(text, p.expected_facts)) for p in fx.probes)
            fold_sources.SPAN_BUDGETS = saved
            cells.append(f"{kept} ({runs})")
        print(f"| {shape} | {cells[0]} | {cells[1]} | {raised} |", flush=True)


def through_proxy(data: Path) -> None:
    """Each set's loop through the proxy's request path (``proxy_loop``: the client sends its
    whole history, the proxy folds it) beside the loop with one Compactor: facts kept on the last
    body sent, probes with half their facts, compactions."""
    print("| probes | loop, one Compactor | loop through the proxy | ... with `--recall` "
          "| compactions (loop / proxy / with `--recall`) |")
    print("| --- | --- | --- | --- | --- |")
    for name, files in SETS.items():
        fixtures = load_fixtures([PROBES / f for f in files], data_dir=data)
        kept = {"loop": [0, 0, 0], "proxy": [0, 0, 0], "recall": [0, 0, 0]}
        total = 0
        for fx in fixtures:
            budget = _tokens(naive_cut(fx.messages), fx)
            runs = {"loop": agent_loop(fx, budget=budget, min_free_share=0.0), "proxy": proxy_loop(fx, budget=budget),
                    "recall": proxy_loop(fx, budget=budget, recall=True)}
            for key, (out, n) in runs.items():
                text = visible_text(out, fx.system)
                kept[key][2] += n
                for p in fx.probes:
                    seen = facts_seen(text, p.expected_facts)
                    kept[key][0] += sum(seen)
                    kept[key][1] += 2 * sum(seen) >= len(seen)
            total += sum(len(p.expected_facts) for p in fx.probes)
        cells = [f"{kept[k][0]} of {total} ({kept[k][1]} with half)" for k in ("loop", "proxy", "recall")]
        print(f"| {name} | {cells[0]} | {cells[1]} | {cells[2]} | {kept['loop'][2]} / {kept['proxy'][2]} / "
              f"{kept['recall'][2]} |", flush=True)


#: The proxy's route and a model it knows, per wire shape of the format scorecard (Bedrock has no
#: route of its own).
ROUTES = {"openai": ("chat", "gpt-4o"), "responses": ("responses", "gpt-4o"),
          "anthropic": ("anthropic", "claude-sonnet-4-5"), "gemini": ("gemini", None)}


def proxy_per_format(data: Path) -> None:
    """The four sets through the proxy in each API it serves (converted as the format
    scorecard converts them, without tools), its folds reading the turns behind their summaries
    and merging them instead (``fold_sources.SPAN_BUDGETS = 0``): facts kept, compactions."""

    fixtures = load_fixtures([PROBES / f for files in SETS.values() for f in files], data_dir=data)
    total = sum(len(p.expected_facts) for fx in fixtures for p in fx.probes)
    print(f"| API | reading the turns (facts of {total}, compactions) | merging the summaries |")
    print("| --- | --- | --- |")
    for shape, (api, model) in ROUTES.items():
        cells = []
        for span_budgets in (fold_sources.SPAN_BUDGETS, 0):
            saved, fold_sources.SPAN_BUDGETS = fold_sources.SPAN_BUDGETS, span_budgets
            kept = runs = 0
            for fx in fixtures:
                g, budget = in_shape(fx, shape, system_apart=shape != "openai", tools=False)
                system = g.system
                out, n = proxy_loop(g, budget=budget, api=api, model=model)
                runs += n
                text = visible_text(out, system)
                kept += sum(sum(facts_seen(text, p.expected_facts)) for p in fx.probes)
            fold_sources.SPAN_BUDGETS = saved
            cells.append(f"{kept} ({runs})")
        print(f"| {api} | {cells[0]} | {cells[1]} |", flush=True)


def interleaved(data: Path) -> None:
    """The held-out sets' agent loops interleaved round by round through one Compactor per tool
    set (a framework hook serving many conversations), each compacted at its own naive cut's
    budget (set on the shared Compactor before each of its compactions), with the span memory
    as it is and as it was (8 spans, the copies of the last history only): facts kept."""
    import json
    from collections import defaultdict

    from contextfold import Compactor
    from contextfold.evaluation import LOOP_TRIGGER, _head_end, _tail_from

    fixtures = load_fixtures([PROBES / f for f in SETS["held-out probe sets"]], data_dir=data)
    groups: dict[str, list] = defaultdict(list)
    for fx in fixtures:
        groups[json.dumps(fx.tools, sort_keys=True)].append(fx)
    total = sum(len(p.expected_facts) for fx in fixtures for p in fx.probes)
    for label, spans, histories in (("now", fold_sources.MAX_SPANS, fold_sources.COPY_HISTORIES), ("as before", 8, 1)):
        saved = fold_sources.MAX_SPANS, fold_sources.COPY_HISTORIES
        fold_sources.MAX_SPANS, fold_sources.COPY_HISTORIES = spans, histories
        kept = 0
        for group in groups.values():
            c = Compactor(provider="openai", tools=group[0].tools, wire_format="chat", min_free_share=0.0, budget=1)
            c.sources.shared = False  # (what this Compactor's own memory keeps)
            loops = [[fx, _head_end(fx.messages), list(fx.messages[:_head_end(fx.messages)]),
                      _tokens(naive_cut(fx.messages), fx)] for fx in group]
            while any(fed < len(fx.messages) for fx, fed, _, _ in loops):
                for loop in loops:
                    fx, fed, current, budget = loop
                    if fed >= len(fx.messages):
                        continue
                    end = _tail_from(fx.messages, min(len(fx.messages), fed + 1))
                    current, fed = current + fx.messages[fed:end], end
                    tokens = _tokens(current, fx)
                    if tokens > budget * LOOP_TRIGGER or (fed >= len(fx.messages) and tokens > budget):
                        c._budget = budget  # (a hook has one budget; each conversation its own here)
                        try:
                            current = list(c.compact(current).messages)
                        except CompactionError:
                            pass
                    loop[1], loop[2] = fed, current
            for fx, _, current, _ in loops:
                text = visible_text(current, fx.system)
                kept += sum(sum(facts_seen(text, p.expected_facts)) for p in fx.probes)
        fold_sources.MAX_SPANS, fold_sources.COPY_HISTORIES = saved
        print(f"interleaved through {len(groups)} Compactors, span memory {label}: {kept} of {total} facts", flush=True)


def main() -> None:
    data = ROOT.parent / "shared" / "data"
    if not data.is_dir():
        sys.exit("needs ../shared/data (the probe sets' conversations)")
    if "--formats" in sys.argv[1:] and "--proxy" not in sys.argv[1:]:
        per_format(data)
        return
    if "--interleaved" in sys.argv[1:]:
        interleaved(data)
        return
    if "--proxy" in sys.argv[1:]:
        (proxy_per_format if "--formats" in sys.argv[1:] else through_proxy)(data)
        return
    for i, (name, files) in enumerate(SETS.items()):
        table = loop_table(load_fixtures([PROBES / f for f in files], data_dir=data), name=name)
        print(table if i == 0 else table.splitlines()[-1])


if __name__ == "__main__":
    main()
