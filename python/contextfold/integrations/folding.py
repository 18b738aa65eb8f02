"""What every framework hook shares: a Compactor that compacts at its trigger, and the memory of
its latest compactions, so the next call sends the same compacted prefix plus what was appended
(the summarizer runs once per compaction; the model's prompt cache keeps hitting).

A framework hands its hook the whole history on every call. ``CompactingHistory.compact(sent)``
looks for a remembered compaction whose source ``sent`` extends (same objects, or equal ones:
frameworks may copy their state between steps), continues it, and compacts again only when
that reaches the trigger.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from contextfold.compactor import CompactionResult, Compactor
from contextfold.session import Session

__all__ = ["CompactingHistory", "MAX_REMEMBERED"]

#: Conversations whose latest compaction is remembered (one hook may serve many); the least
#: recently used is forgotten first.
MAX_REMEMBERED = 256


class CompactingHistory:
    """A Compactor with the memory of its latest compactions (thread-safe).

    ``compactions`` counts the compactions made; ``last`` is the latest ``CompactionResult``."""

    def __init__(self, compactor: Compactor) -> None:
        self.compactor = compactor
        self.compactions = 0
        self.last: CompactionResult | None = None
        self._lock = threading.Lock()
        self._folds: OrderedDict[int, tuple[list[Any], list[Any]]] = OrderedDict()
        self._overhead: tuple[Any, Any] | None = None

    def bind(self, *, system: Any = None, tools: Sequence[Any] | None = None) -> None:
        """Count this request's system prompt and tool definitions in the trigger and budget."""
        key = (system, list(tools) if tools else None)
        if self._overhead == key:
            return
        c = self.compactor
        c.system, c.tools = system, key[1]
        c.session = Session(provider=c.provider, model=c.model, context_window=c.context_window,
                            tools=key[1], system=system, response_format=c.response_format)
        self._overhead = key

    def _continue(self, sent: list[Any]) -> tuple[int | None, list[Any]]:
        with self._lock:
            for key, (source, out) in reversed(self._folds.items()):
                n = len(source)
                if len(sent) >= n and all(a is b or a == b for a, b in zip(sent, source)):
                    self._folds.move_to_end(key)
                    return key, out + sent[n:]
        return None, sent

    def _remember(self, key: int | None, sent: list[Any], result: CompactionResult) -> list[Any]:
        with self._lock:
            if key is not None:
                self._folds.pop(key, None)
            self._folds[id(sent)] = (sent, result.messages)
            while len(self._folds) > MAX_REMEMBERED:
                self._folds.popitem(last=False)
            self.compactions += 1
            self.last = result
        return result.messages

    def compact(self, messages: Sequence[Any]) -> list[Any]:
        """The messages to send for ``messages`` (the caller's list is never altered)."""
        sent = list(messages)
        key, effective = self._continue(sent)
        if not self.compactor.should_compact(effective):
            return effective
        result = self.compactor.compact(effective)
        return self._remember(key, sent, result) if result.changed else effective

    async def acompact(self, messages: Sequence[Any]) -> list[Any]:
        """As ``compact``, with the Compactor's ``compact_async`` (an LLM summarizer awaited)."""
        sent = list(messages)
        key, effective = self._continue(sent)
        if not self.compactor.should_compact(effective):
            return effective
        result = await self.compactor.compact_async(effective)
        return self._remember(key, sent, result) if result.changed else effective
