"""The ``contextfold`` command: where a history's tokens go, exact counts, compaction, an HTML report, benchmarks.

Every command reads FILE: a history (JSON list of messages), a request body (OpenAI chat or
Responses, Anthropic, Gemini, with their ``tools`` / ``system``), or JSONL of either, one per
line (read line by line, priced on a process pool, output in input order). ``-`` reads stdin.

Exit codes: 0 success; 1 some input could not be read (bad JSON, invalid message: each is
reported on stderr with file, line, message index and field, and the run goes on unless
``--fail-fast``); 2 wrong usage (unknown option, missing file); 3 unknown model (``count``
needs a model whose tokenizer is public); 4 a tool the command needs is missing (``--png``
without chromium, ``bench`` without pytest-benchmark).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.console import Console

import contextfold
from contextfold import report as rep
from contextfold.inputs import InputError, Request, Source, open_source, read_request
from contextfold.request import breakdown_of

EXIT_OK = 0
EXIT_BAD_INPUT = 1
EXIT_USAGE = 2
EXIT_UNKNOWN_MODEL = 3
EXIT_MISSING_TOOL = 4

EPILOG = (
    "Exit codes: 0 ok; 1 some input unreadable (reported with file, line, message index and "
    "field); 2 usage; 3 unknown model; 4 a needed tool is missing."
)

app = typer.Typer(
    name="contextfold",
    help="Where an LLM agent's context goes: estimate, count, report and benchmark token use.\n\n"
    "FILE is a JSON history (list of messages), a request body (OpenAI chat / Responses, "
    "Anthropic, Gemini) or JSONL of either; '-' reads stdin.",
    epilog=EPILOG,
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode="rich",
    pretty_exceptions_enable=False,
)

ProviderOpt = Annotated[
    Optional[str],
    typer.Option("--provider", "-p", help=f"Force the wire format / pricing: {', '.join(contextfold.PROVIDERS)} (default: detected)."),
]
ModelOpt = Annotated[Optional[str], typer.Option("--model", "-m", help="Model name: picks tokenizer, image rules and context window.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Machine output: one JSON object (per input line for JSONL).")]
JobsOpt = Annotated[int, typer.Option("--jobs", "-j", min=0, help="Worker processes for JSONL (0, the default: the CPU count; 1: no pool).")]
FailFastOpt = Annotated[bool, typer.Option("--fail-fast", help="Stop at the first unreadable line (exit 1).")]
JsonlOpt = Annotated[Optional[bool], typer.Option("--jsonl/--no-jsonl", help="Force JSONL / single-document reading (default: detected).")]


def _stdout() -> Console:
    return Console(soft_wrap=True, highlight=False)


def _stderr() -> Console:
    return Console(stderr=True, highlight=False, soft_wrap=True)


# --- one document -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Failure:
    """Why one input (a line of JSONL, or the whole file) could not be processed."""

    line: int | None
    index: int | None
    field: str | None
    message: str

    def describe(self, name: str) -> str:
        where = name + (f":{self.line}" if self.line is not None else "")
        parts = []
        if self.index is not None:
            parts.append(f"message {self.index}")
        if self.field:
            parts.append(f"field {self.field!r}")
        return f"{where}: " + (", ".join(parts) + ": " if parts else "") + self.message

    def to_dict(self) -> dict[str, Any]:
        return {"line": self.line, "index": self.index, "field": self.field, "error": self.message}


def _failure(e: Exception, line: int | None) -> Failure:
    if isinstance(e, contextfold.InvalidMessageError):
        return Failure(line, e.index, e.field or None, e.reason)
    if isinstance(e, InputError):
        return Failure(line, e.index, e.field, str(e))
    if isinstance(e, json.JSONDecodeError):
        return Failure(line, None, None, f"invalid JSON: {e.msg} at column {e.colno}")
    return Failure(line, None, None, f"{type(e).__name__}: {e}")


def _estimate_doc(req: Request, *, per_message: bool = False) -> dict[str, Any]:
    """The `estimate --json` object of one request (one breakdown; per message on request)."""
    # A body is priced with what its settings add (the core's body reader, as estimate_request).
    b = (breakdown_of(req.body) if req.body is not None else contextfold.breakdown(req.messages, **req.options())).to_dict()
    del b["request_overhead"]
    if not per_message:
        del b["per_message"]
    return {"provider": req.provider, "model": req.model, "wire": req.wire, "messages": len(req.messages), **b}


def _count_messages(req: Request) -> list[Any]:
    """OpenAI chat messages of a request: a top-level system prompt becomes the first message."""
    if isinstance(req.system, str) and req.system:
        return [{"role": "system", "content": req.system}, *req.messages]
    return req.messages


def _count_doc(req: Request) -> dict[str, Any]:
    assert req.model is not None
    # `count` renders OpenAI chat's `response_format` (a Responses `text` format is not its shape).
    rf = req.response_format if req.wire == "openai-chat" else None
    total = contextfold.count(_count_messages(req), model=req.model, tools=req.tools, response_format=rf)
    return {"model": req.model, "encoding": contextfold.encoding_for(req.model), "messages": len(req.messages), "total": total}


_OPS: dict[str, Callable[[Request], dict[str, Any]]] = {"estimate": _estimate_doc, "count": _count_doc}


def _process(op: str, text: str, line: int | None, provider: str | None, model: str | None) -> dict[str, Any] | Failure:
    try:
        req = read_request(json.loads(text), provider=provider, model=model)
        return _OPS[op](req)
    except contextfold.UnknownModelError:
        raise
    except (ValueError, TypeError) as e:
        return _failure(e, line)


def _process_chunk(
    op: str, chunk: list[tuple[int, str]], provider: str | None, model: str | None
) -> list[tuple[int, dict[str, Any] | Failure]]:
    """Worker task: a run of consecutive JSONL lines (picklable, top level for the pool)."""
    return [(n, _process(op, text, n, provider, model)) for n, text in chunk]


# --- JSONL: a pool over lines, order kept -----------------------------------------------------

_CHUNK_BYTES = 1 << 20
_CHUNK_LINES = 64


def _chunks(stream: Iterable[str], progress: Callable[[int], None]) -> Iterator[list[tuple[int, str]]]:
    chunk: list[tuple[int, str]] = []
    size = 0
    for n, text in enumerate(stream, start=1):
        progress(len(text))
        if not text.strip():
            continue
        chunk.append((n, text))
        size += len(text)
        if size >= _CHUNK_BYTES or len(chunk) >= _CHUNK_LINES:
            yield chunk
            chunk, size = [], 0
    if chunk:
        yield chunk


def _run_lines(
    op: str, src: Source, *, provider: str | None, model: str | None, jobs: int, advance: Callable[[int], None]
) -> Iterator[tuple[int, dict[str, Any] | Failure]]:
    """Results of every non-blank line, in input order. Lines are read as the pool drains, so
    at most a few chunks per worker are in memory at once."""
    chunks = _chunks(src.stream, advance)
    if jobs <= 1:
        for chunk in chunks:
            yield from _process_chunk(op, chunk, provider, model)
        return
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        pending: deque[Future[list[tuple[int, dict[str, Any] | Failure]]]] = deque()
        for chunk in chunks:
            pending.append(pool.submit(_process_chunk, op, chunk, provider, model))
            while len(pending) >= 4 * jobs:
                yield from pending.popleft().result()
        while pending:
            yield from pending.popleft().result()


class _Progress:
    """A rich progress bar on stderr (lines, rate, ETA by bytes) only when stderr is a terminal."""

    def __init__(self, src: Source) -> None:
        self.bar: Any = None
        self.task: Any = None
        self.lines = 0
        if not sys.stderr.isatty():
            return
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

        self.bar = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            TextColumn("{task.fields[lines]:,} lines"),
            TextColumn("{task.fields[rate]}"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=_stderr(),
            transient=True,
            # stdout carries the results (--json): never fold it into the live display.
            redirect_stdout=False,
            redirect_stderr=False,
        )
        self.task = self.bar.add_task(src.name, total=src.size, lines=0, rate="")

    def __enter__(self) -> _Progress:
        if self.bar is not None:
            self.bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()

    def advance(self, nbytes: int) -> None:
        if self.bar is None:
            return
        self.bar.update(self.task, advance=nbytes)

    def done_line(self) -> None:
        self.lines += 1
        if self.bar is None:
            return
        elapsed = self.bar.tasks[0].elapsed or 0.0
        rate = f"{self.lines / elapsed:,.0f} lines/s" if elapsed > 0 else ""
        self.bar.update(self.task, lines=self.lines, rate=rate)


def _jobs(jobs: int | None) -> int:
    return jobs if jobs else max(1, os.cpu_count() or 1)


def _open(file: str, jsonl: bool | None) -> Source:
    try:
        return open_source(file, jsonl=jsonl)
    except OSError as e:
        _stderr().print(f"[red]error:[/] cannot read {file}: {e.strerror or e}")
        raise typer.Exit(EXIT_USAGE) from None


def _single(src: Source, *, provider: str | None, model: str | None) -> Request:
    """The one document of a non-JSONL input, or exit 1 naming what is wrong."""
    try:
        return read_request(json.loads(src.stream.read()), provider=provider, model=model)
    except (ValueError, TypeError) as e:
        _stderr().print(_failure(e, None).describe(src.name), markup=False)
        raise typer.Exit(EXIT_BAD_INPUT) from None
    finally:
        src.stream.close()


def _corpus(
    op: str,
    src: Source,
    *,
    provider: str | None,
    model: str | None,
    jobs: int | None,
    fail_fast: bool,
    as_json: bool,
    on_result: Callable[[int, dict[str, Any]], None],
) -> int:
    """Run ``op`` over every line; print failures as they come and a summary at the end."""
    err = _stderr()
    failures: list[Failure] = []
    ok = 0
    with _Progress(src) as progress:
        try:
            for n, res in _run_lines(op, src, provider=provider, model=model, jobs=_jobs(jobs), advance=progress.advance):
                progress.done_line()
                if isinstance(res, Failure):
                    failures.append(res)
                    if progress.bar is not None:
                        progress.bar.console.print(res.describe(src.name), markup=False)
                    else:
                        err.print(res.describe(src.name), markup=False)
                    if as_json:
                        print(json.dumps(res.to_dict()), flush=False)
                    if fail_fast:
                        break
                    continue
                ok += 1
                if as_json:
                    print(json.dumps({"line": n, **res}))
                on_result(n, res)
        finally:
            src.stream.close()
    if failures:
        err.print(
            f"[bold red]{len(failures)} of {ok + len(failures)} lines failed[/]"
            + (" (stopped at the first: --fail-fast)" if fail_fast else "")
            + f"; first at line {failures[0].line}."
        )
        return EXIT_BAD_INPUT
    return EXIT_OK


# --- estimate --------------------------------------------------------------------------------


def _print_breakdown(req: Request, name: str, top: int) -> None:
    b = contextfold.breakdown(req.messages, **req.options())
    biggest, previews = rep.largest(b, req.messages, top)
    rep.print_breakdown(req, b, name, _stdout(), top=biggest, previews=previews)


@app.command(
    epilog="Example: [bold]contextfold estimate examples/swe-trajectory.json[/]  ·  "
    "[bold]contextfold estimate corpus.jsonl --json > tokens.jsonl[/]\n\n" + EPILOG
)
def estimate(
    file: Annotated[str, typer.Argument(help="JSON / JSONL file, or '-' for stdin.")],
    provider: ProviderOpt = None,
    model: ModelOpt = None,
    as_json: JsonOpt = False,
    top: Annotated[int, typer.Option(help="List the N largest messages (single history).")] = 5,
    jobs: JobsOpt = 0,
    fail_fast: FailFastOpt = False,
    jsonl: JsonlOpt = None,
) -> None:
    """Estimated prompt tokens, by role and by kind (text, tool calls, tool outputs, images,
    reasoning, media, tool schemas, overhead), and the parts priced by an assumption."""
    src = _open(file, jsonl)
    if not src.jsonl:
        req = _single(src, provider=provider, model=model)
        try:
            if as_json:
                print(json.dumps(_estimate_doc(req, per_message=True)))
            else:
                _print_breakdown(req, src.name, top)
        except (ValueError, TypeError) as e:
            _stderr().print(_failure(e, None).describe(src.name), markup=False)
            raise typer.Exit(EXIT_BAD_INPUT) from None
        return
    totals: list[int] = []
    by_kind: dict[str, int] = {}
    by_role: dict[str, int] = {}

    def add(_: int, res: dict[str, Any]) -> None:
        totals.append(res["total"])
        for k, v in res["by_kind"].items():
            by_kind[k] = by_kind.get(k, 0) + v
        for k, v in res["by_role"].items():
            by_role[k] = by_role.get(k, 0) + v

    code = _corpus("estimate", src, provider=provider, model=model, jobs=jobs, fail_fast=fail_fast, as_json=as_json, on_result=add)
    if not as_json and totals:
        out = _stdout()
        grand = sum(totals)
        out.print(
            f"[bold]{src.name}[/]: {len(totals):,} histories, {grand:,} estimated prompt tokens "
            f"(per history: median {statistics.median(totals):,.0f}, max {max(totals):,})"
        )
        out.print(rep.kind_table(by_kind, grand))
        out.print(rep.role_table(by_role, grand))
    raise typer.Exit(code)


# --- count -----------------------------------------------------------------------------------


@app.command(
    epilog="Example: [bold]contextfold count request.json --model gpt-4o[/]  ·  "
    "[bold]cat corpus.jsonl | contextfold count - -m gpt-4o-mini --json[/]\n\n" + EPILOG
)
def count(
    file: Annotated[str, typer.Argument(help="JSON / JSONL file, or '-' for stdin.")],
    model: Annotated[Optional[str], typer.Option("--model", "-m", help="OpenAI model whose public tokenizer counts (default: the body's `model`).")] = None,
    as_json: JsonOpt = False,
    jobs: JobsOpt = 0,
    fail_fast: FailFastOpt = False,
    jsonl: JsonlOpt = None,
) -> None:
    """Exact prompt tokens with the model's own tokenizer (OpenAI models: tiktoken encodings,
    offline), tools rendered as OpenAI bills them. Other models: exit 3 naming the model."""
    src = _open(file, jsonl)

    def check(m: str | None) -> None:
        if m is None:
            return
        try:
            contextfold.encoding_for(m)
        except contextfold.UnknownModelError:
            _stderr().print(
                f"[red]error:[/] no public tokenizer for model {m!r}: exact counts exist for OpenAI models "
                f"only; use [bold]contextfold estimate --model {m}[/] for an estimate."
            )
            raise typer.Exit(EXIT_UNKNOWN_MODEL) from None

    check(model)
    if not src.jsonl:
        req = _single(src, provider="openai", model=model)
        if req.model is None:
            _stderr().print("[red]error:[/] count needs --model (the body names none)")
            raise typer.Exit(EXIT_USAGE)
        check(req.model)
        try:
            res = _count_doc(req)
        except (ValueError, TypeError) as e:
            _stderr().print(_failure(e, None).describe(src.name), markup=False)
            raise typer.Exit(EXIT_BAD_INPUT) from None
        if as_json:
            print(json.dumps(res))
        else:
            _stdout().print(f"{res['total']:,} prompt tokens ({res['model']}, {res['encoding']}, {res['messages']:,} messages)")
        return
    totals: list[int] = []
    try:
        code = _corpus(
            "count", src, provider="openai", model=model, jobs=jobs, fail_fast=fail_fast, as_json=as_json,
            on_result=lambda _n, r: totals.append(r["total"]),
        )
    except contextfold.UnknownModelError as e:
        _stderr().print(f"[red]error:[/] {e}; exact counts exist for OpenAI models only", markup=True)
        raise typer.Exit(EXIT_UNKNOWN_MODEL) from None
    if not as_json and totals:
        _stdout().print(f"{src.name}: {len(totals):,} requests, {sum(totals):,} prompt tokens (median {statistics.median(totals):,.0f})")
    raise typer.Exit(code)


# --- report ----------------------------------------------------------------------------------


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
    src = _open(file, None)
    if src.jsonl:
        for n, text in enumerate(src.stream, start=1):
            if n == line:
                break
        else:
            _stderr().print(f"[red]error:[/] {src.name} has no line {line}")
            raise typer.Exit(EXIT_USAGE)
        src.stream.close()
        try:
            req = read_request(json.loads(text), provider=provider, model=model)
        except (ValueError, TypeError) as e:
            _stderr().print(_failure(e, line).describe(src.name), markup=False)
            raise typer.Exit(EXIT_BAD_INPUT) from None
    else:
        req = _single(src, provider=provider, model=model)
    try:
        data = rep.analyze(req, budget=budget, window=window, top=top)
    except (ValueError, TypeError) as e:
        _stderr().print(_failure(e, None).describe(src.name), markup=False)
        raise typer.Exit(EXIT_BAD_INPUT) from None
    if output is None and png is None:
        rep.print_text(data, src.name, _stdout())
        return
    if output is not None:
        output.write_text(rep.render_html(data, title=src.name), encoding="utf-8")
        _stdout().print(f"wrote {output} ({output.stat().st_size:,} bytes)")
    if png is not None:
        try:
            rep.write_png(data, png)
        except rep.BrowserMissing as e:
            _stderr().print(f"[red]error:[/] {e}")
            raise typer.Exit(EXIT_MISSING_TOOL) from None
        _stdout().print(f"wrote {png}")


# --- bench, version --------------------------------------------------------------------------


# --- compact ---------------------------------------------------------------------------------

# Where each wire format keeps its history inside a request body.
_HISTORY_KEY = {"openai-chat": "messages", "anthropic": "messages", "openai-responses": "input", "gemini": "contents"}


def _summarizer(spec: str) -> Any:
    """``extractive`` or ``PROVIDER:MODEL`` (openai, anthropic, gemini, ollama) as a summarizer."""
    if spec == "extractive":
        return contextfold.ExtractiveSummarizer()
    name, sep, model = spec.partition(":")
    if not sep or not model or name not in ("openai", "anthropic", "gemini", "ollama"):
        raise typer.BadParameter(
            f"expected 'extractive' or PROVIDER:MODEL with PROVIDER one of openai, anthropic, gemini, ollama; got {spec!r}",
            param_hint="--summarizer",
        )
    return contextfold.LLMSummarizer(name, model)


@app.command(
    epilog="Example: [bold]contextfold compact examples/swe-trajectory.json --budget 8000 -o compacted.json[/]  ·  "
    "[bold]contextfold compact body.json --budget 20000 --summarizer openai:gpt-4.1-mini -o body.small.json[/]\n\n"
    + EPILOG
)
def compact(
    file: Annotated[str, typer.Argument(help="JSON history or request body, or '-' for stdin (one document).")],
    budget: Annotated[int, typer.Option("--budget", "-b", min=1, help="Target prompt tokens after compaction (system and tools included).")],
    output: Annotated[Optional[Path], typer.Option("--output", "-o", help="Write the compacted history / body here (same wire format as the input).")] = None,
    strategy: Annotated[str, typer.Option(help="mask (prune old tool output only), summarize (head + summary + tail) or hybrid (mask, then summarize if needed).")] = "hybrid",
    summarizer: Annotated[str, typer.Option(help="extractive (offline, default) or PROVIDER:MODEL, e.g. openai:gpt-4.1-mini, anthropic:claude-haiku-4-5, ollama:llama3.2 (needs the SDK extra and its API key).")] = "extractive",
    focus: Annotated[Optional[str], typer.Option(help="What the summary should keep (like /compact <focus>).")] = None,
    provider: ProviderOpt = None,
    model: ModelOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Fold the middle of a history into a summary (and mask old tool output) to fit a token
    budget; write the new history in the input's own wire format and show what changed."""
    if strategy not in ("mask", "summarize", "hybrid"):
        raise typer.BadParameter(f"expected mask, summarize or hybrid; got {strategy!r}", param_hint="--strategy")
    chosen = _summarizer(summarizer)
    src = _open(file, None)
    if src.jsonl:
        _stderr().print("[red]error:[/] compact takes one document; for a JSONL corpus use the Python API (see the Ray example)")
        raise typer.Exit(EXIT_USAGE)
    raw = src.stream.read()
    src.stream.close()
    try:
        doc = json.loads(raw)
        req = read_request(doc, provider=provider, model=model)
        compactor = contextfold.Compactor(
            provider=req.provider, model=req.model, budget=budget, strategy=strategy,  # type: ignore[arg-type]
            summarizer=chosen, system=req.system, tools=req.tools, response_format=req.response_format,
            instructions=focus,
        )
        result = compactor.compact(req.messages)
    except contextfold.CompactionError as e:
        _stderr().print(f"[red]error:[/] {e}", markup=True)
        raise typer.Exit(EXIT_BAD_INPUT) from None
    except (ValueError, TypeError) as e:
        _stderr().print(_failure(e, None).describe(src.name), markup=False)
        raise typer.Exit(EXIT_BAD_INPUT) from None
    if isinstance(doc, dict) and req.wire in _HISTORY_KEY:
        body: Any = dict(doc, **{_HISTORY_KEY[req.wire]: result.messages})
    else:
        body = result.messages
    if output is not None:
        output.write_text(json.dumps(body, ensure_ascii=False))
    folded = list(result.removed)
    summary_doc = {
        "messages_before": len(req.messages),
        "messages_after": len(result.messages),
        "tokens_before": result.tokens_before,
        "tokens_after": result.tokens_after,
        "budget": budget,
        "strategy_used": result.strategy_used,
        "fallback_used": result.fallback_used,
        "folded": folded,
        "pruned": [{"index": p.index, "kind": p.kind, "slot": p.slot, "tokens_saved": p.tokens_saved} for p in result.pruned],
        "reason": result.reason,
        "notes": list(result.notes),
        "output": str(output) if output is not None else None,
    }
    if as_json:
        print(json.dumps(summary_doc))
        return
    out = _stdout()
    out.print(f"[bold]{src.name}[/] ({req.wire}, {req.provider}{', ' + req.model if req.model else ''}): budget {budget:,} tokens")
    for text in rep.compaction_lines(result, len(req.messages)):
        out.print(text, markup=False)
    if not result.changed:
        return
    if output is not None:
        out.print(f"wrote {output}")
    else:
        out.print("(no --output: nothing written)")


@app.command(epilog="Example: [bold]contextfold bench --quick[/]\n\n" + EPILOG)
def bench(
    quick: Annotated[bool, typer.Option("--quick", help="Small workloads only (1k synthetic, a few real histories).")] = False,
    as_json: JsonOpt = False,
    benches: Annotated[Optional[Path], typer.Option(help="The benches/ directory of a source checkout (default: ./benches).")] = None,
    markdown: Annotated[bool, typer.Option("--markdown", help="Print the table as Markdown (as in the README).")] = False,
) -> None:
    """Side-by-side speed of contextfold, the pure-Python references and the libraries people
    use (LangChain, LiteLLM, tiktoken), ratios on the same inputs in one run. Peers that are not
    installed are skipped with a notice (pip install 'contextfold[bench]')."""
    from contextfold import _bench

    try:
        import pytest_benchmark  # noqa: F401
    except ImportError:
        _stderr().print("[red]error:[/] bench needs pytest-benchmark: pip install 'contextfold[bench]'")
        raise typer.Exit(EXIT_MISSING_TOOL) from None
    try:
        result = _bench.run(quick=quick, benches=benches, notice=lambda s: _stderr().print(s, style="yellow", markup=False))
    except FileNotFoundError as e:
        _stderr().print(f"[red]error:[/] {e}")
        raise typer.Exit(EXIT_USAGE) from None
    if as_json:
        print(json.dumps(result))
    elif markdown:
        print(_bench.markdown(result))
    else:
        _bench.print_table(result, Console(soft_wrap=True, highlight=False, width=max(_stdout().width, 110)))


@app.command(epilog="Example: [bold]contextfold version[/]")
def version() -> None:
    """Print the version."""
    print(contextfold.__version__)


def main(argv: list[str] | None = None) -> int:
    """Run the command line with ``argv`` (default: ``sys.argv[1:]``); returns the exit code."""
    try:
        app(args=argv, prog_name="contextfold")
    except SystemExit as e:
        code = e.code
        return code if isinstance(code, int) else (0 if code is None else EXIT_USAGE)
    return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main())
