"""What a compaction keeps, measured: probes (questions a continuing agent must answer, each with
the facts its answer needs) scored against what the continuing model sees after a compaction.

A fixture is ``{"messages": [...], "probes": [{"question": ..., "expected_facts": [...]}]}``
(optionally ``"provider"``, ``"tools"``, ``"system"``, ``"name"``). A fixture file holds one
fixture, a list of them, or ``{"fixtures": [...]}``; a ``.jsonl`` file one fixture per line. A
fixture may reference a conversation of a JSONL data set instead of carrying its messages:
``{"ref": {"file": "tau-bench-airline/conversations.jsonl", "source": "...", "end": 40},
"probes": [...]}`` reads ``messages[:end]`` of the row whose ``source`` matches, from the
directory given as ``data_dir`` (the project's ``../shared/data``).

Deterministic scoring: an expected fact counts when it occurs whole-word (case-insensitive) in
the text the continuing model sees: every string of the compacted messages as sent (the summary
included), the system prompt too. Each fixture is scored at the budget of the naive cut (the head
through the first user request + the last 30% of the messages, priced by the project's estimator,
tools and system included) and at other multiples of it, per strategy, beside the naive cut at
the same budget (the head + the longest tail that fits).

With an answerer (an OpenAI-compatible ``/chat/completions`` endpoint), the model answers each
probe from the compacted history and a judge (the same endpoint unless given) says whether the
answer holds the expected facts; ``replicates`` runs give the spread.
"""

from __future__ import annotations

import json
import math
import random
import re
import statistics
import urllib.request
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contextfold import _core
from contextfold.compactor import Compactor, detect_wire_format
from contextfold.content_store import MemoryContentStore
from contextfold.errors import CompactionError
from contextfold.evaluation_peers import PEERS, peer_compaction, peer_missing, peer_summary
from contextfold.fold_sources import forget_process_sources
from contextfold.summary_room import index_at

__all__ = [
    "Answerer",
    "Evaluation",
    "Fixture",
    "Probe",
    "ProbeScore",
    "Successive",
    "agent_loop",
    "evaluate",
    "loop_table",
    "facts_seen",
    "load_fixtures",
    "naive_cut",
    "planted",
    "proxy_loop",
    "successive",
    "successive_setup",
    "successive_table",
    "visible_text",
]

#: Share of the messages the naive cut keeps at the end (the issue's yardstick: head + last 30%).
NAIVE_TAIL_SHARE = 0.3
#: Budgets scored, as multiples of the naive cut's budget.
DEFAULT_BUDGETS: tuple[float, ...] = (0.5, 1.0, 1.5)
DEFAULT_STRATEGIES: tuple[str, ...] = ("summarize", "hybrid", "mask")


@dataclass(frozen=True, slots=True)
class Probe:
    """A question a continuing agent must answer and the literal facts its answer needs."""

    question: str
    expected_facts: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Fixture:
    """A conversation and its probes; ``provider`` prices it; ``tools`` / ``system`` are sent
    with it."""

    name: str
    messages: list[Any]
    probes: tuple[Probe, ...]
    provider: str = "openai"
    tools: list[Any] | None = None
    system: Any = None


@dataclass(frozen=True, slots=True)
class ProbeScore:
    """One probe under one strategy at one budget: ``kept`` of ``total`` facts seen; ``judged``
    the share of replicates the judge accepted (None without an answerer)."""

    fixture: str
    question: str
    budget_name: str
    strategy: str
    kept: int
    total: int
    judged: tuple[bool, ...] = ()


@dataclass(frozen=True, slots=True)
class Run:
    """One fixture compacted by one strategy at one budget: tokens after (estimator's), the
    budget, whether the compaction raised, and the summary's tokens (0 when none)."""

    fixture: str
    budget_name: str
    strategy: str
    budget: int
    tokens: int
    raised: str | None = None


@dataclass(frozen=True, slots=True)
class Evaluation:
    """Scores of every probe x strategy x budget, and every run's tokens."""

    scores: tuple[ProbeScore, ...]
    runs: tuple[Run, ...]
    strategies: tuple[str, ...]
    budgets: tuple[str, ...]
    replicates: int = 0

    def rows(self) -> list[dict[str, Any]]:
        """One row per (budget, strategy): facts kept (share), probes with at least half their
        facts, the same against the naive cut (ratio), budget used when it compacted (median
        share), runs that raised, runs that came out over the budget (their facts still count:
        read them beside this column); judged accuracy mean and spread when an answerer ran."""
        out: list[dict[str, Any]] = []
        for b in self.budgets:
            naive = [s for s in self.scores if s.budget_name == b and s.strategy == "naive"]
            naive_half = sum(1 for s in naive if 2 * s.kept >= s.total)
            for strategy in ("naive", *self.strategies):
                sel = [s for s in self.scores if s.budget_name == b and s.strategy == strategy]
                if not sel:
                    continue
                kept = sum(s.kept for s in sel)
                total = sum(s.total for s in sel)
                half = sum(1 for s in sel if 2 * s.kept >= s.total)
                runs = [r for r in self.runs if r.budget_name == b and r.strategy == strategy]
                used = [r.tokens / r.budget for r in runs if r.raised is None and r.budget]
                row: dict[str, Any] = {
                    "budget": b,
                    "strategy": strategy,
                    "facts_kept": kept / total if total else 0.0,
                    "probes_half": half,
                    "probes": len(sel),
                    "half_vs_naive": half / naive_half if naive_half else math.inf,
                    "budget_used_median": statistics.median(used) if used else 0.0,
                    "raised": sum(1 for r in runs if r.raised is not None),
                    "over_budget": sum(1 for r in runs if r.raised is None and r.tokens > r.budget),
                }
                if self.replicates:
                    per_rep = [
                        sum(1 for s in sel if len(s.judged) > k and s.judged[k]) / len(sel)
                        for k in range(self.replicates)
                    ]
                    row["judged_mean"] = statistics.fmean(per_rep)
                    row["judged_min"] = min(per_rep)
                    row["judged_max"] = max(per_rep)
                    row["judged_stdev"] = statistics.pstdev(per_rep)
                out.append(row)
        return out

    def markdown(self) -> str:
        """The scorecard as a Markdown table."""
        judged = self.replicates > 0
        head = ("| budget | strategy | facts kept | probes >= half facts | vs naive | budget used (median) | raised "
                "| over budget |")
        sep = "| --- | --- | --- | --- | --- | --- | --- | --- |"
        if judged:
            head += f" judged (mean, min-max of {self.replicates}) |"
            sep += " --- |"
        lines = [head, sep]
        for r in self.rows():
            vs = "-" if math.isinf(r["half_vs_naive"]) else f"{r['half_vs_naive']:.2f}x"
            line = (
                f"| {r['budget']} | {r['strategy']} | {100 * r['facts_kept']:.1f}% | {r['probes_half']} of "
                f"{r['probes']} | {vs} | {100 * r['budget_used_median']:.1f}% | {r['raised']} | {r['over_budget']} |"
            )
            if judged:
                line += (f" {100 * r['judged_mean']:.1f}% ({100 * r['judged_min']:.1f}-"
                         f"{100 * r['judged_max']:.1f}%) |")
            lines.append(line)
        return "\n".join(lines)


# ----- fixtures -------------------------------------------------------------------------------


def _fixture(doc: Mapping[str, Any], name: str, data_dir: Path | None, rows: dict[str, dict[str, Any]]) -> Fixture:
    if not isinstance(doc, Mapping):
        raise ValueError(f"{name}: a fixture is an object with messages and probes")
    probes_doc = doc.get("probes")
    if not isinstance(probes_doc, list) or not probes_doc:
        raise ValueError(f"{name}: 'probes' must be a non-empty list")
    probes = []
    for k, p in enumerate(probes_doc):
        facts = p.get("expected_facts") if isinstance(p, Mapping) else None
        if not isinstance(p, Mapping) or not isinstance(p.get("question"), str) or not isinstance(facts, list) \
                or not facts or not all(isinstance(f, str) and f.strip() for f in facts):
            raise ValueError(f"{name}: probe {k} needs a 'question' (str) and 'expected_facts' (non-empty strs)")
        probes.append(Probe(p["question"], tuple(facts)))
    provider = str(doc.get("provider") or "openai")
    tools = doc.get("tools")
    system = doc.get("system")
    if "ref" in doc:
        ref = doc["ref"]
        if data_dir is None:
            raise ValueError(f"{name}: a fixture with 'ref' needs data_dir (the shared data directory)")
        file = data_dir / str(ref["file"])
        key = str(file)
        if key not in rows:
            with file.open(encoding="utf-8") as f:
                for line in f:
                    row = json.loads(line)
                    rows[f"{key}#{row['source']}"] = row
            rows[key] = {}
        row = rows.get(f"{key}#{ref['source']}")
        if row is None:
            raise ValueError(f"{name}: no conversation {ref['source']!r} in {file}")
        messages = list(row["messages"])[: ref.get("end")]
        tools = tools if tools is not None else row.get("tools")
        name = str(doc.get("name") or ref["source"])
    else:
        given = doc.get("messages")
        if not isinstance(given, list):
            raise ValueError(f"{name}: 'messages' must be a list")
        messages = given
        name = str(doc.get("name") or name)
    return Fixture(name, messages, tuple(probes), provider, tools, system)


def load_fixtures(paths: Iterable[str | Path], *, data_dir: str | Path | None = None) -> list[Fixture]:
    """Fixtures from JSON / JSONL files (see the module docstring); references to conversations
    of a data set are read from ``data_dir``."""
    out: list[Fixture] = []
    rows: dict[str, dict[str, Any]] = {}
    ddir = Path(data_dir) if data_dir is not None else None
    for p in paths:
        path = Path(p)
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".jsonl":
            docs = [json.loads(line) for line in text.splitlines() if line.strip()]
        else:
            doc = json.loads(text)
            docs = doc.get("fixtures", [doc]) if isinstance(doc, dict) else doc
        for k, d in enumerate(docs):
            out.append(_fixture(d, f"{path.name}[{k}]", ddir, rows))
    return out


# ----- what the continuing model sees ---------------------------------------------------------


def _strings(value: Any, out: list[str]) -> None:
    if isinstance(value, str):
        # A tool's JSON result (a terminal tool's `{"output": "...\\n...", "exit_code": 0}`) is
        # read as its arguments are: its escapes decoded (see ``_arguments``).
        out.append(_arguments(value) if value.lstrip()[:1] in ("{", "[") else value)
    elif isinstance(value, Mapping):
        for k, v in value.items():
            if k == "arguments" and isinstance(v, str):
                out.append(_arguments(v))
            else:
                _strings(v, out)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _strings(v, out)
    elif hasattr(value, "model_dump"):
        _strings(value.model_dump(), out)


_JSON_ESCAPE = re.compile(r'\\(["\\/bfnrt]|u[0-9a-fA-F]{4})')
_ESCAPED = {'"': '"', "\\": "\\", "/": "/", "b": " ", "f": " ", "n": "\n", "r": "\r", "t": "\t"}


def _arguments(text: str) -> str:
    """A tool call's JSON arguments (chat ``tool_calls``, Responses ``function_call``), or any
    JSON text a message holds (a tool's result in a JSON envelope), as the model reads them,
    keys and all: a script's lines, not ``\\n``-joined escapes, whose ``n`` would glue to the
    word after it and hide every identifier that opens a line from a whole-word match."""
    if "\\" not in text:
        return text
    return _JSON_ESCAPE.sub(lambda m: _ESCAPED.get(m[1]) or chr(int(m[1][1:], 16)), text)


def visible_text(messages: Sequence[Any], system: Any = None) -> str:
    """Every string of the messages (and the system prompt), one per line: what the continuing
    model reads, arguments and tool results included."""
    out: list[str] = []
    _strings(system, out)
    _strings(list(messages), out)
    return "\n".join(out)


def _fact_pattern(fact: str) -> re.Pattern[str]:
    return re.compile(r"(?<![A-Za-z0-9_])" + re.escape(fact.strip()) + r"(?![A-Za-z0-9_])", re.IGNORECASE)


def facts_seen(text: str, facts: Sequence[str]) -> list[bool]:
    """Which facts occur whole-word (case-insensitive) in ``text``."""
    return [bool(_fact_pattern(f).search(text)) for f in facts]


# ----- the naive cut --------------------------------------------------------------------------


def _head_end(messages: Sequence[Any]) -> int:
    """Messages through the first user request (system and developer messages before it too)."""
    for i, m in enumerate(messages):
        if isinstance(m, Mapping) and m.get("role") == "user":
            return i + 1
    return min(1, len(messages))


def _tail_from(messages: Sequence[Any], start: int) -> int:
    """``start`` moved forward to the next cut that keeps every tool group whole (the core's
    legal cuts, in the history's own format), so the tail never opens on an orphan result."""
    legal = _core.legal_cuts_of(messages)
    while start < len(messages) and not legal[start]:
        start += 1
    return start


def naive_cut(messages: Sequence[Any], *, budget: int | None = None, provider: str = "openai", tools: Any = None,
              system: Any = None) -> list[Any]:
    """The naive cut: the head (through the first user request) and the last 30% of the
    messages; with ``budget`` (tokens), the head and the longest tail that fits it."""
    msgs = list(messages)
    head = _head_end(msgs)
    if budget is None:
        start = max(head, len(msgs) - math.ceil(NAIVE_TAIL_SHARE * len(msgs)))
        return msgs[:head] + msgs[_tail_from(msgs, start):]
    costs = _core.estimate_each(msgs, provider=provider)  # type: ignore[arg-type]
    overhead = _core.estimate([], provider=provider, tools=tools, system=system)  # type: ignore[arg-type]
    used = overhead + sum(costs[:head])
    start = len(msgs)
    while start > head and used + costs[start - 1] <= budget:
        start -= 1
        used += costs[start]
    return msgs[:head] + msgs[_tail_from(msgs, start):]


def _tokens(messages: Sequence[Any], fx: Fixture) -> int:
    return int(_core.estimate(list(messages), provider=fx.provider, tools=fx.tools, system=fx.system))  # type: ignore[arg-type]


# ----- answerer and judge ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Answerer:
    """An OpenAI-compatible endpoint (``url`` is the base, e.g. ``http://localhost:11434/v1``)
    that answers probes from a compacted history; ``judge_model`` (default ``model``) scores the
    answers. ``timeout`` in seconds per call."""

    url: str
    model: str
    judge_model: str | None = None
    api_key: str | None = None
    timeout: float = 120.0
    temperature: float = 0.7
    max_history_chars: int = 400_000
    headers: Mapping[str, str] = field(default_factory=dict)

    def _chat(self, model: str, content: str, temperature: float) -> str:
        body = json.dumps({"model": model, "temperature": temperature,
                           "messages": [{"role": "user", "content": content}]}).encode()
        headers = {"Content-Type": "application/json", **self.headers}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        req = urllib.request.Request(self.url.rstrip("/") + "/chat/completions", data=body, headers=headers)
        with urllib.request.urlopen(req, timeout=self.timeout) as resp:  # noqa: S310 - the caller's URL
            doc = json.loads(resp.read(4_000_000))
        text = doc["choices"][0]["message"].get("content")
        return text if isinstance(text, str) else ""

    def answer(self, history: str, question: str) -> str:
        """The model's answer to ``question`` from the conversation text ``history``."""
        prompt = ("Below is the conversation of an AI agent so far (it may contain a summary of earlier "
                  "turns). Answer the question from it, citing exact identifiers; say 'unknown' if it "
                  "does not say.\n\n<conversation>\n" + history[-self.max_history_chars:].replace(
                      "</conversation", "<\\/conversation") + "\n</conversation>\n\nQuestion: " + question)
        return self._chat(self.model, prompt, self.temperature)

    def judge(self, question: str, facts: Sequence[str], answer: str) -> bool:
        """True when the judge says the answer states every expected fact."""
        prompt = ("Does the ANSWER state every EXPECTED FACT (same identifiers and values; wording may "
                  "differ)? Reply with exactly YES or NO.\n\nQUESTION: " + question + "\nEXPECTED FACTS: "
                  + json.dumps(list(facts)) + "\nANSWER: <answer>" + answer.replace("</answer", "<\\/answer")
                  + "</answer>")
        verdict = self._chat(self.judge_model or self.model, prompt, 0.0)
        return verdict.strip().upper().startswith("YES")


# ----- the evaluation -------------------------------------------------------------------------


def _budget_name(multiple: float) -> str:
    return "naive" if multiple == 1.0 else f"{multiple:g}x naive"


def evaluate(
    fixtures: Sequence[Fixture],
    *,
    strategies: Sequence[str] = DEFAULT_STRATEGIES,
    budgets: Sequence[float] = DEFAULT_BUDGETS,
    summarizer: Any = None,
    answerer: Answerer | None = None,
    replicates: int = 3,
    compactor_options: Mapping[str, Any] | None = None,
) -> Evaluation:
    """Score every fixture's probes under each strategy at each budget (multiples of the naive
    cut's budget, priced by the estimator), beside the naive cut at the same budget. With an
    ``answerer``, each probe is also answered ``replicates`` times (at least 3) and judged.
    A strategy named after a peer (``contextfold.evaluation_peers.PEERS``: ``"langchain"``)
    runs that peer's compaction instead of a ``Compactor``."""
    if answerer is not None and replicates < 3:
        raise ValueError(f"replicates must be >= 3 with an answerer, got {replicates}")
    for strategy in strategies:
        if strategy in PEERS and (why := peer_missing(strategy)) is not None:
            raise ValueError(why)
    scores: list[ProbeScore] = []
    runs: list[Run] = []
    names = [_budget_name(b) for b in budgets]
    for fx in fixtures:
        base = _tokens(naive_cut(fx.messages), fx)
        for multiple, bname in zip(budgets, names, strict=True):
            budget = max(1, int(base * multiple))
            outputs: list[tuple[str, list[Any] | None]] = []
            cut = naive_cut(fx.messages, budget=budget, provider=fx.provider, tools=fx.tools, system=fx.system) \
                if multiple != 1.0 else naive_cut(fx.messages)
            runs.append(Run(fx.name, bname, "naive", budget, _tokens(cut, fx)))
            outputs.append(("naive", cut))
            for strategy in strategies:
                if strategy in PEERS:
                    peer = peer_compaction(strategy, fx.messages, budget=budget, provider=fx.provider,
                                           tools=fx.tools, system=fx.system)
                    runs.append(Run(fx.name, bname, strategy, budget, _tokens(peer, fx)))
                    outputs.append((strategy, peer))
                    continue
                c = Compactor(provider=fx.provider, budget=budget, strategy=strategy,  # type: ignore[arg-type]
                              summarizer=summarizer, tools=fx.tools, system=fx.system,
                              wire_format=detect_wire_format(fx.messages, fx.provider),
                              min_free_share=0.0, **dict(compactor_options or {}))
                try:
                    r = c.compact(fx.messages)
                except CompactionError as e:
                    runs.append(Run(fx.name, bname, strategy, budget, 0, raised=str(e)))
                    outputs.append((strategy, None))
                    continue
                runs.append(Run(fx.name, bname, strategy, budget, r.tokens_after))
                outputs.append((strategy, r.messages))
            for strategy, out in outputs:
                text = visible_text(out, fx.system) if out is not None else ""
                for probe in fx.probes:
                    seen = facts_seen(text, probe.expected_facts) if out is not None else [False]
                    judged: tuple[bool, ...] = ()
                    if answerer is not None:
                        judged = tuple(
                            out is not None and answerer.judge(
                                probe.question, probe.expected_facts, answerer.answer(text, probe.question))
                            for _ in range(replicates))
                    scores.append(ProbeScore(fx.name, probe.question, bname, strategy, sum(seen),
                                             len(probe.expected_facts), judged))
    return Evaluation(tuple(scores), tuple(runs), tuple(strategies), tuple(names),
                      replicates if answerer is not None else 0)


def run_cli(
    files: Sequence[str],
    *,
    data_dir: str | None = None,
    strategies: Sequence[str] = DEFAULT_STRATEGIES,
    budgets: Sequence[float] = DEFAULT_BUDGETS,
    answerer_url: str | None = None,
    model: str | None = None,
    judge_model: str | None = None,
    replicates: int = 3,
    api_key: str | None = None,
    as_json: bool = False,
    peers: Sequence[str] = (),
    summarizer: Any = None,
) -> str:
    """What ``contextfold eval`` prints: the scorecard (Markdown) or, with ``as_json``, rows and
    per-probe scores as JSON. ``data_dir`` defaults to ``../shared/data`` when it exists;
    ``peers`` are scored as more strategies (``contextfold.evaluation_peers``); ``summarizer``
    writes contextfold's summaries (None: the extractive digest)."""
    if answerer_url is not None and not model:
        raise ValueError("--answerer needs --model")
    if data_dir is None and Path("../shared/data").is_dir():
        data_dir = "../shared/data"
    fixtures = load_fixtures(files, data_dir=data_dir)
    answerer = Answerer(answerer_url, model or "", judge_model=judge_model, api_key=api_key) \
        if answerer_url is not None else None
    ev = evaluate(fixtures, strategies=(*strategies, *peers), budgets=budgets, answerer=answerer,
                  replicates=replicates, summarizer=summarizer)
    if as_json:
        return json.dumps({"rows": ev.rows(), "fixtures": len(fixtures),
                           "probes": sum(len(f.probes) for f in fixtures),
                           "scores": [{"fixture": s.fixture, "question": s.question, "budget": s.budget_name,
                                       "strategy": s.strategy, "kept": s.kept, "total": s.total,
                                       "judged": list(s.judged)} for s in ev.scores]}, default=str)
    n = sum(len(f.probes) for f in fixtures)
    out = (f"{len(fixtures)} fixtures, {n} probes\n\n" + ev.markdown()
           + "\n\nSuccessive compactions (growing history, planted rules):\n\n"
           + successive_table(fixtures, summarizer=summarizer)
           + "\n\nAn agent loop (fed round by round, compacted at 1.2x the naive cut's budget):\n\n"
           + loop_table(fixtures, summarizer=summarizer))
    for peer in peers:
        out += f"\n\nSuccessive compactions, {peer}:\n\n" + successive_table(fixtures, strategy=peer)
    return out


# ----- successive compactions -----------------------------------------------------------------


def _index_items(summary: str) -> list[str]:
    """Identifiers listed in a summary's index section."""
    at = index_at(summary)
    if at < 0:
        return []
    items: list[str] = []
    for line in summary[at:].splitlines()[1:]:
        if not line.startswith("- ") or ": " not in line:
            break
        label, rest = line[2:].split(": ", 1)
        items.extend(x.strip() for x in rest.split(" | " if label == "errors" else ", ") if x.strip())
    return items


#: An agent loop compacts when its history has grown this far past the budget (``agent_loop``).
LOOP_TRIGGER = 1.2


def agent_loop(fixture: Fixture, *, budget: int, trigger: float = LOOP_TRIGGER, fresh: bool = False,
               alone: bool = False, **options: Any) -> tuple[list[Any], int]:
    """``fixture``'s conversation as an agent loop sends it: fed one round at a time (a tool
    round whole), compacted to ``budget`` (tokens) each time the history passes ``trigger``
    times the budget, and once more at the end if it is still over. One Compactor (``options``
    its keyword arguments beyond the fixture's own) serves the whole loop; with ``fresh``, a new
    one each time, in this process (it reads what the last one filed for the process:
    ``fold_sources``); with ``alone`` too, each as in a new process (it shares nothing: it
    merges from the summary alone, unless a ``store`` is shared). The process's memory is
    emptied first, so that no other loop's spans are read. The last history and the number of
    compactions; a compaction that raises leaves the history as it was."""
    def compactor() -> Compactor:
        c = Compactor(provider=fixture.provider, budget=budget, tools=fixture.tools, system=fixture.system,
                      wire_format=detect_wire_format(fixture.messages, fixture.provider), **options)
        c.sources.shared = not alone
        return c
    forget_process_sources()
    msgs = list(fixture.messages)
    fed = _head_end(msgs)
    current, made, runs = msgs[:fed], compactor(), 0
    while fed < len(msgs):
        end = _tail_from(msgs, min(len(msgs), fed + 1))
        current, fed = current + msgs[fed:end], end
        tokens = _tokens(current, fixture)
        if tokens > budget * trigger or (fed >= len(msgs) and tokens > budget):
            try:
                current = list((compactor() if fresh else made).compact(current).messages)
                runs += 1
            except CompactionError:
                pass
    return current, runs


def proxy_loop(fixture: Fixture, *, budget: int, trigger: float = LOOP_TRIGGER, api: str = "chat",
               model: str | None = None, recall: bool = False) -> tuple[list[Any], int]:
    """``fixture``'s conversation sent round by round through the compacting proxy's request
    path (``contextfold serve``'s ``Folder``, in process): the client sends its whole history
    every turn, the proxy compacts it to ``budget`` (tokens) when it passes ``trigger`` times the
    budget and sends the fold it made in later turns. ``api`` is the proxy's route (``chat``,
    ``responses``, ``anthropic``, ``gemini``): the fixture's messages and tools are in its wire
    format, and its system prompt goes where that API takes it; ``model`` the model the
    requests name; ``recall``: the proxy's ``--recall`` (recoverable folds, the recall tool
    offered). The history of the last body the proxy would forward, and the number of
    compactions."""
    from contextfold.serve.apis import API_BY_NAME
    from contextfold.serve.config import ServeConfig
    from contextfold.serve.fold_cache import MemoryFoldCache
    from contextfold.serve.folding import Folder

    route = API_BY_NAME[api]
    folder = Folder(ServeConfig(budget=budget, trigger=max(budget, int(budget * trigger)), recall=recall),
                    MemoryFoldCache())
    msgs = list(fixture.messages)
    fields: dict[str, Any] = {} if model is None or api == "gemini" else {"model": model}
    if fixture.tools:
        fields["tools"] = fixture.tools
    if fixture.system is not None:
        if api == "chat":
            msgs = [{"role": "system", "content": fixture.system}, *msgs]
        elif api == "responses":
            fields["instructions"] = fixture.system
        elif api == "anthropic":
            fields["system"] = fixture.system
        else:
            fields["systemInstruction"] = {"parts": [{"text": fixture.system}]}
    fed, runs, sent = _head_end(msgs), 0, b""
    while fed < len(msgs):
        fed = _tail_from(msgs, min(len(msgs), fed + 1))
        raw = json.dumps({**fields, route.history_key: msgs[:fed]}).encode()
        out = folder.fast(route, raw, model) or folder.slow(route, raw, model)
        runs += out.compacted
        sent = out.body
    return list(json.loads(sent)[route.history_key]) if sent else msgs, runs


def loop_table(fixtures: Sequence[Fixture], *, name: str = "probes", summarizer: Any = None) -> str:
    """Markdown: facts an agent loop keeps at the naive cut's budget (``agent_loop``), scored on
    its last history, beside one compaction of the whole history at that budget, with one
    Compactor kept across the loop, with a new one per compaction in this process, with a new
    one per compaction as in a new process each time (sharing nothing), and so sharing one
    ``MemoryContentStore`` (the spans behind the summaries kept there); ``name`` heads the row;
    ``summarizer`` writes the summaries (None: the extractive digest)."""
    columns = ("one", "kept", "fresh", "alone", "stored")
    kept = dict.fromkeys(columns, 0)
    half = dict.fromkeys(columns, 0)
    total = probes = 0
    runs: list[int] = []
    for fx in fixtures:
        budget = _tokens(naive_cut(fx.messages), fx)
        try:
            one = list(Compactor(provider=fx.provider, budget=budget, tools=fx.tools, system=fx.system,
                                 wire_format=detect_wire_format(fx.messages, fx.provider), summarizer=summarizer,
                                 min_free_share=0.0).compact(fx.messages).messages)
        except CompactionError:
            one = []
        loop, n = agent_loop(fx, budget=budget, min_free_share=0.0, summarizer=summarizer)
        fresh, _ = agent_loop(fx, budget=budget, fresh=True, min_free_share=0.0, summarizer=summarizer)
        alone, _ = agent_loop(fx, budget=budget, fresh=True, alone=True, min_free_share=0.0, summarizer=summarizer)
        stored, _ = agent_loop(fx, budget=budget, fresh=True, alone=True, min_free_share=0.0,
                               store=MemoryContentStore(), summarizer=summarizer)
        runs.append(n)
        texts = {"one": visible_text(one, fx.system) if one else "", "kept": visible_text(loop, fx.system),
                 "fresh": visible_text(fresh, fx.system), "alone": visible_text(alone, fx.system),
                 "stored": visible_text(stored, fx.system)}
        for p in fx.probes:
            total += len(p.expected_facts)
            probes += 1
            for k, text in texts.items():
                seen = facts_seen(text, p.expected_facts)
                kept[k] += sum(seen)
                half[k] += 2 * sum(seen) >= len(seen)
    cells = [f"{100 * kept[k] / max(1, total):.1f}% ({kept[k]} of {total}; {half[k]} of {probes} with half)"
             for k in columns]
    return "\n".join([
        "| probes | one compaction | loop, one Compactor | loop, a new Compactor each time | "
        "loop, a new Compactor each time in a new process | the same, one store shared | "
        "compactions per loop (median) |",
        "| --- | --- | --- | --- | --- | --- | --- |",
        f"| {name} | {' | '.join(cells)} | {statistics.median(runs) if runs else 0:g} |"])


#: A summary that takes at least this share of its room is full (``Successive.growth_from_full``).
FULL_SHARE = 0.8


@dataclass(frozen=True, slots=True)
class Successive:
    """Successive compactions of one growing conversation: ``carried`` the share of the first
    summary's indexed identifiers still seen after the second compaction; ``sizes`` each
    summary's tokens; ``rooms`` the tokens each summary could have taken (its size plus what
    that compaction left unused under the budget: a summary never exceeds it); ``folded`` the
    messages each compaction folded (the previous summary's message included); ``growth`` the
    last size over the first; ``rules_lost`` planted rules missing after the last compaction;
    ``notes`` each compaction's ``CompactionResult.notes`` (empty for a peer's)."""

    fixture: str
    carried: float
    sizes: tuple[int, ...]
    growth: float
    rules_lost: int
    rooms: tuple[int, ...] = ()
    folded: tuple[int, ...] = ()
    notes: tuple[tuple[str, ...], ...] = ()

    @property
    def spread_after_first(self) -> float:
        """The largest summary over the smallest, from the second compaction on (1.0 with
        fewer than three): how much the size swings once a summary carries a previous one."""
        after = self.sizes[1:]
        return max(after) / min(after) if len(after) >= 2 and min(after) > 0 else 1.0

    @property
    def growth_from_full(self) -> float:
        """The last size over the size of the first summary that took at least ``FULL_SHARE`` of
        its room (a first summary that folded a few messages is small because it had little to
        say: growth from there is information, not bloat); 1.0 when none did."""
        k = next((i for i, (s, r) in enumerate(zip(self.sizes, self.rooms, strict=True)) if r and s >= FULL_SHARE * r),
                 None)
        return self.sizes[-1] / self.sizes[k] if k is not None and self.sizes[k] else 1.0

    @property
    def fill(self) -> float:
        """The largest share of its room any summary took (at most 1.0)."""
        return max((s / r for s, r in zip(self.sizes, self.rooms, strict=True) if r > 0), default=0.0)


def successive_setup(fixture: Fixture, *, rules: Sequence[tuple[int, str]] = (),
                     budget_share: float = 0.3) -> tuple[list[Any], int, int]:
    """The conversation ``successive`` feeds and its budget: ``fixture``'s messages with each of
    ``rules`` (``(position, text)``) planted after the message at its position (and after that
    message's tool results) as a user turn, where the head ends, and the budget (tokens): the
    head and ``budget_share`` of the rest."""
    msgs = list(fixture.messages)
    for pos, text in sorted(rules, reverse=True):
        at = _tail_from(msgs, min(pos + 1, len(msgs)))
        msgs[at:at] = [{"role": "user", "content": text}]
    head = _head_end(msgs)
    fixed = _tokens(msgs[:head], fixture)
    return msgs, head, fixed + max(1, int((_tokens(msgs, fixture) - fixed) * budget_share))


def successive(fixture: Fixture, *, rounds: int = 10, budget_share: float = 0.3, strategy: str = "summarize",
               summarizer: Any = None, rules: Sequence[tuple[int, str]] = (), alone: bool = False) -> Successive:
    """Feed ``fixture``'s conversation message by message and compact what the agent would send
    next (the last result's messages + the new messages) to ``budget_share`` of the whole
    conversation's tokens (beyond the head), up to ``rounds`` times. A compaction runs when the
    history has grown past the budget by the step that gives ``rounds`` compactions over the
    conversation (at most a third of the room after the head: a short conversation gets
    fewer). ``rules`` are ``(position, text)`` user messages planted into the conversation
    first (standing rules a user states mid-dialogue). With ``alone``, each compaction is a new Compactor
    sharing nothing, as in a new process each time (``agent_loop``'s ``alone``): it merges each
    summary from its text."""
    msgs, head, budget = successive_setup(fixture, rules=rules, budget_share=budget_share)
    total = _tokens(msgs, fixture)
    fixed = _tokens(msgs[:head], fixture)
    # The growth between compactions: what the conversation adds past the budget, spread over
    # ``rounds`` (each compaction brings the history back just under the budget).
    step_tokens = max(1, min((budget - fixed) // 3, (total - budget) // (rounds + 1)))
    trigger = budget + step_tokens
    def made() -> Compactor:
        c = Compactor(provider=fixture.provider, budget=budget, strategy=strategy,  # type: ignore[arg-type]
                      summarizer=summarizer, tools=fixture.tools, system=fixture.system, min_free_share=0.0,
                      wire_format=detect_wire_format(msgs, fixture.provider))
        c.sources.shared = not alone
        return c
    if alone:
        forget_process_sources()
    compactor = None if strategy in PEERS else made()
    current: list[Any] = msgs[:head]
    sizes: list[int] = []
    rooms: list[int] = []
    folded: list[int] = []
    notes: list[tuple[str, ...]] = []
    summaries: list[str] = []
    seen_after: list[str] = []
    fed = head
    while fed < len(msgs) and len(sizes) < rounds:
        end = _tail_from(msgs, min(len(msgs), fed + 1))
        current = current + msgs[fed:end]
        fed = end
        if _tokens(current, fixture) < trigger and fed < len(msgs):
            continue
        if compactor is None:
            out = peer_compaction(strategy, current, budget=budget, provider=fixture.provider, tools=fixture.tools,
                                  system=fixture.system)
            summary, removed, after = peer_summary(strategy, out), len(current) - len(out) + 1, _tokens(out, fixture)
            said: tuple[str, ...] = ()
        else:
            try:
                r = (made() if alone else compactor).compact(current)
            except CompactionError:
                continue
            out, summary, removed, after = list(r.messages), r.summary, len(r.removed), r.tokens_after
            said = tuple(r.notes)
        current = out
        if summary:
            summaries.append(summary)
            size = int(_core.estimate_each([{"role": "user", "content": summary}],
                                           provider=fixture.provider)[0])  # type: ignore[arg-type]
            sizes.append(size)
            rooms.append(size + max(0, budget - after))
            folded.append(removed)
            notes.append(said)
            if len(summaries) == 2:
                seen_after.append(visible_text(current, fixture.system))
    first = _index_items(summaries[0]) if summaries else []
    carried = 1.0
    if first and seen_after:
        carried = sum(facts_seen(seen_after[0], first)) / len(first)
    final = visible_text(current, fixture.system)
    lost = sum(1 for _, text in rules if not facts_seen(final, [text])[0])
    growth = sizes[-1] / sizes[0] if sizes else 1.0
    return Successive(fixture.name, carried, tuple(sizes), growth, lost, tuple(rooms), tuple(folded), tuple(notes))


#: Standing rules planted into each conversation by ``successive_table`` (a user states them
#: mid-dialogue); none may be lost by any compaction.
PLANTED_RULES: tuple[str, ...] = (
    "Never charge my Visa card ending in 4417.",
    "Do not cancel reservation ZZ9Q7T under any circumstances.",
    "Always ask me before you run git push or book anything.",
)


def planted(fixture: Fixture) -> list[tuple[int, str]]:
    """``PLANTED_RULES`` at positions drawn from a generator seeded by the fixture's name."""
    rnd = random.Random(fixture.name)
    n = len(fixture.messages)
    return [(rnd.randrange(1, max(2, n - 2)), text) for text in PLANTED_RULES]


def successive_table(fixtures: Sequence[Fixture], *, summarizer: Any = None, per_fixture: bool = False,
                     strategy: str = "summarize", alone: bool = False) -> str:
    """Markdown: successive compactions with planted rules (``successive``), over all fixtures;
    with ``per_fixture``, one row per conversation (sizes, rooms, folded counts). ``strategy``
    may name a peer (``contextfold.evaluation_peers``); ``alone``: each compaction as in a new
    process (``successive``)."""
    runs = [successive(f, summarizer=summarizer, rules=planted(f), strategy=strategy, alone=alone) for f in fixtures]
    ran = [r for r in runs if r.sizes]
    if per_fixture:
        lines = ["| conversation | compactions | messages folded | summary tokens | room (tokens) | last / first "
                 "| last / first full | max / min after the first | identifiers carried |",
                 "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        for r in ran:
            lines.append(f"| {r.fixture.rsplit('/', 1)[-1].rsplit('#', 1)[-1]} | {len(r.sizes)} | "
                         f"{', '.join(map(str, r.folded))} | {', '.join(map(str, r.sizes))} | "
                         f"{', '.join(map(str, r.rooms))} | {r.growth:.2f}x | {r.growth_from_full:.2f}x | "
                         f"{r.spread_after_first:.2f}x | {100 * r.carried:.0f}% |")
        return "\n".join(lines)
    lines = ["| fixtures | compactions (median, min-max) | first summary's identifiers kept by the second "
             "(median, share >= 90%) | last / first summary size (median, max, <= 1.2x) | last / first full "
             "summary (median, max, <= 1.2x) | max / min after the first (median, max) | largest share of its "
             "room a summary took | planted rules lost |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    if ran:
        carried = [r.carried for r in ran if len(r.sizes) >= 2]
        growth = [r.growth for r in ran]
        spread = [r.spread_after_first for r in ran]
        full = [r.growth_from_full for r in ran]
        counts = [len(r.sizes) for r in ran]
        lines.append(
            f"| {len(ran)} | {statistics.median(counts):g}, {min(counts)}-{max(counts)} | "
            f"{100 * statistics.median(carried or [1.0]):.0f}%, "
            f"{sum(1 for c in carried if c >= 0.9)} of {len(carried)} | "
            f"{statistics.median(growth):.2f}x, {max(growth):.2f}x, {sum(1 for g in growth if g <= 1.2)} of "
            f"{len(growth)} | {statistics.median(full):.2f}x, {max(full):.2f}x, "
            f"{sum(1 for g in full if g <= 1.2)} of {len(full)} | "
            f"{statistics.median(spread):.2f}x, {max(spread):.2f}x | {100 * max(r.fill for r in ran):.0f}% | "
            f"{sum(r.rules_lost for r in runs)} of {len(PLANTED_RULES) * len(runs)} |")
    return "\n".join(lines)
