"""``contextfold version``."""

from __future__ import annotations

import contextfold
from contextfold.cli.app import app


@app.command(epilog="Example: [bold]contextfold version[/]")
def version() -> None:
    """Print the version."""
    print(contextfold.__version__)


