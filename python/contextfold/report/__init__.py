"""The token report of one conversation: as text for a terminal, or one self-contained HTML page.

The page has no script and loads nothing: its charts are inline SVG drawn here, so it opens
offline in any browser and can be attached to a bug report. ``write_png`` screenshots the
growth chart with a headless Chromium.

One module per job: ``analysis`` (what the report shows), ``text`` (the terminal), ``svg`` (the
charts), ``html`` (the page), ``png`` (the screenshot).
"""

from __future__ import annotations

from contextfold.report.analysis import (
    Duplicate,
    Plan,
    ReportData,
    ToolCost,
    ToolSchemas,
    analyze,
    compact_request,
    largest,
    preview,
    tool_schemas,
)
from contextfold.report.html import render_html
from contextfold.report.png import BrowserFailed, BrowserMissing, find_browser, screenshot, write_png
from contextfold.report.svg import (
    COLORS,
    GATE_COLOR,
    PLAN_COLORS,
    TOOL_COLORS,
    WINDOW_COLOR,
    growth_svg,
    per_message_svg,
    tools_svg,
)
from contextfold.report.text import (
    compaction_lines,
    kind_table,
    plan_lines,
    print_breakdown,
    print_text,
    role_table,
    tool_summary,
    tool_table,
)

__all__ = [
    "COLORS",
    "GATE_COLOR",
    "PLAN_COLORS",
    "TOOL_COLORS",
    "WINDOW_COLOR",
    "BrowserFailed",
    "BrowserMissing",
    "Duplicate",
    "Plan",
    "ReportData",
    "ToolCost",
    "ToolSchemas",
    "analyze",
    "compact_request",
    "compaction_lines",
    "find_browser",
    "growth_svg",
    "kind_table",
    "largest",
    "per_message_svg",
    "plan_lines",
    "preview",
    "print_breakdown",
    "print_text",
    "render_html",
    "role_table",
    "screenshot",
    "tool_schemas",
    "tool_summary",
    "tool_table",
    "tools_svg",
    "write_png",
]
