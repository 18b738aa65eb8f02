"""Which conversation a history is, for the state one Compactor keeps per conversation while it
serves many (a framework hook on a server): the back-off of a compaction that freed too little,
the recall round the last compaction kept room for.

A history only grows by appending between the calls that state serves (a skipped compaction
and the gate it closes; a compaction and the recall call answered after it), so its first
messages stay the same. A bounded ``OrderedDict`` holds the state: each write is one dict
operation, so threads sharing the Compactor may write at once.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, TypeVar

from contextfold import _core, json_text

__all__ = ["KEY_MESSAGES", "MAX_CONVERSATIONS", "conversation_key", "remember"]

#: Messages that name a conversation.
KEY_MESSAGES = 4

#: Conversations one Compactor keeps state for (the least recently written go first).
MAX_CONVERSATIONS = 256

V = TypeVar("V")


def conversation_key(messages: Sequence[Any]) -> int:
    """A hash of the first ``KEY_MESSAGES`` messages of ``messages`` (two conversations with the
    same system prompt and task still differ by the turns after)."""
    head = list(messages[:KEY_MESSAGES])
    return int(_core.summary_hash(json_text.dumps(head, sort_keys=True)))


def remember(table: OrderedDict[int, V], key: int, value: V) -> None:
    """``table[key] = value`` as the most recent entry, the oldest dropped past
    ``MAX_CONVERSATIONS``; safe beside other threads writing the same table."""
    table.pop(key, None)
    table[key] = value
    while len(table) > MAX_CONVERSATIONS:
        try:
            table.popitem(last=False)
        except KeyError:
            break
