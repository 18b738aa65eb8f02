"""The typer application every command registers on, its exit codes and shared options."""

from __future__ import annotations

import errno
from typing import Annotated, Any, Optional

import typer
from rich.console import Console

import contextfold

EXIT_OK = 0
EXIT_BAD_INPUT = 1
EXIT_USAGE = 2
EXIT_UNKNOWN_MODEL = 3
EXIT_MISSING_TOOL = 4
EXIT_OVER_BUDGET = 5
#: ``compact`` cannot reach the budget at all (what must stay verbatim already costs more):
#: unlike 5 there is no result, so nothing is written and ``--allow-over`` has nothing to accept.
EXIT_BUDGET_UNREACHABLE = 6

EPILOG = (
    "Exit codes: 0 ok; 1 some input unreadable (reported with file, line, message index and "
    "field); 2 usage; 3 unknown model; 4 a needed tool is missing; 5 compact missed the "
    "budget (--allow-over accepts it); 6 compact cannot reach the budget at all (nothing written)."
)


def _version(value: bool) -> None:
    if value:
        print(contextfold.__version__)
        raise typer.Exit(EXIT_OK)


def _provider(value: Optional[str]) -> Optional[str]:
    if value is not None and value not in contextfold.PROVIDERS:
        raise typer.BadParameter(f"unknown provider {value!r}; valid: {', '.join(contextfold.PROVIDERS)}")
    return value

app = typer.Typer(
    name="contextfold",
    help="Where an LLM agent's context goes: estimate, count, compact, report and benchmark token use.\n\n"
    "FILE is a JSON history (list of messages), a request body (OpenAI chat / Responses, "
    "Anthropic, Gemini) or JSONL of either; '-' reads stdin.",
    epilog=EPILOG,
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode="rich",
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


@app.callback()
def _main(
    version: Annotated[bool, typer.Option("--version", "-V", callback=_version, is_eager=True, help="Print the version and exit.")] = False,
) -> None:
    """Where an LLM agent's context goes: estimate, count, compact, report and benchmark token use.

    FILE is a JSON history (list of messages), a request body (OpenAI chat / Responses,
    Anthropic, Gemini) or JSONL of either; '-' reads stdin."""

ProviderOpt = Annotated[
    Optional[str],
    typer.Option("--provider", "-p", callback=_provider, help=f"Force the wire format / pricing: {', '.join(contextfold.PROVIDERS)} (default: detected)."),
]
ModelOpt = Annotated[Optional[str], typer.Option("--model", "-m", help="Model name: picks tokenizer, image rules and context window.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Machine output: one JSON object (per input line for JSONL).")]
#: ``--json`` of a command that reads one document.
JsonOneOpt = Annotated[bool, typer.Option("--json", help="Machine output: one JSON object.")]
JobsOpt = Annotated[int, typer.Option("--jobs", "-j", min=0, help="Worker processes for JSONL (0, the default: the CPU count; 1: no pool).")]
FailFastOpt = Annotated[bool, typer.Option("--fail-fast", help="Stop at the first unreadable line (exit 1).")]
MaxBytesOpt = Annotated[
    Optional[int],
    typer.Option("--max-bytes", min=1, help="Largest document (or JSONL line) read, in bytes (default 512 MiB, or $CONTEXTFOLD_MAX_BYTES)."),
]
StrictOpt = Annotated[bool, typer.Option("--strict", help="An unknown model is an error (exit 3) instead of a warning.")]
JsonlOpt = Annotated[Optional[bool], typer.Option("--jsonl/--no-jsonl", help="Force JSONL / single-document reading (default: detected).")]


class _PipedConsole(Console):
    """A console whose reader going away (``| head``) is the closed pipe it is, which ``main``
    answers with exit 0 as for plain output; rich's own answer is ``SystemExit(1)``."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError(errno.EPIPE, "the reader of stdout went away")


def stdout_console(**options: Any) -> Console:
    """Where results go (``options``: more of rich's ``Console`` arguments)."""
    return _PipedConsole(**{"soft_wrap": True, "highlight": False, **options})


def stderr_console() -> Console:
    """Where errors, notices and the progress bar go."""
    return Console(stderr=True, highlight=False, soft_wrap=True)
