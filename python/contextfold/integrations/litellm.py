"""LiteLLM integration: a ``CustomLogger`` whose pre-call hooks compact the messages
(``pip install litellm``; contextfold does not install it: it is a large package).

- SDK: ``litellm.callbacks = [ContextFoldLogger(trigger=100_000)]``; every ``litellm.acompletion``
  (and every call through a ``litellm.Router``) is compacted in
  ``async_pre_call_deployment_hook``, just before it goes to the provider. LiteLLM runs no hook
  that may rewrite a synchronous ``litellm.completion``: use ``acompletion`` (or the proxy).
- LiteLLM proxy: name an instance in its config (``litellm_settings: callbacks:
  my_module.compactor``); ``async_pre_call_hook`` compacts each request's ``messages``.

The caller's messages are never altered; the compaction of a conversation is reused on its next
calls (see ``contextfold.integrations.folding``).
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from typing import Any

from contextfold.compactor import Compactor
from contextfold.errors import CompactionError, InvalidMessageError
from contextfold.integrations.folding import CompactingHistory

try:
    from litellm.integrations.custom_logger import CustomLogger  # type: ignore[import-not-found, unused-ignore]
except ImportError as e:  # pragma: no cover - exercised only without litellm
    raise ImportError("contextfold.integrations.litellm needs LiteLLM: pip install litellm") from e

__all__ = ["ContextFoldLogger", "MAX_MODELS"]

#: Model names one logger keeps a compacting history for; the least recently used is forgotten
#: first. A proxy's pre-call hook sees the model string of every request before LiteLLM routes
#: (or refuses) it: one per name without a bound let a client that varies it grow the hook's
#: memory without end.
MAX_MODELS = 64

log = logging.getLogger("contextfold.litellm")


def _model_name(model: Any) -> str | None:
    """``openai/gpt-4o`` -> ``gpt-4o``: the model name contextfold's tables know."""
    if not isinstance(model, str) or not model:
        return None
    return model.rsplit("/", 1)[-1]




class ContextFoldLogger(CustomLogger):  # type: ignore[misc, unused-ignore]
    """Compacts each request's OpenAI-format ``messages`` (LiteLLM's own format, whatever the
    provider) when they reach the trigger.

    Options are the Compactor's: ``trigger`` (tokens, a fraction of the model's window, or
    ``("messages", n)``), ``budget``, ``keep``, ``strategy``, ``summarizer``,
    ``context_window`` (for models outside contextfold's table). One Compactor per model name,
    built on first use; the request's ``tools`` count in the trigger and the budget. A
    compaction that fails leaves the request as it was (logged as a warning)."""

    def __init__(self, *, trigger: Any = None, budget: int | None = None, keep: Any = None,
                 strategy: str = "hybrid", summarizer: Any = None, context_window: int | None = None) -> None:
        super().__init__()
        self.options: dict[str, Any] = dict(trigger=trigger, budget=budget, keep=keep, strategy=strategy,
                                            summarizer=summarizer, context_window=context_window)
        # A bad option is refused here, naming it: the Compactors are built per model at the
        # first request, where it failed every request the hook saw.
        Compactor(provider="openai", **self.options)
        self._histories: OrderedDict[str | None, CompactingHistory] = OrderedDict()
        self._forgotten = 0  # (compactions of the histories forgotten)
        self._lock = threading.Lock()

    def history(self, model: Any) -> CompactingHistory:
        """The compacting history of ``model`` (LiteLLM's model string)."""
        name = _model_name(model)
        with self._lock:
            h = self._histories.get(name)
            if h is None:
                h = CompactingHistory(Compactor(provider="openai", model=name, **self.options),
                                      hook="ContextFoldLogger")
                self._histories[name] = h
                while len(self._histories) > MAX_MODELS:
                    self._forgotten += self._histories.popitem(last=False)[1].compactions
            else:
                self._histories.move_to_end(name)
            return h

    @property
    def compactions(self) -> int:
        """Compactions made, all models together."""
        with self._lock:
            return self._forgotten + sum(h.compactions for h in self._histories.values())

    async def _compacted(self, data: dict[str, Any]) -> dict[str, Any] | None:
        messages = data.get("messages")
        if not isinstance(messages, list) or not messages:
            return None
        h = self.history(data.get("model"))
        tools = data.get("tools")
        try:
            out = await h.acompact(messages, tools=tools if isinstance(tools, list) else None)
        except (CompactionError, InvalidMessageError, TypeError, ValueError) as e:
            log.warning("request not compacted: %s: %s", type(e).__name__, e)
            return None
        if out == messages:
            return None
        return {**data, "messages": out}

    async def async_pre_call_deployment_hook(self, kwargs: dict[str, Any], call_type: Any) -> dict[str, Any] | None:
        """LiteLLM SDK and Router: the request's kwargs with the messages compacted."""
        return await self._compacted(kwargs)

    async def async_pre_call_hook(self, user_api_key_dict: Any, cache: Any, data: dict[str, Any],
                                  call_type: Any) -> dict[str, Any]:
        """LiteLLM proxy: the request body with its messages compacted."""
        return await self._compacted(data) or data
