"""The ``contextfold`` command: where a history's tokens go, exact counts, compaction, an HTML report, benchmarks.

Every command reads FILE: a history (JSON list of messages), a request body (OpenAI chat or
Responses, Anthropic, Gemini, with their ``tools`` / ``system``), or JSONL of either, one per
line (read line by line, priced on a process pool, output in input order). ``-`` reads stdin.

Exit codes: 0 success; 1 some input could not be read (bad JSON, invalid message: each is
reported on stderr with file, line, message index and field, and the run goes on unless
``--fail-fast``); 2 wrong usage (unknown option, missing file); 3 unknown model (``count``
needs a model whose tokenizer is public); 4 a tool the command needs is missing (``--png``
without chromium, ``bench`` without pytest-benchmark).

Layout: ``app`` (the typer app, exit codes, shared options), ``documents`` (opening FILE,
reading one document, failures), ``pool`` (JSONL over a process pool), and one module per
command, which registers itself on ``app`` when imported. A new command is one new module and
its name in the import below.
"""

from __future__ import annotations

from contextfold.cli.app import EXIT_BAD_INPUT, EXIT_MISSING_TOOL, EXIT_OK, EXIT_UNKNOWN_MODEL, EXIT_USAGE, app

# Each import registers its command on `app`, in this order (the order of the help).
from contextfold.cli import estimate, count, report, compact, bench, version  # noqa: E402, F401, I001

__all__ = ["EXIT_BAD_INPUT", "EXIT_MISSING_TOOL", "EXIT_OK", "EXIT_UNKNOWN_MODEL", "EXIT_USAGE", "app", "main"]


def main(argv: list[str] | None = None) -> int:
    """Run the command line with ``argv`` (default: ``sys.argv[1:]``); returns the exit code."""
    try:
        app(args=argv, prog_name="contextfold")
    except SystemExit as e:
        code = e.code
        return code if isinstance(code, int) else (0 if code is None else EXIT_USAGE)
    return EXIT_OK
