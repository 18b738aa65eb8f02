"""The summary as a message of its wire format, built without a JSON round trip of its text.

The core writes a format's text message as JSON (``_core.summary_message``); parsed back, that
is the message. A default summary fills the room its budget leaves (megabytes on a long
history), so escaping it into JSON and parsing it back cost more than the rest of assembling
the compacted history. The message's shape does not depend on its text (each format writes
its role and its text at one place): the core writes the shape once per (format, role) around
a slot, and the text is set at the slot. Same dict, same key order, as ``json.loads`` of the
whole.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from contextfold import _core

__all__ = ["summary_message"]

#: Stands for the text in a shape (a string no summary is: NUL-delimited).
_SLOT = "\x00contextfold summary\x00"


@functools.lru_cache(maxsize=64)
def _shape(fmt: str, role: str) -> str:
    return _core.summary_message(_SLOT, format=fmt, role=role)  # type: ignore[arg-type]


def _filled(value: Any, text: str) -> Any:
    if isinstance(value, dict):
        return {k: _filled(v, text) for k, v in value.items()}
    if isinstance(value, list):
        return [_filled(v, text) for v in value]
    return text if value == _SLOT else value


def summary_message(text: str, *, format: str, role: str) -> dict[str, Any]:
    """``json.loads(_core.summary_message(text, format=format, role=role))``, without writing
    ``text`` as JSON and reading it back."""
    return _filled(json.loads(_shape(format, role)), text)  # type: ignore[no-any-return]
