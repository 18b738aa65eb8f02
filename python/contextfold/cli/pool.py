"""JSONL: every line priced on a process pool (or in this process with ``-j 1``), results in
input order, failures reported as they come and the run going on."""

from __future__ import annotations

import json
import os
import sys
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any

import contextfold
from contextfold.cli.app import EXIT_BAD_INPUT, EXIT_OK, stderr_console
from contextfold.cli.documents import Failure, failure_of
from contextfold.inputs import DocumentTooLarge, Request, Source, decode_json, read_request

#: What a command computes for one document (top level, so the pool can pickle it by name).
Op = Callable[[Request], dict[str, Any]]


def _process(op: Op, data: bytes | None, line: int, provider: str | None, model: str | None, cap: int) -> dict[str, Any] | Failure:
    """One JSONL line: its result, or a Failure for anything wrong with it (invalid UTF-8 or
    JSON, nesting too deep, a line past the size cap, a bad message), so the run goes on."""
    try:
        if data is None:
            raise DocumentTooLarge(cap)
        req = read_request(decode_json(data), provider=provider, model=model)
        return op(req)
    except contextfold.UnknownModelError:
        raise
    except Exception as e:  # noqa: BLE001 - one bad line is reported, never ends the run
        return failure_of(e, line)


def _process_chunk(
    op: Op, chunk: list[tuple[int, bytes | None]], provider: str | None, model: str | None, cap: int
) -> list[tuple[int, dict[str, Any] | Failure]]:
    """Worker task: a run of consecutive JSONL lines (picklable, top level for the pool)."""
    return [(n, _process(op, data, n, provider, model, cap)) for n, data in chunk]


# --- JSONL: a pool over lines, order kept -----------------------------------------------------

_CHUNK_BYTES = 1 << 20
_CHUNK_LINES = 64


def _chunks(stream: Iterable[bytes | None], progress: Callable[[int], None], cap: int) -> Iterator[list[tuple[int, bytes | None]]]:
    chunk: list[tuple[int, bytes | None]] = []
    size = 0
    for n, data in enumerate(stream, start=1):
        progress(cap if data is None else len(data))
        if data is not None and not data.strip():
            continue
        chunk.append((n, data))
        size += 0 if data is None else len(data)
        if size >= _CHUNK_BYTES or len(chunk) >= _CHUNK_LINES:
            yield chunk
            chunk, size = [], 0
    if chunk:
        yield chunk


def _run_lines(
    op: Op, src: Source, *, provider: str | None, model: str | None, jobs: int, advance: Callable[[int], None]
) -> Iterator[tuple[int, dict[str, Any] | Failure]]:
    """Results of every non-blank line, in input order. Lines are read as the pool drains, so
    at most a few chunks per worker are in memory at once."""
    cap = src.stream.cap
    chunks = _chunks(src.stream, advance, cap)
    if jobs <= 1:
        for chunk in chunks:
            yield from _process_chunk(op, chunk, provider, model, cap)
        return
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        pending: deque[Future[list[tuple[int, dict[str, Any] | Failure]]]] = deque()
        for chunk in chunks:
            pending.append(pool.submit(_process_chunk, op, chunk, provider, model, cap))
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
            console=stderr_console(),
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


def run_corpus(
    op: Op,
    src: Source,
    *,
    provider: str | None,
    model: str | None,
    jobs: int | None,
    fail_fast: bool,
    as_json: bool,
    on_result: Callable[[int, dict[str, Any]], None],
) -> int:
    """Run ``op`` over every line (``op`` is a top-level function: the pool pickles it by name); print failures as they come and a summary at the end."""
    err = stderr_console()
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
            f"[bold red]{len(failures)} of {ok + len(failures)} lines failed[/]"  # numbers only: safe as markup
            + (" (stopped at the first: --fail-fast)" if fail_fast else "")
            + f"; first at line {failures[0].line}."
        )
        return EXIT_BAD_INPUT
    return EXIT_OK


