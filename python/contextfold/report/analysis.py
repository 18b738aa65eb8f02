"""What a report shows, computed once: the breakdown, the largest messages, duplicated tool
outputs, the schema cost of each tool, the context window and gate, and the compaction plan at a
budget (offline)."""

from __future__ import annotations

import dataclasses
import hashlib
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import contextfold
from contextfold import _core
from contextfold.breakdown import RESPONSE_FORMAT_KEY, TOOL_PROMPT_KEY, Breakdown, MessageTokens, _apportion, server_of
from contextfold.compactor import CompactionResult, Compactor
from contextfold.errors import CompactionBudgetError, CompactionError, UnknownModelWarning
from contextfold.inputs import Request
from contextfold.model_info import check_model
from contextfold.request import breakdown_of
from contextfold.summarize import ExtractiveSummarizer

# Outputs shorter than this (characters) are not worth reporting as duplicates.
_MIN_DUPLICATE_CHARS = 200


@dataclass(frozen=True, slots=True)
class Duplicate:
    """A tool output sent more than once: where (message indices) and what the extra copies cost."""

    indices: tuple[int, ...]
    tokens_each: int
    preview: str

    @property
    def wasted_tokens(self) -> int:
        return self.tokens_each * (len(self.indices) - 1)


@dataclass(frozen=True, slots=True)
class Plan:
    """What ``Compactor.compact`` does to this history at ``budget`` tokens, with its default
    (hybrid) strategy and the extractive summarizer, so the report stays offline. ``result`` is
    the compactor's own result; None when it raised, and then ``error`` says why (what must stay
    verbatim already exceeds the budget, say).

    ``sources`` and ``tokens_after`` read the result message by message: for each message of
    ``result.messages``, the index of the message of the history it comes from (-1: the
    summary) and its tokens. ``merged`` is the history message the summary was merged into (a
    role seam), if any."""

    budget: int
    result: CompactionResult | None
    error: str | None = None
    sources: tuple[int, ...] = ()
    tokens_after: tuple[int, ...] = ()
    merged: int | None = None
    #: The history the plan was made of (to tell a verbatim message from a changed one).
    history: Sequence[Any] | None = field(default=None, repr=False, compare=False)

    def states(self, n: int) -> list[str]:
        """The fate of each of the ``n`` messages: ``head`` (kept, before the summary), ``fold``
        (into the summary), ``masked`` (kept, shortened: masked, or cut in the middle) or
        ``kept`` (verbatim). A message counts as verbatim only when the result holds the very
        object of the history (the compactor's promise for unchanged messages)."""
        r = self.result
        if r is None:
            return ["kept"] * n
        folded = set(r.removed)
        first = min(r.removed) if r.removed else 0
        h = self.history
        verbatim = {i for i, m in zip(self.sources, r.messages) if 0 <= i < min(n, len(h)) and m is h[i]} \
            if h is not None and self.sources else None
        changed = {p.index for p in r.pruned}
        out = []
        for i in range(n):
            if i in folded or i == self.merged:
                out.append("fold")
            elif i in changed or (verbatim is not None and i not in verbatim):
                out.append("masked")
            else:
                out.append("head" if i < first else "kept")
        return out


def _read_result(history: Sequence[Any], r: CompactionResult, opts: dict[str, Any]) -> tuple[tuple[int, ...], tuple[int, ...], int | None]:
    """(sources, tokens_after, merged) of a result: its messages matched in order to the history
    messages it did not fold; the one that carries the summary text is the summary, and it was
    merged into the first tail message when no other message stands for that one."""
    tokens = tuple(m.tokens for m in contextfold.breakdown(r.messages, **opts).per_message)
    folded = set(r.removed)
    rest = [i for i in range(len(history)) if i not in folded]
    sources: list[int] = []
    merged = None
    k = 0
    for j, m in enumerate(r.messages):
        if k < len(rest) and m is history[rest[k]]:
            sources.append(rest[k])
            k += 1
        elif -1 not in sources and (_carries(m, _core.SUMMARY_MARKERS[0]) or (r.summary and _carries(m, r.summary))):
            sources.append(-1)
            # Fewer messages left in the result than history messages left: this one stands
            # for the next history message too (the summary merged into it).
            if len(r.messages) - j - 1 < len(rest) - k:
                merged = rest[k]
                k += 1
        else:
            sources.append(rest[k] if k < len(rest) else -1)
            k += 1
    return tuple(sources), tokens, merged


def _carries(message: Any, text: str) -> bool:
    """Whether some string inside ``message`` holds ``text`` (any wire format)."""
    probe = text.strip()[:200]
    stack = [message]
    while stack:
        x = stack.pop()
        if isinstance(x, str):
            if probe in x:
                return True
        elif isinstance(x, dict):
            stack.extend(x.values())
        elif isinstance(x, (list, tuple)):
            stack.extend(x)
        elif hasattr(x, "__dict__"):
            stack.extend(vars(x).values())
    return False


@dataclass(frozen=True, slots=True)
class ToolCost:
    """One tool definition of the request: the tokens of its schema (paid on every call), the
    MCP server it belongs to (``"(local)"`` when neither its name nor the mapping says one) and
    whether the history calls it."""

    name: str
    server: str
    tokens: int
    called: bool


@dataclass(frozen=True, slots=True)
class ToolSchemas:
    """Where the request's tool schemas go (``breakdown(...).by_tool`` / ``by_server`` /
    ``unused_tools``). ``tools``: grouped by server, the costliest server first, the costliest
    tool first within it. ``exact``: counted with the model's tokenizer (OpenAI models), else
    estimated. ``prompt``: the provider's hidden tool-use prompt beyond the definitions;
    ``response_format``: a structured-output schema's tokens."""

    tools: tuple[ToolCost, ...] = ()
    by_server: Mapping[str, int] = field(default_factory=dict)
    prompt: int = 0
    response_format: int = 0
    exact: bool = False

    @property
    def total(self) -> int:
        """Tokens of every tool schema, the hidden prompt and a structured-output schema."""
        return sum(t.tokens for t in self.tools) + self.prompt + self.response_format

    @property
    def unused(self) -> tuple[ToolCost, ...]:
        """The tools the history never calls."""
        return tuple(t for t in self.tools if not t.called)


@dataclass(frozen=True, slots=True)
class ReportData:
    """Everything the text and HTML reports show (tokens are estimated prompt tokens)."""

    request: Request
    breakdown: Breakdown
    window: int | None
    gate: int | None
    plan: Plan
    top: tuple[MessageTokens, ...]
    previews: dict[int, str]
    duplicates: tuple[Duplicate, ...]
    recorded: tuple[tuple[int, int, int], ...]  # (n_messages, reported, estimated)
    tool_schemas: ToolSchemas = field(default_factory=ToolSchemas)


def preview(message: Any, width: int = 80) -> str:
    """A one-line preview of a message (any wire format), at most ``width`` characters."""
    return _core.message_previews([message], width=width)[0]


def _duplicates(req: Request, per: Sequence[MessageTokens]) -> tuple[Duplicate, ...]:
    seen: dict[bytes, list[int]] = {}
    text_of: dict[bytes, str] = {}
    for i, text in _core.tool_output_texts(req.messages):
        if len(text) < _MIN_DUPLICATE_CHARS:
            continue
        h = hashlib.blake2b(text.encode("utf-8", "replace"), digest_size=16).digest()
        seen.setdefault(h, []).append(i)
        text_of.setdefault(h, text)
    dups = [
        Duplicate(tuple(ix), per[ix[-1]].tokens, " ".join(text_of[h][:800].split())[:100])
        for h, ix in seen.items()
        if len(ix) > 1
    ]
    return tuple(sorted(dups, key=lambda d: -d.wasted_tokens))


def _exact_shares(req: Request) -> tuple[int, int] | None:
    """For an OpenAI model: the exact tokens the tool definitions and a structured-output schema
    add to the request (`contextfold.count` with them less without them, as the API bills the
    block); None for other models or a history `count` cannot read."""
    if req.provider not in ("openai", "azure") or not req.model:
        return None
    try:
        contextfold.encoding_for(req.model)
    except contextfold.UnknownModelError:
        return None
    if not req.tools and req.response_format is None:
        return 0, 0
    try:
        bare = contextfold.count(req.messages, model=req.model)
        tools = contextfold.count(req.messages, model=req.model, tools=req.tools) - bare if req.tools else 0
        rf = (contextfold.count(req.messages, model=req.model, response_format=req.response_format) - bare
              if req.response_format is not None else 0)
    except (ValueError, TypeError):
        return None
    return max(0, tools), max(0, rf)


def tool_schemas(b: Breakdown, req: Request, tool_servers: Mapping[str, str] | None = None) -> ToolSchemas:
    """The schema cost of each tool of ``b`` (a breakdown of ``req``), grouped by MCP server
    (``mcp__SERVER__tool`` names, or ``tool_servers``: tool name -> server), unused tools flagged.

    For OpenAI models the costs are exact: the tokens `contextfold.count` says the tool block
    adds, shared out by each tool's own exact rendering (what the block's shared header does not
    explain is the hidden tool-use prompt); for other models, ``b.by_tool`` as estimated."""
    unused = set(b.unused_tools)
    named = [(name, n) for name, n in b.by_tool.items() if name not in (TOOL_PROMPT_KEY, RESPONSE_FORMAT_KEY)]
    prompt, rf = b.by_tool.get(TOOL_PROMPT_KEY, 0), b.by_tool.get(RESPONSE_FORMAT_KEY, 0)
    exact = _exact_shares(req)
    if exact is not None and named:
        block, rf = exact
        # The same tools in the same order as ``by_tool`` (one entry per name, repeated names summed).
        own: dict[str, float] = {}
        for j, (name, c) in enumerate(_core.tool_costs(req.tools or [], provider="openai", model=req.model)):
            key = name or f"tools[{j}]"
            own[key] = own.get(key, 0.0) + c
        prompt = max(0, block - round(sum(own.values())))
        shares = _apportion(block - prompt, [own.get(name, 0.0) for name, _ in named])
        named = [(name, n) for (name, _), n in zip(named, shares)]
    elif exact is not None:
        rf = exact[1]
    rows = [ToolCost(name, server_of(name, tool_servers), n, name not in unused) for name, n in named]
    by_server: dict[str, int] = {}
    for t in rows:
        by_server[t.server] = by_server.get(t.server, 0) + t.tokens
    order = {s: k for k, s in enumerate(sorted(by_server, key=lambda s: (-by_server[s], s)))}
    rows.sort(key=lambda t: (order[t.server], -t.tokens, t.name))
    return ToolSchemas(
        tools=tuple(rows),
        by_server={s: by_server[s] for s in order},
        prompt=prompt,
        response_format=rf,
        exact=exact is not None,
    )


def compact_request(req: Request, budget: int, **options: Any) -> CompactionResult:
    """``Compactor(**options).compact`` of the request's history to ``budget`` tokens of the
    whole request, priced as `estimate_request` prices the body.

    The Compactor knows the history, system, tools and schema, not what the body's settings
    (thinking, tool_choice, a provider's preamble) add; those are paid on every call whatever
    the history, so they come off the budget the Compactor gets and are added back to the
    result's ``tokens_before`` / ``tokens_after``: ``estimate`` of the written body then equals
    ``tokens_after``. Raises ``CompactionBudgetError`` when the settings alone take the budget."""
    settings = req.settings_tokens
    if settings >= budget:
        raise CompactionBudgetError(
            f"the request's settings (thinking, tool_choice, ...) alone take {settings:,} tokens of the budget of {budget:,}",
            tokens=settings, budget=budget)
    compactor = Compactor(provider=req.provider, model=req.model, budget=budget - settings,
                          tools=req.tools, system=req.system, response_format=req.response_format, **options)
    try:
        result = compactor.compact(req.messages)
    except CompactionBudgetError as e:
        if not settings:
            raise
        raise CompactionBudgetError(
            f"{e} (of a budget of {budget:,}, the request's settings take {settings:,})",
            tokens=e.tokens + settings, budget=budget) from None
    if not settings:
        return result
    return dataclasses.replace(result, tokens_before=result.tokens_before + settings,
                               tokens_after=result.tokens_after + settings, budget=budget)


def _plan(req: Request, budget: int, window: int | None) -> Plan:
    """Run the Compactor (extractive summary: offline) on the history at ``budget`` tokens."""
    try:
        r = compact_request(req, budget, context_window=window, summarizer=ExtractiveSummarizer())
    except CompactionError as e:
        return Plan(budget, None, str(e))
    sources, tokens, merged = _read_result(req.messages, r, req.options())
    return Plan(budget, r, None, sources, tokens, merged, req.messages)


def largest(b: Breakdown, messages: Sequence[Any], top: int) -> tuple[tuple[MessageTokens, ...], dict[int, str]]:
    """The ``top`` largest messages of a breakdown and a one-line preview of each."""
    biggest = tuple(sorted(b.per_message, key=lambda m: -m.tokens)[:top])
    texts = _core.message_previews([messages[m.index] for m in biggest], width=90)
    return biggest, {m.index: text for m, text in zip(biggest, texts, strict=True)}


def analyze(req: Request, *, budget: int | None = None, window: int | None = None, top: int = 8,
            tool_servers: Mapping[str, str] | None = None) -> ReportData:
    """Compute what the reports show for one request. ``budget``: target tokens of the
    compaction plan (default: the Compactor's own budget when the history is past it, else half
    the estimate); ``window``: context window (default: from the model name, when known);
    ``tool_servers``: tool name -> MCP server, for tools whose names do not say it (for OpenAI
    models the tool schemas are counted exactly: three `contextfold.count` calls). An unknown
    model name is said once (``UnknownModelWarning``)."""
    check_model(req.model, stacklevel=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnknownModelWarning)  # said once, above
        return _analyze(req, budget=budget, window=window, top=top, tool_servers=tool_servers)


def _analyze(req: Request, *, budget: int | None, window: int | None, top: int,
             tool_servers: Mapping[str, str] | None) -> ReportData:
    # A body is priced with what its settings add (the core's body reader, as estimate_request),
    # so the report's total is `estimate`'s.
    b = breakdown_of(req.body, tool_servers=tool_servers) if req.body is not None else contextfold.breakdown(
        req.messages, **req.options(), tool_servers=tool_servers)
    if window is None and req.model:
        try:
            window = contextfold.context_window(req.model)
        except contextfold.UnknownModelError:
            window = None
    compactor = Compactor(provider=req.provider, model=req.model, context_window=window, tools=req.tools, system=req.system,
                          response_format=req.response_format)
    try:
        gate: int | None = compactor.trigger_tokens if window else None
        default_budget: int | None = compactor.budget
    except ValueError:
        gate = default_budget = None
    # The compactor's own budget when this history is past it (what the gate would do now),
    # else half the history (what a compaction to half its size would do).
    if budget is None:
        budget = default_budget if default_budget is not None and b.total > default_budget else max(1, b.total // 2)
    plan = _plan(req, budget, window)
    biggest, previews = largest(b, req.messages, top)
    recorded = []
    if req.recorded:
        cum = [0]
        for m in b.per_message:
            cum.append(cum[-1] + m.tokens)
        overhead = sum(b.request_overhead.values())
        for r in req.recorded:
            n, real = r.get("n_messages"), r.get("usage_prompt_tokens")
            if isinstance(n, int) and isinstance(real, int) and real > 0 and 0 < n <= len(req.messages):
                recorded.append((n, real, cum[n] + overhead))
    return ReportData(
        request=req,
        breakdown=b,
        window=window,
        gate=gate,
        plan=plan,
        top=biggest,
        previews=previews,
        duplicates=_duplicates(req, b.per_message),
        recorded=tuple(recorded),
        tool_schemas=tool_schemas(b, req, tool_servers),
    )


