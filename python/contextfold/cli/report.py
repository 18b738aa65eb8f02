"""``contextfold report``: where the tokens go across one conversation, as text or one HTML page."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Annotated, Optional

import typer

from contextfold import report as rep
from contextfold.cli.app import (
    EPILOG,
    EXIT_BAD_INPUT,
    EXIT_MISSING_TOOL,
    EXIT_USAGE,
    MaxBytesOpt,
    ModelOpt,
    ProviderOpt,
    StrictOpt,
    app,
    stderr_console,
    stdout_console,
)
from contextfold.cli.documents import failure_of, open_input, read_single, say_unknown_model
from contextfold.cli.output import clean, is_stdout, write_text
from contextfold.errors import UnknownModelWarning
from contextfold.inputs import DocumentTooLarge, decode_json, read_request


@app.command(
    epilog="Example: [bold]contextfold report examples/swe-trajectory.json -o report.html --png chart.png[/]\n\n" + EPILOG
)
def report(
    file: Annotated[str, typer.Argument(help="JSON file (or JSONL: see --line), or '-' for stdin.")],
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Write a self-contained HTML report here ('-': stdout; else: text on stdout).")] = None,
    png: Annotated[Optional[Path], typer.Option("--png", help="Also write the chart as a PNG (needs chromium).")] = None,
    provider: ProviderOpt = None,
    model: ModelOpt = None,
    budget: Annotated[Optional[int], typer.Option(min=1, help="Target tokens of the compaction plan, what Compactor.compact is run at (default: its own budget when the history is past it, else half the estimate).")] = None,
    window: Annotated[Optional[int], typer.Option(min=1, help="Context window in tokens (default: from the model name).")] = None,
    line: Annotated[int, typer.Option(min=1, help="Which line of a JSONL file to report (1-based).")] = 1,
    top: Annotated[int, typer.Option(min=0, help="How many of the largest messages to list.")] = 8,
    tool_servers: Annotated[Optional[Path], typer.Option("--tool-servers", help="JSON file mapping tool names to their MCP server ({\"search\": \"web\"}), for tools whose names do not say it (mcp__SERVER__tool names do).")] = None,
    max_bytes: MaxBytesOpt = None,
    strict: StrictOpt = False,
) -> None:
    """Where the tokens go across one conversation: a chart stacked by kind message by message,
    the biggest messages, duplicated tool outputs, the schema cost of each tool by MCP server
    (unused tools flagged), the context window and the gate line, and the compaction plan at a
    budget. Text on stdout, or one HTML file (-o) with no network use."""
    say_unknown_model(model, strict=strict)
    servers = _tool_servers(tool_servers)
    src = open_input(file, None, max_bytes)
    if src.jsonl:
        data: bytes | None = b""
        for n, data in enumerate(src.stream, start=1):
            if n == line:
                break
        else:
            src.stream.close()
            stderr_console().print(f"error: {clean(src.name)} has no line {line}", markup=False)
            raise typer.Exit(EXIT_USAGE)
        src.stream.close()
        try:
            if data is None:
                raise DocumentTooLarge(src.stream.cap)
            req = read_request(decode_json(data), provider=provider, model=model)
        except (ValueError, TypeError, RecursionError) as e:
            stderr_console().print(failure_of(e, line).describe(src.name), markup=False)
            raise typer.Exit(EXIT_BAD_INPUT) from None
    else:
        if line != 1:
            # (Ignored, the report was of the one document while the user asked for another.)
            src.stream.close()
            stderr_console().print(f"error: {clean(src.name)} is one JSON document, not JSONL: it has no line {line}",
                                   markup=False)
            raise typer.Exit(EXIT_USAGE)
        req = read_single(src, provider=provider, model=model)
    if model is None:
        say_unknown_model(req.model, strict=strict)
    try:
        with warnings.catch_warnings():
            # Said once above, on stderr.
            warnings.simplefilter("ignore", UnknownModelWarning)
            report_data = rep.analyze(req, budget=budget, window=window, top=top, tool_servers=servers)
    except (ValueError, TypeError, RecursionError) as e:
        stderr_console().print(failure_of(e, None).describe(src.name), markup=False)
        raise typer.Exit(EXIT_BAD_INPUT) from None
    if output is None and png is None:
        rep.print_text(report_data, src.name, stdout_console())
        return
    if output is not None:
        size = write_text(output, rep.render_html(report_data, title=src.name))
        if not is_stdout(output):
            stderr_console().print(clean(f"wrote {output} ({size:,} bytes)"), markup=False)
    if png is not None:
        try:
            rep.write_png(report_data, png)
        except rep.BrowserMissing as e:  # also BrowserFailed: it ran but made no PNG
            stderr_console().print(f"error: {clean(e)}", markup=False)
            raise typer.Exit(EXIT_MISSING_TOOL) from None
        except OSError as e:
            stderr_console().print(f"error: cannot write {clean(png)}: {clean(e.strerror or e)}", markup=False)
            raise typer.Exit(EXIT_USAGE) from None
        stderr_console().print(clean(f"wrote {png}"), markup=False)


def _tool_servers(path: Path | None) -> dict[str, str] | None:
    """The ``--tool-servers`` mapping (a JSON object of tool name -> server name)."""
    if path is None:
        return None
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        stderr_console().print(clean(f"error: --tool-servers {path}: {e}"), markup=False)
        raise typer.Exit(EXIT_USAGE) from None
    if not isinstance(doc, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in doc.items()):
        stderr_console().print(clean(f"error: --tool-servers {path}: expected a JSON object of tool name -> server name"),
                               markup=False)
        raise typer.Exit(EXIT_USAGE)
    return doc
