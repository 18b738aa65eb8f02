"""The report as one self-contained HTML page: inline CSS and SVG, no script, nothing loaded."""

from __future__ import annotations

import base64
import hashlib
import html
from collections.abc import Sequence
from typing import Any

import contextfold
from contextfold.breakdown import KINDS
from contextfold.report.analysis import _MIN_DUPLICATE_CHARS, ReportData
from contextfold.report.svg import (
    _MAX_COLUMNS,
    COLORS,
    GATE_COLOR,
    PLAN_COLORS,
    TOOL_COLORS,
    WINDOW_COLOR,
    growth_svg,
    per_message_svg,
    tools_svg,
)
from contextfold.report.text import _mostly, plan_lines, tool_summary


# Legend swatches by class (the CSP allows no inline style attribute).
_SWATCHES = {**{k: c for k, c in COLORS.items()}, "window": WINDOW_COLOR, "gate": GATE_COLOR,
             **{f"plan-{k}": c for k, c in PLAN_COLORS.items()}, **{f"tool-{k}": c for k, c in TOOL_COLORS.items()}}

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
body{padding:0 16px}svg{max-width:100%;height:auto}
""" + "".join(f".sw-{name}{{background:{color}}}" for name, color in _SWATCHES.items()) + "\n"


def _csp(css: str) -> str:
    """The page's Content-Security-Policy: nothing loads, no script, no inline style attribute;
    the one <style> element is allowed by its hash; no <base>, no form target."""
    digest = base64.b64encode(hashlib.sha256(css.encode("utf-8")).digest()).decode("ascii")
    return (f"default-src 'none'; style-src 'sha256-{digest}'; img-src data:; base-uri 'none'; "
            "form-action 'none'")


def _legend(items: Sequence[tuple[str, str]]) -> str:
    """A legend of ``(label, swatch)`` pairs; a swatch is a key of ``_SWATCHES``."""
    return '<div class="legend">' + "".join(
        f'<span><i class="sw sw-{html.escape(c)}"></i>{html.escape(t)}</span>' for t, c in items) + "</div>"


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
        share = b.total / d.window
        cards.append(("of the context window", f"{share:.1%}") if share < 2 else ("times the context window", f"{share:,.1f}x"))
        cards.append(("compaction gate", f"{d.gate:,}"))
    if d.duplicates:
        cards.append(("in duplicated outputs", f"{sum(x.wasted_tokens for x in d.duplicates):,}"))
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<meta http-equiv='Content-Security-Policy' content=\"{_csp(_CSS)}\">",
        f"<title>contextfold report: {html.escape(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>Where the tokens go: {html.escape(title)}</h1>",
        f"<div class='sub'>{len(per):,} messages ({html.escape(req.wire)}), provider {html.escape(req.provider)}"
        + (f", model {html.escape(req.model)}" if req.model else "")
        + f" · contextfold {html.escape(contextfold.__version__)} · estimated tokens (no tokenizer call)</div>",
        "<div class='cards'>" + "".join(f"<div class='card'><b>{v}</b>{html.escape(k)}</div>" for k, v in cards) + "</div>",
        "<h2>Context growth, stacked by kind</h2>",
        _legend([(k.replace("_", " "), k) for k in KINDS if b.by_kind.get(k)]
                + ([("context window", "window"), ("compaction gate", "gate")] if d.window and d.window <= 3 * total else [])),
        growth_svg(d),
    ]
    if d.window and d.window > 3 * total:
        parts.append(f"<p class='sub'>The context window ({d.window:,}) and the gate ({d.gate:,}) are far above this history: not drawn.</p>")
    shown = set(p.states(len(per)))  # the legend names only the plan states the strip shows
    parts += [
        "<h2>Tokens per message</h2>",
        _legend([(k.replace("_", " "), k) for k in KINDS if b.by_kind.get(k)]
                + [(f"plan: {s}", f"plan-{s}") for s in PLAN_COLORS if s in shown]),
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
    overhead = sum(b.request_overhead.values())
    after: dict[str, int | str] = {k: "" for k in PLAN_COLORS}
    total_after: int | str = ""
    overhead_after: int | str = overhead if p.result is not None else ""
    if p.result is not None and p.result.changed and p.sources:
        # What each part costs once compacted, read off the result message by message (a tail
        # message cut in the middle is shortened, not verbatim; the summary costs what its
        # message costs, with the tail message it was merged into, if any).
        booked = dict.fromkeys(PLAN_COLORS, 0)
        for src, tokens in zip(p.sources, p.tokens_after):
            booked["fold" if src < 0 or src == p.merged else states[src]] += tokens
        after = dict(booked)
        total_after = p.result.tokens_after
        overhead_after = total_after - sum(p.tokens_after)
    elif p.result is not None and p.result.changed:
        # A plan without its per-message reading (built by hand): the old estimate.
        saved = sum(x.tokens_saved for x in p.result.pruned)
        after.update(head=by_state["head"], kept=by_state["kept"], masked=max(0, by_state["masked"] - saved))
        rest = p.result.tokens_after - overhead - by_state["head"] - by_state["kept"] - int(after["masked"])
        after["fold"] = max(0, rest) if count["fold"] else 0
        total_after = p.result.tokens_after
    elif p.result is not None:
        after = dict(by_state)
        total_after = b.total
    fold_label = "folded into one summary" + (f" (merged into message {p.merged})" if p.merged is not None else "")
    shortened_label = "shortened (old tool output, images, arguments, a tail message cut in the middle)"
    parts += [
        f"<h2>Compaction plan at a budget of {p.budget:,} tokens</h2>",
        "<p class='sub'>What <code>Compactor.compact</code> does to this history (hybrid strategy, extractive summary: offline).</p>",
        _table(
            ["part", "messages", "tokens before", "tokens after"],
            [
                ["head (kept verbatim)", count["head"], by_state["head"], after["head"]],
                [fold_label, count["fold"], by_state["fold"], after["fold"]],
                [shortened_label, count["masked"], by_state["masked"], after["masked"]],
                ["kept verbatim", count["kept"], by_state["kept"], after["kept"]],
                ["system, tools and framing", "", overhead, overhead_after],
                ["total", len(per), b.total, total_after],
            ],
            {1, 2, 3},
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
    ts = d.tool_schemas
    if ts.tools:
        total_tools = max(ts.total, 1)
        parts += [
            "<h2>Tool schemas, by MCP server</h2>",
            f"<p>{html.escape(tool_summary(ts))}.</p>",
            _legend([("called", "tool-called"), ("never called", "tool-unused")]),
            tools_svg(ts),
            _table(["server", "tool", "tokens", "share", "called"],
                   [[t.server, t.name, t.tokens, f"{t.tokens / total_tools:.1%}", "yes" if t.called else "UNUSED"]
                    for t in ts.tools[:500]],
                   {2, 3}),
        ]
        if len(ts.tools) > 500:
            parts.append(f"<p class='sub'>… {len(ts.tools) - 500} more tools.</p>")
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


