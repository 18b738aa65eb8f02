"""Repair of a broken history before it is sent (or compacted).

Agent runs stop mid-turn, tools crash, histories get merged: a call without its result, a
result without its call, two calls sharing an id. Every provider rejects such a request.
``repair`` fixes them with the least change and says what it did:

- a call without a result gets a stand-in result marked as interrupted (an error result where
  the format has one);
- a result without its call (or a second result of one call) is dropped;
- duplicate call ids are made unique (``id_2``, ...), the result that answers each renamed
  call renamed with it (in chat, an id used again in a later round once its call was answered
  is kept);
- call ids the format's provider refuses, as a history carried over from another provider has
  them (Kimi's ``functions.read:0``, a gateway's 44-character UUIDs), are renamed to ones it
  takes, with their results: Anthropic and Bedrock take ``[a-zA-Z0-9_-]+`` (each other
  character becomes ``_``), Bedrock and Responses at most 64 characters (cut); chat ids are
  left, since OpenAI-compatible servers take any;
- arguments that are not valid JSON (OpenAI chat and Responses function calls; a model's call
  cut off, recorded as it came) are kept as a string under ``invalid_json``, empty ones become
  ``{}``;
- a turn of an empty content list (a Gemini candidate that came back without parts, appended
  as it came), which Gemini and Anthropic refuse, is dropped in the formats that alternate
  turns, unless it is the final assistant turn; the two turns of one role it leaves in a row
  are joined;
- a pending last turn (calls still awaiting their results or an approval) is left as it is.

A Responses input sent with ``previous_response_id`` or ``conversation`` continues a history
the provider holds: its leading outputs answer calls of the stored response, not of the input.
``repair(input, wire_format="responses", held_upstream=True)`` keeps such a result (once per
call id); without it they are orphans, and a continuation of nothing but outputs came back
empty.

The core plans the repair for all five wire formats; the caller's list and objects are never
changed (edited messages are copies).
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from contextfold import _core
from contextfold.prune import _copy

__all__ = ["RepairResult", "repair"]


@dataclass(frozen=True, slots=True)
class RepairResult:
    """``messages``: the repaired history (the caller's own objects where nothing changed);
    ``changes``: one line per change, naming the caller's message index."""

    messages: list[Any]
    changes: tuple[str, ...]

    @property
    def changed(self) -> bool:
        """True when anything was repaired."""
        return bool(self.changes)


def repair(messages: Sequence[Any], /, *, provider: str = "openai", wire_format: str | None = None,
           held_upstream: bool = False) -> RepairResult:
    """Repair ``messages`` (see the module docs). ``provider`` picks the format of a history
    that shows none (as ``Compactor`` does); ``wire_format`` forces one (``"chat"``,
    ``"responses"``, ``"anthropic"``, ``"gemini"``, ``"bedrock"``). ``held_upstream``: the
    messages are a Responses input continuing a stored response (sent with
    ``previous_response_id`` or ``conversation``); raises ``ValueError`` for a history of another
    format, which the provider holds none of."""
    from contextfold.history import _require_history, detect_wire_format

    _require_history(messages)
    if wire_format is not None and wire_format not in _core.WIRE_FORMATS:
        raise ValueError(f"unknown wire format {wire_format!r}; valid: {', '.join(_core.WIRE_FORMATS)}")
    fmt = wire_format or detect_wire_format(messages, provider)
    if held_upstream and fmt != "responses":
        raise ValueError(f"held_upstream is for a Responses input continuing a stored response; this history is "
                         f"{fmt}, whose provider holds no history")
    out, changes = _core.repair_history(messages, format=fmt, copy=_copy, like=_like(messages),  # type: ignore[arg-type]
                                        held_upstream=held_upstream)
    return RepairResult(messages=list(out), changes=tuple(changes))


def _like(messages: Sequence[Any]) -> Callable[[dict[str, Any]], Any] | None:
    """How an added message (a stand-in result, an OpenAI chat dict) is written in ``messages``:
    as a LangChain message (LangChain's own ``convert_to_messages``: a ``ToolMessage``) in a
    history of LangChain messages, where a dict among them would not be one; else as it is."""
    base = sys.modules.get("langchain_core.messages.base")
    if base is None or not any(map(isinstance, messages, itertools.repeat(base.BaseMessage))):
        return None
    from langchain_core.messages import convert_to_messages

    return lambda m: convert_to_messages([m])[0]
