"""The charts of the report as inline SVG: cumulative tokens by kind, tokens per message with
the compaction plan as a strip, and the tool schemas by MCP server."""

from __future__ import annotations

import html

from contextfold.breakdown import KINDS
from contextfold.report.analysis import ReportData, ToolCost, ToolSchemas

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
#: Tool schemas: a tool the history calls, and one it never calls.
TOOL_COLORS = {"called": "#b07aa1", "unused": "#e0c3d8"}
WINDOW_COLOR = "#222222"
GATE_COLOR = "#d62728"
PLAN_COLORS = {"head": "#6b6b6b", "fold": "#f1c40f", "masked": "#e67e22", "kept": "#27ae60"}

# Charts keep at most this many columns; longer histories are binned.
_MAX_COLUMNS = 600


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


def _unit(top: float) -> tuple[float, str]:
    """One unit for every tick of an axis, chosen by its largest tick (never "10000k")."""
    if top >= 1_000_000:
        return 1_000_000, "M"
    if top >= 10_000:
        return 1_000, "k"
    return 1, ""


def _fmt(n: float, top: float | None = None) -> str:
    """``n`` in the unit of an axis whose largest tick is ``top`` (default: ``n``'s own)."""
    div, suffix = _unit(n if top is None else top)
    if not suffix or n == 0:
        return f"{n:,.0f}"
    v = n / div
    return f"{v:,.1f}".rstrip("0").rstrip(".") + suffix


def _axis_label(text: str, top: int, h: int) -> str:
    """The y axis's title, written upwards beside the tick labels."""
    cy = top + h / 2
    return (f'<text class="axis-title" x="12" y="{cy:.1f}" transform="rotate(-90 12 {cy:.1f})" text-anchor="middle" '
            f'font-size="12" fill="#333">{html.escape(text)}</text>')


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
    ticks = _ticks(ymax)
    for t in ticks:
        out.append(f'<line x1="{left}" x2="{left + w}" y1="{y(t):.1f}" y2="{y(t):.1f}" stroke="#e6e6e6"/>')
        out.append(f'<text class="tick" x="{left - 6}" y="{y(t) + 4:.1f}" text-anchor="end" font-size="11" fill="#555">{_fmt(t, ticks[-1])}</text>')
    out.append(_axis_label("prompt tokens (cumulative)", top, h))
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
    # The window's label at the right end of its line, the gate's at the left: two lines a few
    # pixels apart (a history far above the window) never print their labels on each other.
    for label, v, color, dash in lines:
        dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
        # A white casing under the line: it stays visible across a band of its own colour.
        out.append(f'<line x1="{left}" x2="{left + w}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="#ffffff" stroke-width="5"/>')
        out.append(f'<line class="limit" x1="{left}" x2="{left + w}" y1="{y(v):.1f}" y2="{y(v):.1f}" stroke="{color}" stroke-width="2"{dash_attr}/>')
        at_right = label == "context window"
        x_text, anchor = (left + w - 6, "end") if at_right else (left + 6, "start")
        out.append(f'<text class="limit-label" x="{x_text}" y="{y(v) - 5:.1f}" text-anchor="{anchor}" font-size="12" '
                   f'fill="{color}" stroke="#fafafa" stroke-width="3" paint-order="stroke">{label} {v:,}</text>')
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
    ticks = _ticks(ymax)
    for t in ticks:
        yy = top + h - h * t / ymax
        out.append(f'<line x1="{left}" x2="{left + w}" y1="{yy:.1f}" y2="{yy:.1f}" stroke="#e6e6e6"/>')
        out.append(f'<text class="tick" x="{left - 6}" y="{yy + 4:.1f}" text-anchor="end" font-size="11" fill="#555">{_fmt(t, ticks[-1])}</text>')
    out.append(_axis_label("tokens", top, h))
    for i, m in enumerate(picks):
        y0: float = top + h
        for k in KINDS:
            v = m.by_kind.get(k, 0)
            if not v:
                continue
            hh = h * v / ymax
            y0 -= hh
            out.append(f'<rect x="{left + i * bw:.2f}" y="{y0:.2f}" width="{max(bw - 0.3, 0.6):.2f}" height="{hh:.2f}" fill="{COLORS[k]}"><title>#{m.index} {html.escape(m.role)}: {k.replace("_", " ")} {v:,} of {m.tokens:,}</title></rect>')
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




# Servers drawn as their own bar; the rest are one "other servers" bar.
_MAX_SERVERS = 20


def tools_svg(ts: ToolSchemas, width: int = 1000) -> str:
    """One bar per MCP server, as long as its tools' schemas cost, split into one segment per
    tool (hover: its name and tokens); tools the history never calls are drawn pale."""
    servers = list(ts.by_server)
    shown = servers[:_MAX_SERVERS]
    rows: dict[str, list[ToolCost]] = {s: [] for s in shown}
    other = "other servers"
    for t in ts.tools:
        rows.setdefault(t.server if t.server in rows else other, []).append(t)
    left, right, top, row_h = 160, 80, 8, 22
    w = width - left - right
    height = top * 2 + row_h * len(rows)
    most = max((sum(t.tokens for t in r) for r in rows.values()), default=1) or 1
    out = [f'<svg id="tools" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" role="img" aria-label="tool schema tokens by server">']
    for k, (server, tools) in enumerate(rows.items()):
        y = top + k * row_h
        total = sum(t.tokens for t in tools)
        out.append(f'<text x="{left - 8}" y="{y + 15}" text-anchor="end" font-size="12" fill="#333">{html.escape(server[:24])}</text>')
        x = float(left)
        for t in tools:
            tw = w * t.tokens / most
            state = "called" if t.called else "unused"
            out.append(f'<rect class="tool-{state}" x="{x:.2f}" y="{y + 3}" width="{max(tw - 0.5, 0.3):.2f}" height="{row_h - 6}" '
                       f'fill="{TOOL_COLORS[state]}"><title>{html.escape(t.name)}: {t.tokens:,} tokens'
                       f'{"" if t.called else " (never called)"}</title></rect>')
            x += tw
        out.append(f'<text x="{x + 6:.1f}" y="{y + 15}" font-size="11" fill="#555">{total:,}</text>')
    out.append("</svg>")
    return "".join(out)
