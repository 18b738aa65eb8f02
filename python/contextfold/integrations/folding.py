"""What every framework hook shares: a Compactor that compacts at its trigger, and the memory of
its latest compactions, so the next call sends the same compacted prefix plus what was appended
(the summarizer runs once per compaction; the model's prompt cache keeps hitting).

A framework hands its hook the whole history on every call. ``CompactingHistory.compact(sent)``
looks for a remembered compaction whose source ``sent`` extends (same objects, or equal ones:
frameworks may copy their state between steps), continues it, and compacts again only when
that reaches the trigger.

One hook serves many conversations at once (threads, or coroutines awaiting an LLM summarizer),
and their requests may carry other system prompts and tools. Each request is compacted by a copy
of the Compactor that counts its own (``BoundCompactors``): nothing one request sets is read by
another's compaction in flight.

A compaction that cannot be made (``CompactionError``: the system prompt, tools, task and last
user turn alone over the budget, a broken tool pair) never fails the framework's call: the hook
sends what it would have without it (the last compaction plus what was appended since) and logs
a warning naming the error, as LangChain's own summarization does not raise either.
"""

from __future__ import annotations

import copy
import logging
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from contextfold.compactor import CompactionResult, Compactor
from contextfold.errors import CompactionError
from contextfold.session import Session

__all__ = ["BoundCompactors", "CompactingHistory", "MAX_BOUND", "MAX_REMEMBERED", "not_compacted",
           "refuse_recoverable", "require_budget"]

log = logging.getLogger("contextfold.integrations")

#: Conversations whose latest compaction is remembered (one hook may serve many); the least
#: recently used is forgotten first.
MAX_REMEMBERED = 256


#: Request overheads (system prompt and tools) one hook keeps a Compactor copy for; the least
#: recently used is forgotten first (a dynamic system prompt per user makes many).
MAX_BOUND = 32


class BoundCompactors:
    """Copies of one Compactor, each counting one request's system prompt and tools in its
    trigger and budget, with a session of its own (thread-safe). The copies share the base's
    store and its memory of folded spans."""

    def __init__(self, base: Compactor) -> None:
        self.base = base
        self._lock = threading.Lock()
        self._bound: list[tuple[Any, list[Any] | None, Compactor]] = []

    def get(self, system: Any, tools: Sequence[Any] | None) -> Compactor:
        """The copy that counts ``system`` and ``tools`` (made on first use); the base itself
        for its own."""
        listed = list(tools) if tools else None
        base = self.base
        if system == base.system and listed == (list(base.tools) if base.tools else None):
            return base
        with self._lock:
            for k, (s, t, c) in enumerate(self._bound):
                if s == system and t == listed:
                    if k:
                        self._bound.insert(0, self._bound.pop(k))
                    return c
            c = copy.copy(base)  # (its core options and requests are built again)
            c.system, c.tools = system, listed
            c.session = Session(provider=base.provider, model=base.model, context_window=base.context_window,
                                tools=listed, system=system, response_format=base.response_format)
            self._bound.insert(0, (system, listed, c))
            del self._bound[MAX_BOUND:]
            return c


def not_compacted(error: CompactionError, hook: str) -> None:
    """Log that ``hook`` sends a history uncompacted because of ``error``."""
    log.warning("%s: history sent without compacting it: %s: %s", hook, type(error).__name__, error)


def require_budget(compactor: Any, hook: str) -> None:
    """ValueError naming ``hook`` when ``compactor`` has no budget it could ever compact to (a
    fraction trigger, or a message-count one, without a context window or budget): refused when
    the hook is made, where it failed every call of the framework once the history was read."""
    if not isinstance(compactor, Compactor):
        return
    try:
        compactor.budget
    except ValueError as e:
        raise ValueError(f"{hook}: {e}") from e


def refuse_recoverable(compactor: Compactor, hook: str) -> None:
    """ValueError for a recoverable ``compactor`` given to ``hook``, a hook that sends the
    messages a compaction returns but not its tools: the placeholders would promise the model a
    recall tool it is never sent, and no one would answer its calls."""
    if getattr(compactor, "recoverable", False):
        raise ValueError(
            f"{hook} sends the compacted messages but not the recall tool a recoverable Compactor's "
            "placeholders name, and nothing would answer its calls: pass recoverable=False here; for "
            "recall use the LangChain middleware (it registers the tool), `contextfold serve --recall`, "
            "or Compactor.compact and Compactor.answer in your own loop")


class CompactingHistory:
    """A Compactor with the memory of its latest compactions (thread-safe).

    ``compactions`` counts the compactions made; ``last`` is the latest ``CompactionResult``."""

    def __init__(self, compactor: Compactor, *, hook: str = "CompactingHistory") -> None:
        refuse_recoverable(compactor, hook)
        self.compactor = compactor
        self.compactions = 0
        self.last: CompactionResult | None = None
        self._lock = threading.Lock()
        self._folds: OrderedDict[int, tuple[list[Any], list[Any]]] = OrderedDict()
        self._bound = BoundCompactors(compactor)
        self._overhead: tuple[Any, list[Any] | None] = (compactor.system, compactor.tools)

    def bind(self, *, system: Any = None, tools: Sequence[Any] | None = None) -> None:
        """Count this system prompt and these tool definitions in the trigger and budget of the
        calls that pass none of their own (``compact(..., system=, tools=)``)."""
        self._overhead = (system, list(tools) if tools else None)

    def _compactor(self, system: Any, tools: Any) -> Compactor:
        s, t = self._overhead
        return self._bound.get(s if system is _BOUND else system, t if tools is _BOUND else tools)

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

    def compact(self, messages: Sequence[Any], *, system: Any = ..., tools: Any = ...) -> list[Any]:
        """The messages to send for ``messages`` (the caller's list is never altered); ``system``
        and ``tools``: this request's, counted in the trigger and budget (default: ``bind``'s)."""
        c = self._compactor(system, tools)
        sent = list(messages)
        key, effective = self._continue(sent)
        if not c.should_compact(effective):
            return effective
        try:
            result = c.compact(effective)
        except CompactionError as e:
            not_compacted(e, "CompactingHistory")
            return effective
        return self._remember(key, sent, result) if result.changed else effective

    async def acompact(self, messages: Sequence[Any], *, system: Any = ..., tools: Any = ...) -> list[Any]:
        """As ``compact``, with the Compactor's ``compact_async`` (an LLM summarizer awaited)."""
        c = self._compactor(system, tools)
        sent = list(messages)
        key, effective = self._continue(sent)
        if not c.should_compact(effective):
            return effective
        try:
            result = await c.compact_async(effective)
        except CompactionError as e:
            not_compacted(e, "CompactingHistory")
            return effective
        return self._remember(key, sent, result) if result.changed else effective


#: "As ``bind`` said" (``CompactingHistory.compact``'s default for ``system`` and ``tools``).
_BOUND: Any = ...
