"""Where the CLI writes: files replaced atomically (never truncated before a write that may
fail), ``-`` for stdout, and text from the data made safe for a terminal (never read as rich
markup, control characters and escape sequences replaced)."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import typer

from contextfold.cli.app import EXIT_USAGE, stderr_console
from contextfold.safe_text import clean

__all__ = ["clean", "is_stdout", "write_text"]


def is_stdout(path: Path | None) -> bool:
    """``-o -``: write to stdout."""
    return path is not None and str(path) == "-"


def write_text(path: Path, text: str) -> int:
    """Write ``text`` (UTF-8) to ``path`` through a temporary file in the same directory and an
    atomic rename, so an existing file is replaced only by a complete one; ``-`` is stdout.
    Returns the bytes written. An unwritable path exits 2 naming it."""
    data = text.encode("utf-8")
    if is_stdout(path):
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        return len(data)
    target = path.expanduser()
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent if str(target.parent) else ".")
    except OSError as e:
        stderr_console().print(f"error: cannot write {clean(path)}: {e.strerror or e}", markup=False)
        raise typer.Exit(EXIT_USAGE) from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if target.exists():
            # Keep the permissions of the file being replaced.
            os.chmod(tmp, target.stat().st_mode & 0o7777)
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, target)
    except OSError as e:
        Path(tmp).unlink(missing_ok=True)
        stderr_console().print(f"error: cannot write {clean(path)}: {e.strerror or e}", markup=False)
        raise typer.Exit(EXIT_USAGE) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return len(data)
