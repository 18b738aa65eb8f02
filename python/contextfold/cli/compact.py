"""``contextfold compact``: fold a history to a token budget, written in its own wire format."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

import contextfold
from contextfold import report as rep
from contextfold.cli.app import EPILOG, EXIT_BAD_INPUT, EXIT_USAGE, JsonOpt, ModelOpt, ProviderOpt, app, stderr_console, stdout_console
from contextfold.cli.documents import failure_of, open_input
from contextfold.inputs import read_request


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
    src = open_input(file, None)
    if src.jsonl:
        stderr_console().print("[red]error:[/] compact takes one document; for a JSONL corpus use the Python API (see the Ray example)")
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
        stderr_console().print(f"[red]error:[/] {e}", markup=True)
        raise typer.Exit(EXIT_BAD_INPUT) from None
    except (ValueError, TypeError) as e:
        stderr_console().print(failure_of(e, None).describe(src.name), markup=False)
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
    out = stdout_console()
    out.print(f"[bold]{src.name}[/] ({req.wire}, {req.provider}{', ' + req.model if req.model else ''}): budget {budget:,} tokens")
    for text in rep.compaction_lines(result, len(req.messages)):
        out.print(text, markup=False)
    if not result.changed:
        return
    if output is not None:
        out.print(f"wrote {output}")
    else:
        out.print("(no --output: nothing written)")


