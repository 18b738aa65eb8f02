"""Opening FILE and reading one document of it; what went wrong with an input, said with its
file, line, message index and field."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import typer

import contextfold
from contextfold.cli.app import EXIT_BAD_INPUT, EXIT_USAGE, stderr_console
from contextfold.inputs import InputError, Request, Source, open_source, read_request


@dataclass(frozen=True, slots=True)
class Failure:
    """Why one input (a line of JSONL, or the whole file) could not be processed."""

    line: int | None
    index: int | None
    field: str | None
    message: str

    def describe(self, name: str) -> str:
        where = name + (f":{self.line}" if self.line is not None else "")
        parts = []
        if self.index is not None:
            parts.append(f"message {self.index}")
        if self.field:
            parts.append(f"field {self.field!r}")
        return f"{where}: " + (", ".join(parts) + ": " if parts else "") + self.message

    def to_dict(self) -> dict[str, Any]:
        return {"line": self.line, "index": self.index, "field": self.field, "error": self.message}


def failure_of(e: Exception, line: int | None) -> Failure:
    if isinstance(e, contextfold.InvalidMessageError):
        return Failure(line, e.index, e.field or None, e.reason)
    if isinstance(e, InputError):
        return Failure(line, e.index, e.field, str(e))
    if isinstance(e, json.JSONDecodeError):
        return Failure(line, None, None, f"invalid JSON: {e.msg} at column {e.colno}")
    return Failure(line, None, None, f"{type(e).__name__}: {e}")


def open_input(file: str, jsonl: bool | None) -> Source:
    try:
        return open_source(file, jsonl=jsonl)
    except OSError as e:
        stderr_console().print(f"[red]error:[/] cannot read {file}: {e.strerror or e}")
        raise typer.Exit(EXIT_USAGE) from None


def read_single(src: Source, *, provider: str | None, model: str | None) -> Request:
    """The one document of a non-JSONL input, or exit 1 naming what is wrong."""
    try:
        return read_request(json.loads(src.stream.read()), provider=provider, model=model)
    except (ValueError, TypeError) as e:
        stderr_console().print(failure_of(e, None).describe(src.name), markup=False)
        raise typer.Exit(EXIT_BAD_INPUT) from None
    finally:
        src.stream.close()

