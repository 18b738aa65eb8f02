"""Opening FILE and reading one document of it; what went wrong with an input, said with its
file, line, message index and field."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import typer

import contextfold
from contextfold.cli.app import EXIT_BAD_INPUT, EXIT_USAGE, stderr_console
from contextfold.cli.output import clean
from contextfold.inputs import DocumentTooLarge, InputError, Request, Source, decode_json, open_source, read_request


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
        return clean(f"{where}: " + (", ".join(parts) + ": " if parts else "") + self.message)

    def to_dict(self) -> dict[str, Any]:
        return {"line": self.line, "index": self.index, "field": self.field, "error": self.message}


def failure_of(e: BaseException, line: int | None) -> Failure:
    """What went wrong with one input, as a Failure (``line``: of the JSONL file)."""
    if isinstance(e, contextfold.InvalidMessageError):
        return Failure(line, e.index, e.field or None, e.reason)
    if isinstance(e, InputError):
        return Failure(line, e.index, e.field, str(e))
    if isinstance(e, json.JSONDecodeError):
        # Within a JSONL line the line is the file's; within a document, say the document's.
        where = f"column {e.colno}" if line is not None else f"line {e.lineno}, column {e.colno}"
        return Failure(line, None, None, f"invalid JSON ({e.msg}) at {where}")
    if isinstance(e, RecursionError):
        return Failure(line, None, None, "nested too deeply to read")
    return Failure(line, None, None, f"{type(e).__name__}: {e}")


def open_input(file: str, jsonl: bool | None, max_bytes: int | None = None) -> Source:
    """FILE opened (``-``: stdin), or exit 2 naming why not."""
    try:
        return open_source(file, jsonl=jsonl, max_bytes=max_bytes)
    except OSError as e:
        stderr_console().print(f"error: cannot read {clean(file)}: {e.strerror or e}", markup=False)
        raise typer.Exit(EXIT_USAGE) from None
    except InputError as e:
        stderr_console().print(f"error: {clean(e)}", markup=False)
        raise typer.Exit(EXIT_USAGE) from None


def read_document(src: Source) -> Any:
    """The one JSON document of a non-JSONL input (at most the size cap), or exit 1 saying why."""
    try:
        return decode_json(src.stream.document())
    except (ValueError, TypeError, RecursionError) as e:
        stderr_console().print(failure_of(e, None).describe(src.name), markup=False)
        raise typer.Exit(EXIT_BAD_INPUT) from None
    finally:
        src.stream.close()


def read_single(src: Source, *, provider: str | None, model: str | None) -> Request:
    """The one document of a non-JSONL input as a Request, or exit 1 naming what is wrong."""
    doc = read_document(src)
    try:
        return read_request(doc, provider=provider, model=model)
    except (ValueError, TypeError, RecursionError) as e:
        stderr_console().print(failure_of(e, None).describe(src.name), markup=False)
        raise typer.Exit(EXIT_BAD_INPUT) from None


__all__ = ["DocumentTooLarge", "Failure", "failure_of", "open_input", "read_document", "read_single"]


def say_unknown_model(model: str | None, *, strict: bool) -> None:
    """An unknown model name on stderr (a warning), or exit 3 with ``--strict``."""
    import warnings

    from contextfold.cli.app import EXIT_UNKNOWN_MODEL

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", contextfold.UnknownModelWarning)
        try:
            contextfold.check_model(model, strict=strict)
        except contextfold.UnknownModelError as e:
            stderr_console().print(f"error: {clean(e)} (--strict)", markup=False)
            raise typer.Exit(EXIT_UNKNOWN_MODEL) from None
    for w in caught:
        stderr_console().print(f"warning: {clean(w.message)}", markup=False)
