"""Messages as JSON text, whatever their extra fields hold.

A message may carry fields the library never reads (``metadata``, a framework's own keys), and
the estimate ignores them. The text the Compactor hashes a conversation by, or files a folded
span under for recall, still has to be written. ``json.dumps`` fails on a value nested deeper
than the interpreter's recursion limit, on a cycle, or on non-string keys; ``repr`` fails on
the first of these too. Where plain JSON fails, the same data is written with those parts
stood in for, so a compaction goes on and reads the same text each time.
"""

from __future__ import annotations

import json
from typing import Any

#: Containers nested deeper than this are written as a marker (a history's own structure is a
#: few levels deep; 10,000 levels of lists exceed the recursion limit).
MAX_DEPTH = 64
#: Characters of an object's ``repr`` kept where plain JSON failed (an object that is not JSON
#: data; where it succeeds, the ``repr`` is written whole, as the recall tool gives bytes back).
MAX_REPR_CHARS = 4_096


def dumps(obj: Any, *, sort_keys: bool = False, ensure_ascii: bool = True) -> str:
    """``obj`` as JSON text (``json.dumps``, objects that are not JSON data as their ``repr``);
    where that fails, containers past ``MAX_DEPTH`` levels, cycles and unreadable objects are
    written as markers, and non-string keys as their ``repr``."""
    try:
        return json.dumps(obj, sort_keys=sort_keys, ensure_ascii=ensure_ascii, default=_repr)
    except (TypeError, ValueError, RecursionError):
        return json.dumps(_data(obj, 0, set()), sort_keys=sort_keys, ensure_ascii=ensure_ascii)


def _repr(obj: Any) -> str:
    try:
        return repr(obj)
    except Exception:  # noqa: BLE001 (a caller's object may raise anything from its __repr__)
        return f"<{type(obj).__name__}>"


def _clipped_repr(obj: Any) -> str:
    text = _repr(obj)
    return text if len(text) <= MAX_REPR_CHARS else text[:MAX_REPR_CHARS] + "…"


def _data(obj: Any, depth: int, path: set[int]) -> Any:
    """``obj`` as data ``json.dumps`` can write: ``path`` holds the ids of the containers above."""
    if obj is None or isinstance(obj, str | int | float | bool):
        return obj
    if not isinstance(obj, dict | list | tuple):
        return _clipped_repr(obj)
    if depth >= MAX_DEPTH:
        return f"<{type(obj).__name__} nested deeper than {MAX_DEPTH} levels>"
    if id(obj) in path:
        return f"<cycle: a {type(obj).__name__} holding itself>"
    path.add(id(obj))
    try:
        if isinstance(obj, dict):
            return {k if isinstance(k, str) else _clipped_repr(k): _data(v, depth + 1, path) for k, v in obj.items()}
        return [_data(v, depth + 1, path) for v in obj]
    finally:
        path.discard(id(obj))
