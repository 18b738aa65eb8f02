"""``contextfold report``: where the tokens go across one conversation, as text or one HTML page."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from contextfold import report as rep
from contextfold.cli.app import EPILOG, EXIT_BAD_INPUT, EXIT_MISSING_TOOL, EXIT_USAGE, ModelOpt, ProviderOpt, app, stderr_console, stdout_console
from contextfold.cli.documents import failure_of, open_input, read_single
from contextfold.inputs import read_request


@app.command(
    epilog="Example: [bold]contextfold report examples/swe-trajectory.json -o report.html --png chart.png[/]\n\n" + EPILOG
)
def report(
    file: Annotated[str, typer.Argument(help="JSON file (or JSONL: see --line), or '-' for stdin.")],
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Write a self-contained HTML report here (else: text on stdout).")] = None,
    png: Annotated[Optional[Path], typer.Option("--png", help="Also write the chart as a PNG (needs chromium).")] = None,
    provider: ProviderOpt = None,
    model: ModelOpt = None,
    budget: Annotated[Optional[int], typer.Option(help="Target tokens of the compaction plan, what Compactor.compact is run at (default: its own budget when the history is past it, else half the estimate).")] = None,
    window: Annotated[Optional[int], typer.Option(help="Context window in tokens (default: from the model name).")] = None,
    line: Annotated[int, typer.Option(help="Which line of a JSONL file to report (1-based).")] = 1,
    top: Annotated[int, typer.Option(help="How many of the largest messages to list.")] = 8,
) -> None:
    """Where the tokens go across one conversation: a chart stacked by kind message by message,
    the biggest messages, duplicated tool outputs, the context window and the gate line, and
    the compaction plan at a budget. Text on stdout, or one HTML file (-o) with no network use."""
    src = open_input(file, None)
    if src.jsonl:
        for n, text in enumerate(src.stream, start=1):
            if n == line:
                break
        else:
            stderr_console().print(f"[red]error:[/] {src.name} has no line {line}")
            raise typer.Exit(EXIT_USAGE)
        src.stream.close()
        try:
            req = read_request(json.loads(text), provider=provider, model=model)
        except (ValueError, TypeError) as e:
            stderr_console().print(failure_of(e, line).describe(src.name), markup=False)
            raise typer.Exit(EXIT_BAD_INPUT) from None
    else:
        req = read_single(src, provider=provider, model=model)
    try:
        data = rep.analyze(req, budget=budget, window=window, top=top)
    except (ValueError, TypeError) as e:
        stderr_console().print(failure_of(e, None).describe(src.name), markup=False)
        raise typer.Exit(EXIT_BAD_INPUT) from None
    if output is None and png is None:
        rep.print_text(data, src.name, stdout_console())
        return
    if output is not None:
        output.write_text(rep.render_html(data, title=src.name), encoding="utf-8")
        stdout_console().print(f"wrote {output} ({output.stat().st_size:,} bytes)")
    if png is not None:
        try:
            rep.write_png(data, png)
        except rep.BrowserMissing as e:
            stderr_console().print(f"[red]error:[/] {e}")
            raise typer.Exit(EXIT_MISSING_TOOL) from None
        stdout_console().print(f"wrote {png}")


