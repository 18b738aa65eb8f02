"""A request body read once, keeping where its history array sits in the raw bytes.

The proxy forwards the client's own bytes whenever it can (a request that needs no change goes
out byte for byte) and splices the folded prefix into them when a fold applies, so it needs the
byte offsets of the history array and of each message in it. CPython's C JSON scanner
(``json.scanner``) parses each top-level value and each message, and says where it ended; the
offsets are character offsets of the decoded text, equal to byte offsets when the body is ASCII
(what ``json.dumps`` writes by default) and converted once otherwise.

``scan_appended`` reads only what a body adds after a known prefix: the messages appended since
the previous turn and the top-level keys after the array. That is what makes a turn that only
appends cost O(new) instead of O(history).
"""

from __future__ import annotations

import json
import json.decoder
import json.scanner
from dataclasses import dataclass, field
from typing import Any, cast

__all__ = ["BodyError", "ScannedBody", "Appended", "json_bytes", "scan_body", "scan_appended"]

# The C scanner and string reader of the stdlib decoder (typeshed does not declare them).
_scan_once: Any = cast(Any, json.scanner).make_scanner(json.JSONDecoder())
_scanstring: Any = cast(Any, json.decoder).scanstring
_WS = " \t\n\r"


def json_bytes(value: Any) -> bytes:
    """``value`` as compact JSON in UTF-8, non-ASCII text as it is. A string holding a lone
    surrogate (the client's ``"\\ud800"``, text cut mid-emoji) has no UTF-8 form: that value is
    written with JSON escapes instead, the same value the client sent, where encoding it raw
    raised ``UnicodeEncodeError`` out of the request (a 500)."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(value, separators=(",", ":")).encode("ascii")


class BodyError(ValueError):
    """The body is not a JSON object with a history array where its API keeps it."""


@dataclass(slots=True)
class ScannedBody:
    """A body parsed whole. ``fields`` are the top-level keys other than the history; ``history``
    the parsed messages (None when the key is absent or not an array); ``start`` the byte offset
    of the array's ``[``; ``offsets[i]`` the byte offset where message ``i`` starts and
    ``offsets[n]`` the offset just after the last message (where ``]`` or a separator follows);
    ``spans`` the byte span ``(start, end)`` of each field's value in ``raw`` (where the proxy
    adds its recall tool to ``tools``); ``open`` the byte offset just after the object's ``{``."""

    fields: dict[str, Any]
    history: list[Any] | None
    start: int
    offsets: list[int]
    before: dict[str, Any]
    spans: dict[str, tuple[int, int]] = field(default_factory=dict)
    open: int = 1


@dataclass(slots=True)
class Appended:
    """What a body adds after a known prefix: the new messages, the byte offset after the last
    one, the top-level keys that follow the array and their values' byte spans in the body."""

    messages: list[Any]
    end: int
    after: dict[str, Any]
    spans: dict[str, tuple[int, int]] = field(default_factory=dict)


def _skip(text: str, i: int) -> int:
    n = len(text)
    while i < n and text[i] in _WS:
        i += 1
    return i


def _value(text: str, i: int) -> tuple[Any, int]:
    try:
        return _scan_once(text, i)  # type: ignore[no-any-return]
    except StopIteration as e:
        raise BodyError(f"invalid JSON value at character {i}") from e
    except json.JSONDecodeError as e:
        raise BodyError(f"invalid JSON: {e}") from e
    except RecursionError as e:
        # (Nesting deeper than the interpreter's stack: the upstream judges such a body.)
        raise BodyError(f"JSON nested too deep at character {i}") from e


def _key(text: str, i: int) -> tuple[str, int]:
    if i >= len(text) or text[i] != '"':
        raise BodyError(f"expected a key at character {i}")
    try:
        key, i = _scanstring(text, i + 1)
    except json.JSONDecodeError as e:
        raise BodyError(f"invalid JSON: {e}") from e
    i = _skip(text, i)
    if i >= len(text) or text[i] != ":":
        raise BodyError(f"expected ':' at character {i}")
    return key, _skip(text, i + 1)


def _array(text: str, i: int, out: list[Any], starts: list[int]) -> tuple[int, int]:
    """Parse array elements from ``i`` (just after ``[``) to the ``]``; ``starts`` gets each
    element's start. Returns ``(index of the ']', index just after the last element)``."""
    end = i
    while True:
        i = _skip(text, i)
        if i >= len(text):
            raise BodyError("unterminated array")
        c = text[i]
        if c == "]":
            return i, end
        if starts:
            if c != ",":
                raise BodyError(f"expected ',' or ']' at character {i}")
            i = _skip(text, i + 1)
        starts.append(i)
        value, i = _value(text, i)
        out.append(value)
        end = i


def _rest(text: str, i: int, into: dict[str, Any], marks: dict[str, tuple[int, int]]) -> None:
    """Parse the remaining ``, "key": value`` pairs of the top-level object up to its ``}``
    (``marks``: each value's character span)."""
    while True:
        i = _skip(text, i)
        if i >= len(text):
            raise BodyError("unterminated object")
        if text[i] == "}":
            if _skip(text, i + 1) != len(text):
                raise BodyError("data after the top-level object")
            return
        if text[i] != ",":
            raise BodyError(f"expected ',' or '}}' at character {i}")
        key, i = _key(text, _skip(text, i + 1))
        at = i
        into[key], i = _value(text, i)
        marks[key] = (at, i)


def _byte_offsets(text: str, offsets: list[int]) -> list[int]:
    if text.isascii():
        return offsets
    # Non-ASCII body: one pass converting the (sorted) character offsets to byte offsets.
    out: list[int] = []
    prev_c = prev_b = 0
    for c in offsets:
        prev_b += len(text[prev_c:c].encode("utf-8"))
        prev_c = c
        out.append(prev_b)
    return out


def _byte_spans(text: str, marks: dict[str, tuple[int, int]], base: int = 0) -> dict[str, tuple[int, int]]:
    """``marks`` (character spans, in the order the keys appear) as byte spans plus ``base``."""
    flat = _byte_offsets(text, [c for span in marks.values() for c in span])
    return {k: (base + flat[2 * j], base + flat[2 * j + 1]) for j, k in enumerate(marks)}


def scan_body(raw: bytes, key: str) -> ScannedBody:
    """Parse ``raw`` whole, recording the offsets of the array under ``key``."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise BodyError(f"body is not UTF-8: {e}") from e
    i = _skip(text, 0)
    if i >= len(text) or text[i] != "{":
        raise BodyError("body is not a JSON object")
    fields: dict[str, Any] = {}
    before: dict[str, Any] = {}
    history: list[Any] | None = None
    start = -1
    marks: list[int] = []
    value_marks: dict[str, tuple[int, int]] = {}
    opened = i + 1  # (only ASCII whitespace precedes the brace: characters are bytes there)
    i = _skip(text, i + 1)
    if i < len(text) and text[i] == "}":
        # (`{}` followed by more, e.g. `{}}` or `{}[`, is not one JSON object either.)
        if _skip(text, i + 1) != len(text):
            raise BodyError("data after the top-level object")
        return ScannedBody(fields, None, -1, [], before, {}, opened)
    while True:
        k, i = _key(text, i)
        if k == key and (history is not None or key in fields):
            # JSON parsers keep the last of duplicate keys (Python's, JavaScript's, Go's): the
            # provider would read a history other than the one compacted here.
            raise BodyError(f"duplicate key {key!r}")
        if k == key and history is None and i < len(text) and text[i] == "[":
            history = []
            start = i
            close, last_end = _array(text, i + 1, history, marks)
            marks = [start, *marks, last_end]
            i = close + 1
        else:
            at = i
            fields[k], i = _value(text, i)
            value_marks[k] = (at, i)
            if history is None:
                before[k] = fields[k]
        i = _skip(text, i)
        if i < len(text) and text[i] == "}":
            if _skip(text, i + 1) != len(text):
                raise BodyError("data after the top-level object")
            break
        if i >= len(text) or text[i] != ",":
            raise BodyError(f"expected ',' or '}}' at character {i}")
        i = _skip(text, i + 1)
    if history is None:
        return ScannedBody(fields, None, -1, [], before, _byte_spans(text, value_marks), opened)
    # One pass converts every offset (a non-ASCII body is walked once): the fields before the
    # array, its marks, the fields after it, in the order they appear.
    flat = [c for span in value_marks.values() for c in span]
    cut = sum(1 for c in flat if c < start)
    converted = _byte_offsets(text, flat[:cut] + marks + flat[cut:])
    values = converted[:cut] + converted[cut + len(marks):]
    spans = {k: (values[2 * j], values[2 * j + 1]) for j, k in enumerate(value_marks)}
    history_marks = converted[cut: cut + len(marks)]
    return ScannedBody(fields, history, history_marks[0], history_marks[1:], before, spans, opened)


def scan_appended(raw: bytes, end: int) -> Appended:
    """Parse what follows byte ``end`` of ``raw``: the end of a history array known to hold
    at least one message up to ``end``, then the rest of the top-level object."""
    try:
        text = raw[end:].decode("utf-8")
    except UnicodeDecodeError as e:
        raise BodyError(f"body is not UTF-8: {e}") from e
    messages: list[Any] = []
    marks: list[int] = []
    # Every element here follows one already read: a ',' precedes each.
    i = 0
    while True:
        i = _skip(text, i)
        if i >= len(text):
            raise BodyError("unterminated array")
        if text[i] == "]":
            break
        if text[i] != ",":
            raise BodyError(f"expected ',' or ']' at character {end + i}")
        value, i = _value(text, _skip(text, i + 1))
        messages.append(value)
        marks.append(i)
    last = marks[-1] if marks else 0
    after: dict[str, Any] = {}
    value_marks: dict[str, tuple[int, int]] = {}
    _rest(text, i + 1, after, value_marks)
    delta = last if text.isascii() else len(text[:last].encode("utf-8"))
    return Appended(messages, end + delta, after, _byte_spans(text, value_marks, end))
