"""The report as text for a terminal (rich tables; data is never read as markup)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

import contextfold
from contextfold.breakdown import KINDS, Breakdown, MessageTokens
from contextfold.compactor import CompactionResult
from contextfold.inputs import Request
from contextfold.report.analysis import Plan, ReportData, ToolSchemas
from contextfold.safe_text import clean, plain

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table


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
            t.add_row(plain(k.replace("_", " ")), f"{v:,}", f"{v / max(total, 1):.1%}")
    return t


def role_table(by_role: dict[str, int], total: int) -> Table:
    """Tokens and share of each role, largest first."""
    from rich.table import Table

    t = Table(title="by role", title_justify="left", show_edge=False)
    t.add_column("role")
    t.add_column("tokens", justify="right")
    t.add_column("share", justify="right")
    for r, v in sorted(by_role.items(), key=lambda kv: -kv[1]):
        t.add_row(plain(r), f"{v:,}", f"{v / max(total, 1):.1%}")
    return t


def _mostly(m: MessageTokens) -> str:
    return max(m.by_kind, key=lambda k: m.by_kind[k]).replace("_", " ") if m.by_kind else ""


def print_breakdown(
    req: Request, b: Breakdown, name: str, console: Console, *,
    top: Sequence[MessageTokens], previews: dict[int, str],
) -> None:
    """The breakdown as text: totals, by kind, by role, the largest messages and what was
    priced by an assumption (``contextfold estimate`` and the first half of the text report)."""
    from rich.markup import escape
    from rich.table import Table

    console.print(
        f"[bold]{escape(clean(name))}[/]: "
        + escape(clean(f"{len(req.messages):,} messages ({req.wire}), provider {req.provider}"
                       + (f", model {req.model}" if req.model else "")))
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
            t.add_row(*(plain(c) for c in r))
        console.print(t)
    if b.unmeasured:
        console.print(f"[yellow]{len(b.unmeasured)} part(s) priced by an assumption:[/]")
        for u in b.unmeasured[:10]:
            console.print(clean(f"  message {u.index}: {u.kind}, {u.assumed_tokens:,} tokens ({u.reason})"), markup=False)


#: Tools listed one by one in the terminal; the rest are summed on one line.
_MAX_TOOL_ROWS = 30


def tool_summary(ts: ToolSchemas) -> str:
    """One line: what the tool schemas cost, how they were priced, and what the unused cost."""
    servers = len(ts.by_server)
    line = (f"tool schemas: {ts.total:,} tokens{' (exact)' if ts.exact else ' (estimated)'} for {len(ts.tools)} tools"
            + (f" of {servers} servers" if servers > 1 else ""))
    if ts.prompt:
        line += f", {ts.prompt:,} of them the provider's tool-use prompt"
    if ts.response_format:
        line += f", {ts.response_format:,} the response_format schema"
    if ts.unused:
        line += f"; {len(ts.unused)} never called ({sum(t.tokens for t in ts.unused):,} tokens on every call)"
    return line


def tool_table(ts: ToolSchemas, limit: int = _MAX_TOOL_ROWS) -> Table:
    """The schema cost of each tool, grouped by MCP server (costliest first), unused flagged."""
    from rich.table import Table

    t = Table(title="tool schemas by server", title_justify="left", show_edge=False)
    for col in ("server", "tool", "tokens", "share", "called"):
        t.add_column(col, justify="right" if col in ("tokens", "share") else "left", overflow="ellipsis")
    total = max(ts.total, 1)
    previous = None
    for tool in ts.tools[:limit]:
        server = tool.server if tool.server != previous else ""
        if server and len(ts.by_server) > 1:
            server = f"{server} ({ts.by_server[tool.server]:,})"
        previous = tool.server
        t.add_row(plain(server), plain(tool.name), f"{tool.tokens:,}", f"{tool.tokens / total:.1%}",
                  "yes" if tool.called else "UNUSED")
    rest = ts.tools[limit:]
    if rest:
        t.add_row("", f"… {len(rest)} more tools", f"{sum(x.tokens for x in rest):,}", "", "")
    return t


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
    if d.tool_schemas.tools:
        console.print(clean(tool_summary(d.tool_schemas)), markup=False)
        console.print(tool_table(d.tool_schemas))
    if d.duplicates:
        wasted = sum(x.wasted_tokens for x in d.duplicates)
        console.print(f"duplicated tool outputs: {len(d.duplicates)} outputs sent more than once, {wasted:,} tokens in extra copies")
        for x in d.duplicates[:5]:
            console.print(clean(f"  messages {', '.join(map(str, x.indices))}: {x.tokens_each:,} tokens each  {x.preview[:60]}"), markup=False)
    console.print(f"\n[bold]compaction plan[/] at a budget of {d.plan.budget:,} tokens (what Compactor.compact does; extractive summary, offline):")
    for line in plan_lines(d.plan, b.per_message):
        console.print(clean(f"  {line}"), markup=False)
    if d.recorded:
        errs = sorted(est / real - 1 for _, real, est in d.recorded)
        n, real, est = d.recorded[-1]
        console.print(f"\nagainst the provider's reported prompt tokens ({len(d.recorded)} recorded calls):")
        console.print(f"  last call: estimate {est:,} vs reported {real:,}")
        console.print(f"  median error {errs[len(errs) // 2]:+.1%}, worst {max(errs, key=abs):+.1%}")


