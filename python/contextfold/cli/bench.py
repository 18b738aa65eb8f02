"""``contextfold bench``: the side-by-side benchmarks of a source checkout (a development command)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from contextfold.safe_text import clean
from contextfold.cli.app import EPILOG, EXIT_BAD_INPUT, EXIT_MISSING_TOOL, EXIT_USAGE, JsonOneOpt, app, stderr_console, stdout_console


@app.command(epilog="Example: [bold]contextfold bench --quick[/]\n\n" + EPILOG)
def bench(
    quick: Annotated[bool, typer.Option("--quick", help="Small workloads only (1k synthetic, a few real histories).")] = False,
    as_json: JsonOneOpt = False,
    benches: Annotated[Optional[Path], typer.Option(help="The benches/ directory of a source checkout (default: ./benches).")] = None,
    markdown: Annotated[bool, typer.Option("--markdown", help="Print the table as Markdown.")] = False,
) -> None:
    """Development command, from a source checkout: side-by-side speed of contextfold, the pure-Python references and the libraries people
    use (LangChain, LiteLLM, tiktoken), ratios on the same inputs in one run. Peers that are not
    installed are skipped with a notice (pip install '.\\[bench]' in the checkout)."""
    from contextfold import _bench

    try:
        import pytest_benchmark  # noqa: F401
    except ImportError:
        stderr_console().print("error: bench needs pytest-benchmark: pip install '.[bench]' in the checkout", markup=False)
        raise typer.Exit(EXIT_MISSING_TOOL) from None
    try:
        result = _bench.run(quick=quick, benches=benches, notice=lambda s: stderr_console().print(s, style="yellow", markup=False))
    except FileNotFoundError as e:
        stderr_console().print(f"error: {clean(e)}", markup=False)
        raise typer.Exit(EXIT_USAGE) from None
    except RuntimeError as e:
        # (pytest failed or collected nothing: its last lines say why, without a traceback.)
        stderr_console().print(f"error: {clean(e)}", markup=False)
        raise typer.Exit(EXIT_BAD_INPUT) from None
    if as_json:
        print(json.dumps(result))
    elif markdown:
        print(_bench.markdown(result))
    else:
        _bench.print_table(result, stdout_console(width=max(stdout_console().width, 110)))


