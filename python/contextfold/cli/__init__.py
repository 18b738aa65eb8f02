"""The ``contextfold`` command: where a history's tokens go, exact counts, compaction, an HTML report, benchmarks.

Every command reads FILE: a history (JSON list of messages), a request body (OpenAI chat or
Responses, Anthropic, Gemini, with their ``tools`` / ``system``), or JSONL of either, one per
line (read line by line, priced on a process pool, output in input order). ``-`` reads stdin.

Exit codes: 0 success; 1 some input could not be read (bad JSON, invalid message: each is
reported on stderr with file, line, message index and field, and the run goes on unless
``--fail-fast``); 2 wrong usage (unknown option, missing file); 3 unknown model (``count``
needs a model whose tokenizer is public); 4 a tool the command needs is missing (``--png``
without chromium, ``bench`` without pytest-benchmark); 5 ``compact`` left the history over the
budget (``--allow-over`` accepts it); 6 ``compact`` cannot reach the budget at all (what must
stay verbatim costs more; nothing is written).

Layout: ``app`` (the typer app, exit codes, shared options), ``documents`` (opening FILE,
reading one document, failures), ``pool`` (JSONL over a process pool), and one module per
command, which registers itself on ``app`` when imported. A new command is one new module and
its name in the import below.
"""

from __future__ import annotations

import errno
import inspect
import os
import sys

import typer

from contextfold.cli.app import EXIT_BAD_INPUT, EXIT_MISSING_TOOL, EXIT_OK, EXIT_UNKNOWN_MODEL, EXIT_USAGE, app

# Each import registers its command on `app`, in this order (the order of the help).
from contextfold.cli import estimate, count, report, compact, evaluate, serve, bench, version  # noqa: E402, F401, I001


def _one_line_summaries() -> None:
    # The command list shows a command's first docstring paragraph with its line breaks, which
    # made ragged rows there ("... tool outputs, images,\n reasoning, ..."): one line each, for
    # the terminal to wrap. A command's own --help rewraps its text already.
    for info in app.registered_commands:
        if info.short_help is None and info.callback is not None and info.callback.__doc__:
            first = inspect.cleandoc(info.callback.__doc__).split("\n\n", 1)[0]
            info.short_help = " ".join(first.split())


_one_line_summaries()

__all__ = ["EXIT_BAD_INPUT", "EXIT_MISSING_TOOL", "EXIT_OK", "EXIT_UNKNOWN_MODEL", "EXIT_USAGE", "app", "main"]


def main(argv: list[str] | None = None) -> int:
    """Run the command line with ``argv`` (default: ``sys.argv[1:]``); returns the exit code.

    Usage errors exit 2; output cut short by a closed pipe (``| head``) is not an error: the
    rest is dropped quietly and the exit code is 0."""
    command = typer.main.get_command(app)
    try:
        rv = command.main(args=argv, prog_name="contextfold", standalone_mode=False)
    except typer.Exit as e:
        return int(e.exit_code)
    except _ClickException as e:
        e.show()  # type: ignore[attr-defined]
        return int(e.exit_code)  # type: ignore[attr-defined]
    except typer.Abort:
        print("Aborted.", file=sys.stderr)
        return EXIT_BAD_INPUT
    except OSError as e:
        if e.errno != errno.EPIPE:
            raise
        _quiet_stdout()
        return EXIT_OK
    except SystemExit as e:
        # click answers a closed pipe itself (exit 1, stdout wrapped to stay quiet): not an error.
        if type(sys.stdout).__name__ == "PacifyFlushWrapper":
            _quiet_stdout()
            return EXIT_OK
        return e.code if isinstance(e.code, int) else EXIT_USAGE
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _quiet_stdout()
    return rv if isinstance(rv, int) else EXIT_OK


# click's base exception, wherever this typer takes click from (its own copy since 0.26).
_ClickException: type[Exception] = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")


def _quiet_stdout() -> None:
    # The reader has gone: point stdout at /dev/null so the interpreter's last flush is silent.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
