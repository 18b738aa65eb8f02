"""``contextfold estimate``: estimated prompt tokens by kind and role."""

from __future__ import annotations

import json
import statistics
from typing import Annotated, Any

import typer
from rich.markup import escape

import contextfold
from contextfold import report as rep
from contextfold.cli.app import (
    EPILOG,
    EXIT_BAD_INPUT,
    FailFastOpt,
    JobsOpt,
    JsonlOpt,
    JsonOpt,
    MaxBytesOpt,
    ModelOpt,
    ProviderOpt,
    StrictOpt,
    app,
    stderr_console,
    stdout_console,
)
from contextfold.cli.documents import failure_of, open_input, read_single, say_unknown_model
from contextfold.cli.output import clean
from contextfold.cli.pool import run_corpus
from contextfold.inputs import Request
from contextfold.request import breakdown_of


def _estimate_doc(req: Request, *, per_message: bool = False) -> dict[str, Any]:
    """The `estimate --json` object of one request (one breakdown; per message on request)."""
    # A body is priced with what its settings add (the core's body reader, as estimate_request).
    b = (breakdown_of(req.body) if req.body is not None else contextfold.breakdown(req.messages, **req.options())).to_dict()
    del b["request_overhead"]
    if not per_message:
        del b["per_message"]
    return {"provider": req.provider, "model": req.model, "wire": req.wire, "messages": len(req.messages), **b}


def _print_breakdown(req: Request, name: str, top: int) -> None:
    b = breakdown_of(req.body) if req.body is not None else contextfold.breakdown(req.messages, **req.options())
    biggest, previews = rep.largest(b, req.messages, top)
    rep.print_breakdown(req, b, name, stdout_console(), top=biggest, previews=previews)


@app.command(
    epilog="Example: [bold]contextfold estimate examples/swe-trajectory.json[/]  ·  "
    "[bold]contextfold estimate corpus.jsonl --json > tokens.jsonl[/]\n\n" + EPILOG
)
def estimate(
    file: Annotated[str, typer.Argument(help="JSON / JSONL file, or '-' for stdin.")],
    provider: ProviderOpt = None,
    model: ModelOpt = None,
    as_json: JsonOpt = False,
    top: Annotated[int, typer.Option(min=0, help="List the N largest messages (single history).")] = 5,
    jobs: JobsOpt = 0,
    fail_fast: FailFastOpt = False,
    jsonl: JsonlOpt = None,
    max_bytes: MaxBytesOpt = None,
    strict: StrictOpt = False,
) -> None:
    """Estimated prompt tokens, by role and by kind (text, tool calls, tool outputs, images,
    reasoning, media, tool schemas, overhead), and the parts priced by an assumption."""
    say_unknown_model(model, strict=strict)
    src = open_input(file, jsonl, max_bytes)
    if not src.jsonl:
        req = read_single(src, provider=provider, model=model)
        if model is None:
            say_unknown_model(req.model, strict=strict)
        try:
            if as_json:
                print(json.dumps(_estimate_doc(req, per_message=True)))
            else:
                _print_breakdown(req, src.name, top)
        except (ValueError, TypeError, RecursionError) as e:
            stderr_console().print(failure_of(e, None).describe(src.name), markup=False)
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

    code = run_corpus(_estimate_doc, src, provider=provider, model=model, jobs=jobs, fail_fast=fail_fast, as_json=as_json, on_result=add)
    if not as_json and totals:
        out = stdout_console()
        grand = sum(totals)
        out.print(
            f"[bold]{escape(clean(src.name))}[/]: {len(totals):,} histories, {grand:,} estimated prompt tokens "
            f"(per history: median {statistics.median(totals):,.0f}, max {max(totals):,})"
        )
        out.print(rep.kind_table(by_kind, grand))
        out.print(rep.role_table(by_role, grand))
    raise typer.Exit(code)


