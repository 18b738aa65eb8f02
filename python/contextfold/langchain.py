"""LangChain integration (``pip install '.[langchain]'`` in a checkout).

- `token_counter`: a drop-in for ``langchain_core.messages.utils.count_tokens_approximately``
  (same call shape) that prices messages with contextfold's estimate: whole tool-call envelopes,
  images by pixel size, a provider's tokenizer density. Pass it wherever LangChain takes a
  ``token_counter`` (``trim_messages``, ``SummarizationMiddleware``).
- `ContextFoldMiddleware`: an agent middleware that runs a compaction step on what is sent
  before each model call (``create_agent(..., middleware=[ContextFoldMiddleware(compactor)])``).
  The agent's stored history is never changed: only the request sent to the model is.

Every contextfold entry point (``estimate``, ``count``, ``prune``, ``Compactor``, ``Session``,
...) reads LangChain messages directly, by meaning: role, content blocks, tool calls and tool
call ids, never the bookkeeping (``additional_kwargs``, ``response_metadata``, ids,
``usage_metadata``); they price as the same messages converted to OpenAI chat dicts. Edited
messages come back as copies of their own class.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

import contextfold

try:
    from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
    from langchain_core.messages import BaseMessage, convert_to_messages, convert_to_openai_messages
    from langchain_core.utils.function_calling import convert_to_openai_tool
except ImportError as e:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "contextfold.langchain needs LangChain: pip install '.[langchain]' in a checkout of contextfold, or pip install langchain"
    ) from e

if TYPE_CHECKING:
    from langchain_core.messages import MessageLikeRepresentation

__all__ = ["ContextFoldMiddleware", "make_token_counter", "to_openai_messages", "token_counter"]


def to_openai_messages(messages: Iterable[MessageLikeRepresentation]) -> list[dict[str, Any]]:
    """LangChain messages (or anything ``convert_to_messages`` takes) as OpenAI chat dicts."""
    return list(convert_to_openai_messages(list(messages)))


def _tools(tools: Sequence[Any] | None) -> list[dict[str, Any]] | None:
    return [convert_to_openai_tool(t) for t in tools] if tools else None


def token_counter(
    messages: Iterable[MessageLikeRepresentation],
    *,
    chars_per_token: float = 4.0,
    extra_tokens_per_message: float = 3.0,
    count_name: bool = True,
    tokens_per_image: int = 85,
    use_usage_metadata_scaling: bool = False,
    tools: Sequence[Any] | None = None,
    provider: str = "openai",
    model: str | None = None,
) -> int:
    """Estimated prompt tokens of LangChain messages (and ``tools``), contextfold's estimate.

    Same call shape as ``count_tokens_approximately``. Its heuristic knobs
    (``chars_per_token``, ``extra_tokens_per_message``, ``count_name``, ``tokens_per_image``,
    ``use_usage_metadata_scaling``) are accepted so calls keep working, and ignored: the
    estimate prices each part by its provider's rules. ``provider`` / ``model`` pick them
    (`make_token_counter` binds them for APIs that call ``token_counter(messages)``).
    """
    del chars_per_token, extra_tokens_per_message, count_name, tokens_per_image, use_usage_metadata_scaling
    return contextfold.estimate(convert_to_messages(list(messages)), provider=provider, model=model, tools=_tools(tools))  # type: ignore[arg-type]


def make_token_counter(*, provider: str = "openai", model: str | None = None) -> Callable[..., int]:
    """A `token_counter` bound to a provider and model (picklable: a plain function call)."""
    import functools

    return functools.partial(token_counter, provider=provider, model=model)


class ContextFoldMiddleware(AgentMiddleware):
    """Runs ``compactor`` on the messages of every model request before the model sees them.

    ``compactor`` is a ``contextfold.Compactor`` (its ``compact``, or ``compact_async`` under
    ``ainvoke``, runs on every call) or any callable taking the request's LangChain messages and
    returning the messages to send (LangChain messages or OpenAI chat dicts): a list, or an
    object with a ``.messages`` list. ``contextfold.prune`` bound with ``functools.partial`` fits
    too. The messages are handed over as they are (contextfold reads LangChain messages by
    meaning), so every message the compactor does not change is sent as the same object, and an
    edited one as a copy of its class with its ids and metadata. The agent's state is never
    modified; ``last_tokens`` holds ``(before, after)`` estimated tokens of the latest call.
    """

    def __init__(self, compactor: Any, *, provider: str = "openai", model: str | None = None) -> None:
        super().__init__()
        self.compactor = compactor
        self.provider = provider
        self.model = model
        self.last_tokens: tuple[int, int] | None = None

    def _compact(self, request: ModelRequest) -> ModelRequest:
        sent: list[BaseMessage] = list(request.messages)
        return self._swap(request, sent, self._run(sent))

    def _run(self, sent: list[BaseMessage]) -> Any:
        # A Compactor (anything with .compact) or a plain callable.
        compact = getattr(self.compactor, "compact", None)
        return compact(sent) if callable(compact) else self.compactor(sent)

    async def _arun(self, sent: list[BaseMessage]) -> Any:
        compact_async = getattr(self.compactor, "compact_async", None)
        return await compact_async(sent) if callable(compact_async) else self._run(sent)

    def _swap(self, request: ModelRequest, sent: list[BaseMessage], out: Any) -> ModelRequest:
        out = getattr(out, "messages", out)
        if not isinstance(out, list):
            raise TypeError(f"compactor must return a list of messages or an object with .messages, got {type(out).__name__}")
        before = contextfold.estimate(sent, provider=self.provider, model=self.model)  # type: ignore[arg-type]
        if out == sent:
            self.last_tokens = (before, before)
            return request
        after = contextfold.estimate(out, provider=self.provider, model=self.model)  # type: ignore[arg-type]
        self.last_tokens = (before, after)
        new: list[BaseMessage] = convert_to_messages(out)
        return request.override(messages=new)  # type: ignore[arg-type]

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]) -> ModelResponse:
        return handler(self._compact(request))

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse:
        sent: list[BaseMessage] = list(request.messages)
        return await handler(self._swap(request, sent, await self._arun(sent)))
