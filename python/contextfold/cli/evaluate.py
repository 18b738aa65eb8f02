"""``contextfold eval``: score what compaction keeps on probe fixtures (``contextfold.evaluation``)."""

from __future__ import annotations

import os
from typing import Annotated, Optional

import typer

from contextfold.cli.app import EPILOG, EXIT_BAD_INPUT, JsonOneOpt, app, stderr_console
from contextfold.cli.summarizer import summarizer_from


@app.command("eval", epilog="Example: [bold]contextfold eval tests/data/probes/*.json[/]\n\n" + EPILOG)
def eval_(
    files: Annotated[list[str], typer.Argument(help="Fixture files (JSON / JSONL): messages and probes with their expected facts.")],
    data_dir: Annotated[Optional[str], typer.Option(help="Where fixtures that reference a data set read it (default ../shared/data).")] = None,
    answerer: Annotated[Optional[str], typer.Option(help="OpenAI-compatible base URL that answers the probes (e.g. http://localhost:11434/v1).")] = None,
    model: Annotated[Optional[str], typer.Option(help="The answerer's model (and the judge's unless --judge-model).")] = None,
    judge_model: Annotated[Optional[str], typer.Option(help="The judge's model.")] = None,
    replicates: Annotated[int, typer.Option(min=3, help="Answer-and-judge runs per probe (spread reported).")] = 3,
    peer: Annotated[Optional[list[str]], typer.Option(help="Also score a peer's compaction with the same summarizer: langchain (SummarizationMiddleware; needs contextfold\\[langchain]).")] = None,
    summarizer: Annotated[str, typer.Option(help="What writes contextfold's summaries: extractive (offline, default) or PROVIDER:MODEL, e.g. ollama:llama3.2, openai:gpt-4.1-mini (needs the SDK extra and its API key).")] = "extractive",
    summarizer_window: Annotated[Optional[int], typer.Option(min=1, help="Context window of the summarizer model in tokens (for a model contextfold does not know).")] = None,
    as_json: JsonOneOpt = False,
) -> None:
    """Score what compaction keeps: each probe's expected facts found whole-word in what the
    continuing model sees, per strategy, at the naive cut's budget and beside it."""
    from contextfold.evaluation import run_cli

    chosen = None if summarizer == "extractive" else summarizer_from(summarizer, summarizer_window)
    try:
        print(run_cli(files, data_dir=data_dir, answerer_url=answerer, model=model, judge_model=judge_model,
                      replicates=replicates, api_key=os.environ.get("CONTEXTFOLD_EVAL_API_KEY"), as_json=as_json,
                      peers=tuple(peer or ()), summarizer=chosen))
    except (OSError, ValueError, KeyError) as e:
        stderr_console().print(f"error: {e}", markup=False)
        raise typer.Exit(EXIT_BAD_INPUT) from None
