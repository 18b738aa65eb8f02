"""What every compaction step asks of a history first: that it is one, and its wire format."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any, Literal

from contextfold import _core
from contextfold.prune import is_langchain_message

__all__ = ["WireFormat", "detect_wire_format"]

WireFormat = Literal["chat", "responses", "anthropic", "gemini", "bedrock"]


def detect_wire_format(messages: Sequence[Any], provider: str = "openai", *, tools: Any = None) -> WireFormat:
    """The wire format of a history, as the core reads it: from the first message that shows
    one (``function_call`` items or ``input_text`` parts: Responses; ``parts``: Gemini;
    ``tool_use`` / ``tool_result`` / ``thinking`` / ``image`` / ``document`` blocks: Anthropic;
    untyped ``{"text"}`` / ``toolUse`` / ``image`` blocks in ``content``: Bedrock; ``tool_calls``,
    ``tool`` messages, ``image_url`` parts: OpenAI chat). A history with none of these (plain
    text messages, or empty) reads the same in several formats: the shape of ``tools`` (the
    definitions sent beside it) settles it when it tells (chat's nested ``function``, Responses'
    flat ``name``, Anthropic's ``input_schema``, Gemini's ``functionDeclarations``, Bedrock's
    ``toolSpec``); otherwise it is Anthropic when ``provider="anthropic"``, else Responses when
    a message item is typed ``"message"`` (as a Responses compaction writes its summary), else
    OpenAI chat.
    LangChain messages are ``"chat"``: their text blocks are OpenAI chat's, and what the
    compaction adds to such a history (the summary) is a LangChain message too.
    """
    if len(messages) and is_langchain_message(messages[0]):
        return "chat"
    seen = _core.detect_wire_format(messages)
    if seen is not None:
        return seen
    told = _core.tools_wire_format(tools) if tools is not None else None
    if told is not None:
        return told
    # A message item typed `{"type": "message", "role", "content"}` is a Responses item where
    # the provider is not Anthropic (whose response objects dumped whole are typed so too): the
    # summary a Responses compaction writes is one, and a compacted history whose tail is plain
    # text was read as chat, so the next compaction priced and returned the recall tool in
    # chat's shape, which the Responses API rejects.
    if provider != "anthropic" and _has_typed_message(messages):
        return "responses"
    return "anthropic" if provider == "anthropic" else "chat"


def _typed_message(m: Any) -> bool:
    """Whether ``m`` is a Responses message item by its ``type`` (a dict or an SDK object)."""
    kind = m.get("type") if isinstance(m, dict) else getattr(m, "type", None)
    return kind == "message"


def _has_typed_message(messages: Sequence[Any]) -> bool:
    """Whether any of ``messages`` is a Responses message item by its ``type``."""
    try:
        # All dicts (the usual history): the lookups and the comparisons run in C (a Python
        # call per message doubled the detection of a 50,000-message plain history).
        return "message" in map(dict.get, messages, itertools.repeat("type"))
    except TypeError:  # a message that is not a dict (an SDK object)
        return any(map(_typed_message, messages))


def _require_history(messages: Any) -> None:
    """A history is a sequence of messages: a str, bytes, a dict (one message) or a non-sequence
    is a TypeError, as in every other call of the library (never iterated as if it were one)."""
    if isinstance(messages, (str, bytes, bytearray, dict)) or not isinstance(messages, Sequence):
        raise TypeError(f"messages must be a list of messages, got {type(messages).__name__}")
