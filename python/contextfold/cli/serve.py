"""``contextfold serve``: the compacting proxy (``contextfold.serve``; the ``[proxy]`` extra)."""

from __future__ import annotations

from contextfold.cli.app import app
from contextfold.serve.command import EPILOG, serve

app.command(name="serve", epilog=EPILOG)(serve)
