"""The ``contextfold serve`` command (registered by the CLI; the logic lives here)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

__all__ = ["EPILOG", "serve"]

EPILOG = (
    "Example: [bold]contextfold serve --upstream https://api.openai.com --upstream "
    "anthropic=https://api.anthropic.com[/], then point the SDK's base URL at "
    "http://127.0.0.1:8790/v1 (OpenAI) or http://127.0.0.1:8790 (Anthropic, Gemini).\n\n"
    "Exit codes: 0 stopped, 2 bad options, 4 the \\[proxy] extra is missing."
)


def _upstreams(values: list[str]) -> tuple[str | None, dict[str, str]]:
    default: str | None = None
    per_api: dict[str, str] = {}
    for v in values:
        name, sep, url = v.partition("=")
        if sep and "://" not in name:
            per_api[name.strip()] = url.strip()
        else:
            default = v
    return default, per_api


def serve(
    upstream: Annotated[Optional[list[str]], typer.Option(  # noqa: UP045 - typer reads Optional
        "--upstream", help="Upstream base URL (the request path is appended), or API=URL for one API "
        "(chat, responses, anthropic, gemini). Repeatable.")] = None,
    host: Annotated[Optional[str], typer.Option(help="Interface to listen on (default 127.0.0.1).")] = None,  # noqa: UP045
    port: Annotated[Optional[int], typer.Option(help="Port to listen on, 1-65535 (default 8790).")] = None,  # noqa: UP045
    redis: Annotated[Optional[str], typer.Option(help="Redis URL of the shared fold cache (default: in memory).")] = None,  # noqa: UP045
    budget: Annotated[Optional[int], typer.Option(help="Tokens after a compaction (default: half the trigger).")] = None,  # noqa: UP045
    context_window: Annotated[Optional[int], typer.Option(help="Window in tokens, for models not in the table.")] = None,  # noqa: UP045
    trigger: Annotated[Optional[float], typer.Option(help="Compact at this many tokens (>1) or share of the window (0-1].")] = None,  # noqa: UP045
    strategy: Annotated[Optional[str], typer.Option(help="mask, summarize or hybrid (default).")] = None,  # noqa: UP045
    summarizer: Annotated[Optional[str], typer.Option(help="extractive (default, offline) or PROVIDER:MODEL, e.g. openai:gpt-4o-mini (key from the environment).")] = None,  # noqa: UP045
    strict: Annotated[Optional[bool], typer.Option("--strict/--no-strict", help="Refuse (413) a request over the gate that cannot be compacted.")] = None,  # noqa: UP045
    timeout: Annotated[Optional[float], typer.Option(help="Seconds (> 0) for the upstream (connect and each read).")] = None,  # noqa: UP045
    workers: Annotated[Optional[int], typer.Option(help="Threads reading whole bodies and compacting (default 2).")] = None,  # noqa: UP045
    recall: Annotated[Optional[bool], typer.Option("--recall/--no-recall", help="Fold recoverably and answer the model's contextfold_recall calls in the proxy.")] = None,  # noqa: UP045
    recall_rounds: Annotated[Optional[int], typer.Option(help="Recall rounds answered per request, >= 1 (default 3).")] = None,  # noqa: UP045
    max_body_bytes: Annotated[Optional[int], typer.Option(help="Largest request body of a compacted route, in bytes (default 64 MiB; 413 past it).")] = None,  # noqa: UP045
    body_timeout: Annotated[Optional[float], typer.Option(help="Seconds such a body may take to arrive (default 120; 408 past them).")] = None,  # noqa: UP045
    config: Annotated[Optional[Path], typer.Option("--config", help="A TOML file of these settings.")] = None,  # noqa: UP045
    log_level: Annotated[str, typer.Option(help="uvicorn's log level.")] = "info",
) -> None:
    """Run the compacting proxy: an SDK pointed at it gets its history compacted when it
    reaches the gate, folded the same way every later turn, and the upstream's response as it
    came, with x-contextfold-* headers saying what was done."""
    from contextfold.serve.config import load_config

    try:
        from contextfold.serve.app import run
    except ImportError:
        typer.echo("error: contextfold serve needs its extra: pip install '.[proxy]' in a checkout of contextfold", err=True)
        raise typer.Exit(4) from None
    default, per_api = _upstreams(upstream or [])
    trig: int | float | None = None
    if trigger is not None:
        # (A whole number over 1 is tokens; a fraction over 1 is neither tokens nor a share, and
        # goes to the config's check as it came: cut to an int, 1.5 became a 1-token trigger.)
        trig = int(trigger) if trigger > 1 and trigger.is_integer() else trigger
    flags = {"upstream": default, "upstreams": per_api or None, "host": host, "port": port, "redis": redis,
             "budget": budget, "context_window": context_window, "trigger": trig, "strategy": strategy, "summarizer": summarizer,
             "strict": strict, "timeout": timeout, "workers": workers, "recall": recall, "recall_rounds": recall_rounds,
             "max_body_bytes": max_body_bytes, "body_timeout": body_timeout}
    try:
        cfg = load_config(flags, config_file=config)
        if not cfg.upstream and not cfg.upstreams:
            raise ValueError("no upstream: pass --upstream URL (or set CONTEXTFOLD_UPSTREAM)")
        from contextfold.serve.folding import Folder

        Folder._summarizer(cfg.summarizer)  # a summarizer that cannot be built is a bad option
    except (ValueError, OSError) as e:
        typer.echo(f"error: {e}", err=True)
        raise typer.Exit(2) from None
    run(cfg, log_level=log_level)
