"""The token report of one conversation: as text for a terminal, or one self-contained HTML page.

The page has no script and loads nothing: its charts are inline SVG drawn here, so it opens
offline in any browser and can be attached to a bug report. ``write_png`` screenshots the
growth chart with a headless Chromium.
"""

from __future__ import annotations

import hashlib
import html
import json
import os
import shutil
import subprocess
import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import contextfold
from contextfold.breakdown import KINDS, Breakdown, MessageTokens
from contextfold.compactor import CompactionResult, Compactor
from contextfold.errors import CompactionError
from contextfold.inputs import Request
from contextfold.summarize import ExtractiveSummarizer

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

#: Fill colour of each kind in both charts (and the legend).
COLORS: dict[str, str] = {
    "text": "#4e79a7",
    "tool_calls": "#f28e2b",
    "tool_outputs": "#e15759",
    "images": "#76b7b2",
    "reasoning": "#59a14f",
    "media": "#edc948",
    "tool_schemas": "#b07aa1",
    "overhead": "#9c9690",
}
WINDOW_COLOR = "#222222"
GATE_COLOR = "#d62728"
PLAN_COLORS = {"head": "#6b6b6b", "fold": "#f1c40f", "masked": "#e67e22", "kept": "#27ae60"}

# Charts keep at most this many columns; longer histories are binned.
_MAX_COLUMNS = 600
# Outputs shorter than this (characters) are not worth reporting as duplicates.
_MIN_DUPLICATE_CHARS = 200


class BrowserMissing(RuntimeError):
    """No headless Chromium / Chrome on PATH (needed by ``write_png``)."""


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
    verbatim already exceeds the budget, say)."""

    budget: int
    result: CompactionResult | None
    error: str | None = None

    def states(self, n: int) -> list[str]:
        """The fate of each of the ``n`` messages: ``head`` (kept, before the summary), ``fold``
        (into the summary), ``masked`` (kept, shortened) or ``kept`` (verbatim)."""
        r = self.result
        if r is None:
            return ["kept"] * n
        folded, masked = set(r.removed), {p.index for p in r.pruned}
        first = min(r.removed) if r.removed else 0
        return [
            "fold" if i in folded else "masked" if i in masked else "head" if i < first else "kept"
            for i in range(n)
        ]


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


def _get(obj: Any, key: str) -> Any:
    return obj.get(key) if isinstance(obj, dict) else getattr(obj, key, None)


def _part_text(p: Any) -> str:
    if isinstance(p, str):
        return p
    for key in ("text", "thinking"):
        v = _get(p, key)
        if isinstance(v, str):
            return v
    for key in ("content", "output"):
        v = _get(p, key)
        if isinstance(v, (str, list)):
            return _content_text(v)
    t = _get(p, "type")
    if t == "tool_use" or _get(p, "functionCall") is not None:
        call = _get(p, "functionCall") or p
        return f"{_get(call, 'name')}({json.dumps(_get(call, 'input') or _get(call, 'args') or {})[:200]})"
    if _get(p, "functionResponse") is not None:
        return json.dumps(_get(_get(p, "functionResponse"), "response"))[:2000]
    return f"<{t or 'part'}>"


def _content_text(c: Any) -> str:
    if c is None:
        return ""
    if isinstance(c, str):
        return c
    if isinstance(c, list):
        return " ".join(_part_text(p) for p in c)
    return str(c)


def preview(message: Any, width: int = 80) -> str:
    """A one-line preview of a message (any wire format), at most ``width`` characters."""
    text = _content_text(_get(message, "content"))
    if not text:
        text = _content_text(_get(message, "parts"))
    if not text:
        text = _content_text(_get(message, "output"))
    calls = _get(message, "tool_calls")
    if calls:
        names = ", ".join(str(_get(_get(c, "function") or c, "name")) for c in calls)
        text = (text + " " if text else "") + f"→ {names}"
    if not text and _get(message, "type") in ("function_call", "custom_tool_call"):
        text = f"→ {_get(message, 'name')}"
    s = " ".join(text.split())
    return s[: width - 1] + "…" if len(s) > width else s


def _tool_outputs(req: Request) -> list[tuple[int, str]]:
    """(message index, output text) of every tool output; for text-protocol histories without
    tool results (observations sent as user messages), the user messages after the first."""
    out: list[tuple[int, str]] = []
    for i, m in enumerate(req.messages):
        role = _get(m, "role")
        if role in ("tool", "function") or _get(m, "type") in ("function_call_output", "custom_tool_call_output"):
            out.append((i, _content_text(_get(m, "content") or _get(m, "output"))))
            continue
        blocks = _get(m, "content") if role is not None else None
        blocks = blocks if isinstance(blocks, list) else _get(m, "parts") if isinstance(_get(m, "parts"), list) else []
        for b in blocks:
            if _get(b, "type") == "tool_result" or _get(b, "functionResponse") is not None or _get(b, "toolResult") is not None:
                out.append((i, _part_text(b)))
    if out:
        return out
    users = [(i, _content_text(_get(m, "content"))) for i, m in enumerate(req.messages) if _get(m, "role") == "user"]
    return users[1:]


def _duplicates(req: Request, per: Sequence[MessageTokens]) -> tuple[Duplicate, ...]:
    seen: dict[bytes, list[int]] = {}
    text_of: dict[bytes, str] = {}
    for i, text in _tool_outputs(req):
        if len(text) < _MIN_DUPLICATE_CHARS:
            continue
        h = hashlib.blake2b(text.encode("utf-8", "replace"), digest_size=16).digest()
        seen.setdefault(h, []).append(i)
        text_of.setdefault(h, text)
    dups = [
        Duplicate(tuple(ix), per[ix[-1]].tokens, " ".join(text_of[h].split())[:100])
        for h, ix in seen.items()
        if len(ix) > 1
    ]
    return tuple(sorted(dups, key=lambda d: -d.wasted_tokens))


def _plan(req: Request, budget: int, window: int | None) -> Plan:
    """Run the Compactor (extractive summary: offline) on the history at ``budget`` tokens."""
    compactor = Compactor(
        provider=req.provider, model=req.model, context_window=window, budget=budget,
        summarizer=ExtractiveSummarizer(), tools=req.tools, system=req.system, response_format=req.response_format,
    )
    try:
        return Plan(budget, compactor.compact(req.messages))
    except CompactionError as e:
        return Plan(budget, None, str(e))


def largest(b: Breakdown, messages: Sequence[Any], top: int) -> tuple[tuple[MessageTokens, ...], dict[int, str]]:
    """The ``top`` largest messages of a breakdown and a one-line preview of each."""
    biggest = tuple(sorted(b.per_message, key=lambda m: -m.tokens)[:top])
    return biggest, {m.index: preview(messages[m.index], 90) for m in biggest}


def analyze(req: Request, *, budget: int | None = None, window: int | None = None, top: int = 8) -> ReportData:
    """Compute what the reports show for one request. ``budget``: target tokens of the
    compaction plan (default: the Compactor's own budget when the history is past it, else half
    the estimate); ``window``: context window (default: from the model name, when known)."""
    opts = req.options()
    b = contextfold.breakdown(req.messages, **opts)
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
    )


# --- text --------------------------------------------------------------------------------------


def kind_table(by_kind: dict[str, int], total: int, title: str = "by kind") -> Table:
    """Tokens and share of each kind, in `KINDS` order."""
    from rich.table import Table

    t = Table(title=title, title_justify="left", show_edge=False)
    t.add_column("kind")
    t.add_column("tokens", justify="right")
    t.add_column("share", justify="right")
    for k in KINDS:
        v = by_kind.get(k, 0)
        if v:
            t.add_row(k.replace("_", " "), f"{v:,}", f"{v / max(total, 1):.1%}")
    return t


def role_table(by_role: dict[str, int], total: int) -> Table:
    """Tokens and share of each role, largest first."""
    from rich.table import Table

    t = Table(title="by role", title_justify="left", show_edge=False)
    t.add_column("role")
    t.add_column("tokens", justify="right")
    t.add_column("share", justify="right")
    for r, v in sorted(by_role.items(), key=lambda kv: -kv[1]):
        t.add_row(r, f"{v:,}", f"{v / max(total, 1):.1%}")
    return t


def _mostly(m: MessageTokens) -> str:
    return max(m.by_kind, key=lambda k: m.by_kind[k]).replace("_", " ") if m.by_kind else ""


def print_breakdown(
    req: Request, b: Breakdown, name: str, console: Console, *,
    top: Sequence[MessageTokens], previews: dict[int, str],
) -> None:
    """The breakdown as text: totals, by kind, by role, the largest messages and what was
    priced by an assumption (``contextfold estimate`` and the first half of the text report)."""
    from rich.table import Table

    console.print(
        f"[bold]{name}[/]: {len(req.messages):,} messages ({req.wire}), provider {req.provider}"
        + (f", model {req.model}" if req.model else "")
    )
    console.print(f"estimated prompt tokens: [bold]{b.total:,}[/]")
    console.print(kind_table(dict(b.by_kind), b.total))
    console.print(role_table(dict(b.by_role), b.total))
    if top:
        t = Table(title=f"largest {len(top)} messages", title_justify="left", show_edge=False)
        rows = [(str(m.index), m.role, f"{m.tokens:,}", _mostly(m), previews[m.index]) for m in top]
        for j, col in enumerate(("#", "role", "tokens", "mostly", "preview")):
            # Every column but the preview keeps its full width; the preview takes what is left.
            full = max(len(col), *(len(r[j]) for r in rows)) if col != "preview" else None
            t.add_column(col, justify="right" if col in ("#", "tokens") else "left", no_wrap=True, overflow="ellipsis",
                         min_width=full, max_width=48 if col == "preview" else None)
        for r in rows:
            t.add_row(*r)
        console.print(t)
    if b.unmeasured:
        console.print(f"[yellow]{len(b.unmeasured)} part(s) priced by an assumption:[/]")
        for u in b.unmeasured[:10]:
            console.print(f"  message {u.index}: {u.kind}, {u.assumed_tokens:,} tokens ({u.reason})", markup=False)


def compaction_lines(r: CompactionResult, n_messages: int) -> list[str]:
    """What a compaction did, one fact per line (``contextfold compact`` and the report)."""
    if not r.changed:
        return [f"nothing done: {r.reason}"]
    lines = [
        f"{r.strategy_used}: {n_messages:,} messages / {r.tokens_before:,} tokens -> "
        f"{len(r.messages):,} messages / {r.tokens_after:,} tokens"
    ]
    if r.removed:
        lines.append(
            f"folded into one summary: {len(r.removed)} messages ({r.removed[0]}..{r.removed[-1]})"
            + (" (LLM failed: extractive fallback)" if r.fallback_used else "")
        )
    if r.kept:
        lines.append(f"kept verbatim among the folded: messages {', '.join(map(str, r.kept))}")
    if r.pruned:
        kinds = Counter(p.kind for p in r.pruned)
        edited = len({p.index for p in r.pruned})
        saved = sum(p.tokens_saved for p in r.pruned)
        lines.append(
            "shortened: " + ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
            + f" in {edited} messages ({saved:,} tokens saved)"
        )
    lines += [f"note: {note}" for note in r.notes]
    return lines


def plan_lines(p: Plan, per: Sequence[MessageTokens]) -> list[str]:
    """The compaction plan, one fact per line: what ``Compactor.compact`` does at its budget,
    and which messages it keeps verbatim."""
    if p.result is None:
        return [f"cannot compact to {p.budget:,} tokens: {p.error}"]
    r = p.result
    lines = compaction_lines(r, len(per))
    if r.removed:
        first, last = r.removed[0], r.removed[-1]
        lines.append(f"kept head: messages 0..{first - 1} ({sum(m.tokens for m in per[:first]):,} tokens)")
        lines.append(f"protected tail: messages {last + 1}..{len(per) - 1} ({sum(m.tokens for m in per[last + 1:]):,} tokens)")
    return lines


def print_text(d: ReportData, name: str, console: Console) -> None:
    """The report as rich text on ``console``."""
    b, req = d.breakdown, d.request
    print_breakdown(req, b, name, console, top=d.top, previews=d.previews)
    console.print(f"wire size: {contextfold.wire_bytes(req.messages, provider=req.provider):,} bytes of JSON")  # type: ignore[arg-type]
    if d.window:
        console.print(f"context window {d.window:,}: {b.total / d.window:.1%} used; compaction gate at {d.gate:,}")
    if d.duplicates:
        wasted = sum(x.wasted_tokens for x in d.duplicates)
        console.print(f"duplicated tool outputs: {len(d.duplicates)} outputs sent more than once, {wasted:,} tokens in extra copies")
        for x in d.duplicates[:5]:
            console.print(f"  messages {', '.join(map(str, x.indices))}: {x.tokens_each:,} tokens each  {x.preview[:60]}", markup=False)
    console.print(f"\n[bold]compaction plan[/] at a budget of {d.plan.budget:,} tokens (what Compactor.compact does; extractive summary, offline):")
    for line in plan_lines(d.plan, b.per_message):
        console.print(f"  {line}", markup=False)
    if d.recorded:
        errs = sorted(est / real - 1 for _, real, est in d.recorded)
        n, real, est = d.recorded[-1]
        console.print(f"\nagainst the provider's reported prompt tokens ({len(d.recorded)} recorded calls):")
        console.print(f"  last call: estimate {est:,} vs reported {real:,}")
        console.print(f"  median error {errs[len(errs) // 2]:+.1%}, worst {max(errs, key=abs):+.1%}")


# --- SVG charts --------------------------------------------------------------------------------


def _columns(n: int) -> list[tuple[int, int]]:
    """[start, end) message ranges of at most `_MAX_COLUMNS` columns."""
    if n <= _MAX_COLUMNS:
        return [(i, i + 1) for i in range(n)]
    step = n / _MAX_COLUMNS
    return [(int(k * step), int((k + 1) * step)) for k in range(_MAX_COLUMNS)]


def _ticks(top: float) -> list[int]:
    if top <= 0:
        return [0]
    raw = top / 5
    mag = 10 ** (len(str(int(raw))) - 1)
    step = next(s * mag for s in (1, 2, 2.5, 5, 10) if s * mag >= raw)
    return [int(step * k) for k in range(int(top // step) + 1)]


def _fmt(n: float) -> str:
    return f"{n / 1000:.0f}k" if n >= 10_000 else f"{n:,.0f}"


def growth_svg(d: ReportData, width: int = 1000, height: int = 380) -> str:
    """Cumulative prompt tokens after each message, stacked by kind, with the context window and
    the compaction gate as horizontal lines when they are within reach."""
    b = d.breakdown
    per = b.per_message
    left, right, top, bottom = 64, 16, 16, 36
    w, h = width - left - right, height - top - bottom
    cols = _columns(len(per))
    cum = dict(b.request_overhead)
    stacks: list[dict[str, int]] = []
    c = 0
    for _, end in cols:
        while c < end:
            for k, v in per[c].by_kind.items():
                cum[k] = cum.get(k, 0) + v
            c += 1
        stacks.append(dict(cum))
    total = b.total
    lines = []
    if d.window and d.window <= 3 * max(total, 1):
        lines.append(("context window", d.window, WINDOW_COLOR, "6 4"))
    if d.gate and d.gate <= 3 * max(total, 1):
        lines.append(("compaction gate", d.gate, GATE_COLOR, ""))
    ymax = max([total] + [v for _, v, _, _ in lines]) * 1.06 or 1
    n = max(len(cols), 1)

    def x(i: float) -> float:
        return left + w * i / n

    def y(v: float) -> float:
        return top + h - h * v / ymax

    out = [f'<svg id="growth" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" aria-label="cumulative tokens by kind">']
    out.append(f'<rect x="{left}" y="{top}" width="{w}" height="{h}" fill="#fafafa" stroke="#ddd"/>')
    for t in _ticks(ymax):
        out.append(f'<line x1="{left}" x2="{left + w}" y1="{y(t):.1f}" y2="{y(t):.1f}" stroke="#e6e6e6"/>')
        out.append(f'<text x="{left - 6}" y="{y(t) + 4:.1f}" text-anchor="end" font-size="11" fill="#555">{_fmt(t)}</text>')
    # One polygon per kind: the band between the cumulative sum of the kinds below and its own top.
    base = [0] * len(stacks)
    for k in KINDS:
        if not b.by_kind.get(k):
            continue
        topv = [base[i] + s.get(k, 0) for i, s in enumerate(stacks)]
        pts = [f"{x(i):.1f},{y(v):.1f} {x(i + 1):.1f},{y(v):.1f}" for i, v in enumerate(topv)]
        back = [f"{x(i + 1):.1f},{y(v):.1f} {x(i):.1f},{y(v):.1f}" for i, v in reversed(list(enumerate(base)))]
        out.append(f'<polygon class="kind-{k}" points="{" ".join(pts + back)}" fill="{COLORS[k]}"><title>{k.replace("_", " ")}: {b.by_kind[k]:,} tokens</title></polygon>')
        base = topv
    for label, v, color, dash in lines:
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        out.append(f'<line class="limit" x1="{left}" x2="{left + w}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="{color}" stroke-width="2"{dash_attr}/>')
        out.append(f'<text x="{left + 6}" y="{y(v) - 5:.1f}" font-size="12" fill="{color}">{label} {v:,}</text>')
    for t in _ticks(len(per)):
        xi = left + w * t / max(len(per), 1)
        out.append(f'<text x="{xi:.1f}" y="{top + h + 16}" text-anchor="middle" font-size="11" fill="#555">{t}</text>')
    out.append(f'<text x="{left + w / 2}" y="{height - 4}" text-anchor="middle" font-size="12" fill="#333">message index</text>')
    out.append("</svg>")
    return "".join(out)


def per_message_svg(d: ReportData, width: int = 1000, height: int = 240) -> str:
    """Tokens of each message (binned: the largest message of each column), stacked by kind,
    with the compaction plan as a strip under the axis."""
    per = d.breakdown.per_message
    left, right, top, bottom = 64, 16, 10, 48
    w, h = width - left - right, height - top - bottom
    cols = _columns(len(per))
    picks = [max(per[a:e], key=lambda m: m.tokens) for a, e in cols] if per else []
    ymax = max((m.tokens for m in picks), default=1) * 1.05 or 1
    n = max(len(cols), 1)
    bw = w / n
    out = [f'<svg id="per-message" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" aria-label="tokens per message by kind">']
    out.append(f'<rect x="{left}" y="{top}" width="{w}" height="{h}" fill="#fafafa" stroke="#ddd"/>')
    for t in _ticks(ymax):
        yy = top + h - h * t / ymax
        out.append(f'<line x1="{left}" x2="{left + w}" y1="{yy:.1f}" y2="{yy:.1f}" stroke="#e6e6e6"/>')
        out.append(f'<text x="{left - 6}" y="{yy + 4:.1f}" text-anchor="end" font-size="11" fill="#555">{_fmt(t)}</text>')
    for i, m in enumerate(picks):
        y0: float = top + h
        for k in KINDS:
            v = m.by_kind.get(k, 0)
            if not v:
                continue
            hh = h * v / ymax
            y0 -= hh
            out.append(f'<rect x="{left + i * bw:.2f}" y="{y0:.2f}" width="{max(bw - 0.3, 0.6):.2f}" height="{hh:.2f}" fill="{COLORS[k]}"><title>#{m.index} {m.role}: {k.replace("_", " ")} {v:,} of {m.tokens:,}</title></rect>')
    # The plan strip: head, folded, masked (pruned) and kept messages.
    states = d.plan.states(len(per))
    sy = top + h + 8
    for i, (a, e) in enumerate(cols):
        column = set(states[a:e])
        state = next(s for s in ("masked", "fold", "head", "kept") if s in column)
        out.append(f'<rect class="plan-{state}" x="{left + i * bw:.2f}" y="{sy}" width="{bw + 0.05:.2f}" height="10" fill="{PLAN_COLORS[state]}"/>')
    out.append(f'<text x="{left - 6}" y="{sy + 9}" text-anchor="end" font-size="11" fill="#555">plan</text>')
    out.append(f'<text x="{left + w / 2}" y="{height - 6}" text-anchor="middle" font-size="12" fill="#333">message index (0 … {len(per) - 1})</text>')
    out.append("</svg>")
    return "".join(out)


# --- HTML --------------------------------------------------------------------------------------

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px auto;max-width:1040px;color:#222;background:#fff}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:28px 0 8px;border-bottom:1px solid #eee;padding-bottom:4px}
.sub{color:#666;margin-bottom:16px}.cards{display:flex;gap:12px;flex-wrap:wrap;margin:12px 0}
.card{border:1px solid #e3e3e3;border-radius:6px;padding:8px 14px;min-width:150px}.card b{display:block;font-size:20px}
.legend{display:flex;gap:14px;flex-wrap:wrap;font-size:12px;margin:6px 0}.legend span{display:inline-flex;align-items:center;gap:5px}
.sw{width:12px;height:12px;border-radius:2px;display:inline-block}
table{border-collapse:collapse;font-size:13px;margin:6px 0}td,th{padding:3px 10px;border-bottom:1px solid #f0f0f0;text-align:left}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}.pv{color:#555;max-width:620px;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.grid{display:grid;grid-template-columns:1fr 1fr;gap:24px}.warn{color:#8a6d00}
"""


def _legend(items: Sequence[tuple[str, str]]) -> str:
    return '<div class="legend">' + "".join(f'<span><i class="sw" style="background:{c}"></i>{html.escape(t)}</span>' for t, c in items) + "</div>"


def _table(head: Sequence[str], rows: Sequence[Sequence[Any]], numeric: set[int]) -> str:
    th = "".join(f'<th class="{"n" if i in numeric else ""}">{html.escape(h)}</th>' for i, h in enumerate(head))
    body = []
    for r in rows:
        tds = []
        for i, v in enumerate(r):
            cls = "n" if i in numeric else "pv" if head[i] == "preview" else ""
            tds.append(f'<td class="{cls}">{html.escape(f"{v:,}" if isinstance(v, int) else str(v))}</td>')
        body.append("<tr>" + "".join(tds) + "</tr>")
    return f"<table><tr>{th}</tr>{''.join(body)}</table>"


def render_html(d: ReportData, *, title: str = "history") -> str:
    """The whole report as one HTML page: inline CSS and SVG, no script, no external resource."""
    b, req, p = d.breakdown, d.request, d.plan
    per = b.per_message
    total = max(b.total, 1)
    cards = [
        ("estimated prompt tokens", f"{b.total:,}"),
        ("messages", f"{len(per):,}"),
    ]
    if d.window:
        cards.append(("of the context window", f"{b.total / d.window:.1%}"))
        cards.append(("compaction gate", f"{d.gate:,}"))
    if d.duplicates:
        cards.append(("in duplicated outputs", f"{sum(x.wasted_tokens for x in d.duplicates):,}"))
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">",
        f"<title>contextfold report: {html.escape(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>Where the tokens go: {html.escape(title)}</h1>",
        f"<div class='sub'>{len(per):,} messages ({html.escape(req.wire)}), provider {html.escape(req.provider)}"
        + (f", model {html.escape(req.model)}" if req.model else "")
        + f" · contextfold {html.escape(contextfold.__version__)} · estimated tokens (no tokenizer call)</div>",
        "<div class='cards'>" + "".join(f"<div class='card'><b>{v}</b>{html.escape(k)}</div>" for k, v in cards) + "</div>",
        "<h2>Context growth, stacked by kind</h2>",
        _legend([(k.replace("_", " "), COLORS[k]) for k in KINDS if b.by_kind.get(k)]
                + ([("context window", WINDOW_COLOR), ("compaction gate", GATE_COLOR)] if d.window and d.window <= 3 * total else [])),
        growth_svg(d),
    ]
    if d.window and d.window > 3 * total:
        parts.append(f"<p class='sub'>The context window ({d.window:,}) and the gate ({d.gate:,}) are far above this history: not drawn.</p>")
    shown = set(p.states(len(per)))  # the legend names only the plan states the strip shows
    parts += [
        "<h2>Tokens per message</h2>",
        _legend([(k.replace("_", " "), COLORS[k]) for k in KINDS if b.by_kind.get(k)]
                + [(f"plan: {s}", c) for s, c in PLAN_COLORS.items() if s in shown]),
        per_message_svg(d),
    ]
    if len(per) > _MAX_COLUMNS:
        parts.append(f"<p class='sub'>{len(per):,} messages binned into {_MAX_COLUMNS} columns: each bar is the largest message of its column.</p>")
    states = p.states(len(per))
    by_state = dict.fromkeys(PLAN_COLORS, 0)
    count = dict.fromkeys(PLAN_COLORS, 0)
    for m, st in zip(per, states):
        by_state[st] += m.tokens
        count[st] += 1
    parts += [
        f"<h2>Compaction plan at a budget of {p.budget:,} tokens</h2>",
        "<p class='sub'>What <code>Compactor.compact</code> does to this history (hybrid strategy, extractive summary: offline).</p>",
        _table(
            ["part", "messages", "tokens now"],
            [
                ["head (kept verbatim)", count["head"], by_state["head"]],
                ["folded into one summary", count["fold"], by_state["fold"]],
                ["shortened (old tool output, images, arguments)", count["masked"], by_state["masked"]],
                ["kept verbatim", count["kept"], by_state["kept"]],
            ],
            {1, 2},
        ),
        "<ul>" + "".join(f"<li>{html.escape(line)}</li>" for line in plan_lines(p, per)) + "</ul>",
        "<div class='grid'><div><h2>By kind</h2>",
        _table(["kind", "tokens", "share"], [[k.replace("_", " "), v, f"{v / total:.1%}"] for k in KINDS if (v := b.by_kind.get(k, 0))], {1, 2}),
        "</div><div><h2>By role</h2>",
        _table(["role", "tokens", "share"], [[r, v, f"{v / total:.1%}"] for r, v in sorted(b.by_role.items(), key=lambda kv: -kv[1])], {1, 2}),
        "</div></div>",
        f"<h2>Biggest {len(d.top)} messages</h2>",
        _table(["#", "role", "tokens", "mostly", "preview"],
               [[m.index, m.role, m.tokens, _mostly(m), d.previews[m.index]] for m in d.top],
               {0, 2}),
    ]
    parts.append("<h2>Duplicated tool outputs</h2>")
    if d.duplicates:
        parts.append(_table(["messages", "tokens each", "extra copies cost", "preview"],
                            [[", ".join(map(str, x.indices[:12])) + (" …" if len(x.indices) > 12 else ""), x.tokens_each, x.wasted_tokens, x.preview] for x in d.duplicates[:20]],
                            {1, 2}))
    else:
        parts.append(f"<p>None (outputs of at least {_MIN_DUPLICATE_CHARS} characters sent twice).</p>")
    if b.unmeasured:
        parts.append("<h2 class='warn'>Priced by an assumption</h2>")
        parts.append(_table(["message", "kind", "assumed tokens", "reason"], [[u.index, u.kind, u.assumed_tokens, u.reason] for u in b.unmeasured[:50]], {0, 2}))
    if d.recorded:
        errs = sorted(est / real - 1 for _, real, est in d.recorded)
        parts.append(f"<h2>Against the provider's reported prompt tokens ({len(d.recorded)} recorded calls)</h2>")
        parts.append(f"<p>median error {errs[len(errs) // 2]:+.1%}, worst {max(errs, key=abs):+.1%}</p>")
        parts.append(_table(["call", "messages sent", "reported", "estimated", "error"],
                            [[k, n, real, est, f"{est / real - 1:+.1%}"] for k, (n, real, est) in enumerate(d.recorded)][-12:], {0, 1, 2, 3, 4}))
    parts.append("</body></html>")
    return "\n".join(parts)


# --- PNG ---------------------------------------------------------------------------------------


def find_browser() -> str | None:
    """A headless-capable Chromium / Chrome: ``$CONTEXTFOLD_CHROMIUM`` or the first on PATH."""
    env = os.environ.get("CONTEXTFOLD_CHROMIUM")
    if env:
        return env
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def screenshot(html_path: Path, png_path: Path, *, width: int, height: int, timeout: float = 120.0) -> None:
    """Render a local HTML file in headless Chromium and save a ``width`` x ``height`` PNG."""
    browser = find_browser()
    if browser is None:
        raise BrowserMissing("no chromium on PATH (Debian: apt-get install chromium; or set CONTEXTFOLD_CHROMIUM)")
    with tempfile.TemporaryDirectory() as profile:
        cmd = [
            browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
            "--disable-dev-shm-usage", f"--user-data-dir={profile}", f"--window-size={width},{height}",
            f"--screenshot={png_path.resolve()}", html_path.resolve().as_uri(),
        ]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0 or not png_path.exists():
        raise RuntimeError(f"chromium failed ({r.returncode}): {r.stderr[-500:]}")


def write_png(d: ReportData, png_path: Path) -> None:
    """The growth chart (with its legend) as a PNG, rendered by headless Chromium."""
    page = (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><style>{_CSS}body{{margin:8px;max-width:none}}</style></head><body>"
        + _legend([(k.replace("_", " "), COLORS[k]) for k in KINDS if d.breakdown.by_kind.get(k)])
        + growth_svg(d)
        + "</body></html>"
    )
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "chart.html"
        src.write_text(page, encoding="utf-8")
        screenshot(src, png_path, width=1020, height=430)
