"""``contextfold count``: exact prompt tokens with an OpenAI model's public tokenizer."""

from __future__ import annotations

import json
import statistics
from typing import Annotated, Any, Optional

import typer

import contextfold
from contextfold.cli.app import (
    EPILOG,
    EXIT_BAD_INPUT,
    EXIT_UNKNOWN_MODEL,
    EXIT_USAGE,
    FailFastOpt,
    JobsOpt,
    JsonlOpt,
    JsonOpt,
    MaxBytesOpt,
    app,
    stderr_console,
    stdout_console,
)
from contextfold.cli.documents import failure_of, open_input, read_single
from contextfold.cli.output import clean
from contextfold.cli.pool import run_corpus
from contextfold.inputs import Request


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
    max_bytes: MaxBytesOpt = None,
) -> None:
    """Exact prompt tokens with the model's own tokenizer (OpenAI models: tiktoken encodings,
    offline), tools rendered as OpenAI bills them. Other models: exit 3 naming the model."""
    src = open_input(file, jsonl, max_bytes)

    def check(m: str | None) -> None:
        if m is None:
            return
        try:
            contextfold.encoding_for(m)
        except contextfold.UnknownModelError:
            stderr_console().print(
                clean(f"error: no public tokenizer for model {m!r}: exact counts exist for OpenAI models "
                      f"only; use `contextfold estimate --model {m}` for an estimate."), markup=False
            )
            raise typer.Exit(EXIT_UNKNOWN_MODEL) from None

    check(model)
    if not src.jsonl:
        req = read_single(src, provider="openai", model=model)
        if req.model is None:
            stderr_console().print("error: count needs --model (the body names none)", markup=False)
            raise typer.Exit(EXIT_USAGE)
        check(req.model)
        try:
            res = _count_doc(req)
        except (ValueError, TypeError, RecursionError) as e:
            stderr_console().print(failure_of(e, None).describe(src.name), markup=False)
            raise typer.Exit(EXIT_BAD_INPUT) from None
        if as_json:
            print(json.dumps(res))
        else:
            stdout_console().print(clean(f"{res['total']:,} prompt tokens ({res['model']}, {res['encoding']}, {res['messages']:,} messages)"), markup=False)
        return
    totals: list[int] = []
    try:
        code = run_corpus(
            _count_doc, src, provider="openai", model=model, jobs=jobs, fail_fast=fail_fast, as_json=as_json,
            on_result=lambda _n, r: totals.append(r["total"]),
        )
    except contextfold.UnknownModelError as e:
        stderr_console().print(clean(f"error: {e}; exact counts exist for OpenAI models only"), markup=False)
        raise typer.Exit(EXIT_UNKNOWN_MODEL) from None
    if not as_json and totals:
        stdout_console().print(clean(f"{src.name}: {len(totals):,} requests, {sum(totals):,} prompt tokens (median {statistics.median(totals):,.0f})"), markup=False)
    raise typer.Exit(code)


