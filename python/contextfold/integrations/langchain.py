"""LangChain integration (``pip install '.[langchain]' in a checkout of contextfold``).

- `token_counter`: a drop-in for ``langchain_core.messages.utils.count_tokens_approximately``
  (same call shape) that prices messages with contextfold's estimate: whole tool-call envelopes,
  images by pixel size, a provider's tokenizer density. Pass it wherever LangChain takes a
  ``token_counter`` (``trim_messages``, ``SummarizationMiddleware``).
- `ContextFoldMiddleware`: an agent middleware that compacts what is sent before each model
  call (``create_agent(..., middleware=[ContextFoldMiddleware(trigger=("tokens", 4000))])``).
  The agent's stored history is never changed: only the request sent to the model is. With a
  recoverable Compactor (``recoverable=True``) it registers the ``contextfold_recall`` tool, so
  the model can ask for what a fold removed and the agent's tool node answers it.

Every contextfold entry point (``estimate``, ``count``, ``prune``, ``Compactor``, ``Session``,
...) reads LangChain messages directly, by meaning: role, content blocks, tool calls and tool
call ids, never the bookkeeping (``additional_kwargs``, ``response_metadata``, ids,
``usage_metadata``); they price as the same messages converted to OpenAI chat dicts. Edited
messages come back as copies of their own class.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

import contextfold
from contextfold.compactor import CompactionResult, Compactor
from contextfold.errors import CompactionError
from contextfold.integrations.folding import BoundCompactors, not_compacted, require_budget
from contextfold.recall import RECALL_TOOL, recall_tool

try:
    from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
    from langchain.tools import ToolRuntime
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage, BaseMessage, convert_to_messages, convert_to_openai_messages
    from langchain_core.tools import BaseTool, StructuredTool
    from langchain_core.utils.function_calling import convert_to_openai_tool
except ImportError as e:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "contextfold.langchain needs LangChain: pip install '.[langchain]' in a checkout of contextfold"
    ) from e

if TYPE_CHECKING:
    from langchain_core.messages import MessageLikeRepresentation

__all__ = ["ContextFoldMiddleware", "make_token_counter", "to_openai_messages", "token_counter"]

#: Conversations whose latest compaction the middleware remembers (one middleware may serve
#: many threads of an agent); the least recently used is forgotten first.
MAX_REMEMBERED = 256
#: Window assumed for a summarizer model the tables do not know (a LangChain model of any
#: provider): small enough for every current chat model.
SUMMARIZER_FALLBACK_WINDOW = 32_000


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


def _summarizer_for(model: str | BaseChatModel | None) -> Any:
    if model is None:
        return None
    if isinstance(model, str):
        from langchain.chat_models import init_chat_model

        model = init_chat_model(model)
    from contextfold.adapters.langchain import model_name
    from contextfold.errors import UnknownModelError
    from contextfold.summarize.llm import LLMSummarizer

    name = model_name(model) or type(model).__name__
    try:
        return LLMSummarizer(model, name)
    except UnknownModelError:
        return LLMSummarizer(model, name, context_window=SUMMARIZER_FALLBACK_WINDOW)


def _system_of(request: ModelRequest) -> Any:
    message = getattr(request, "system_message", None)
    if message is None:
        return getattr(request, "system_prompt", None)
    return message.content


def _tools_of(request: ModelRequest) -> list[dict[str, Any]] | None:
    out: list[dict[str, Any]] = []
    for t in request.tools or ():
        try:
            out.append(convert_to_openai_tool(t))
        except (TypeError, ValueError):
            continue  # a provider's built-in tool given as a dict it alone reads
    return out or None


def _parsed_args(raw: Any) -> dict[str, Any]:
    """The arguments of an invalid tool call as a dict for pricing: its JSON object when the
    text is one, else the text under ``"arguments"``."""
    import json

    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except ValueError:
            value = None
        return value if isinstance(value, dict) else {"arguments": raw}
    return raw if isinstance(raw, dict) else {}


def _invalid_calls_as_calls(messages: list[Any]) -> tuple[list[Any], dict[str, Any]]:
    """``messages`` with each AI message's ``invalid_tool_calls`` (those with an id) read as
    calls, and those invalid calls by id.

    ``create_agent`` answers each invalid call with an error ``ToolMessage``
    (``_patch_invalid_tool_calls``) and LangChain's OpenAI integration sends it as a call, but
    the Compactor reads only ``tool_calls``: its answer looked like a result without a call,
    and every compaction of the history failed as unpaired."""
    invalid: dict[str, Any] = {}
    out: list[Any] = []
    for m in messages:
        bad = [c for c in getattr(m, "invalid_tool_calls", None) or () if isinstance(m, AIMessage) and c.get("id")]
        if bad:
            for c in bad:
                invalid[c["id"]] = c
            calls = [{"type": "tool_call", "id": c["id"], "name": c.get("name") or "", "args": _parsed_args(c.get("args"))}
                     for c in bad]
            m = m.model_copy(update={"tool_calls": [*m.tool_calls, *calls],
                                     "invalid_tool_calls": [c for c in m.invalid_tool_calls if not c.get("id")]})
        out.append(m)
    return out, invalid


def _calls_back_invalid(messages: list[Any], invalid: dict[str, Any]) -> list[Any]:
    """``messages`` (a compaction of ``_invalid_calls_as_calls``'s output) with the invalid
    calls it read as calls put back in ``invalid_tool_calls``, as the model wrote them."""
    out: list[Any] = []
    for m in messages:
        calls = getattr(m, "tool_calls", None) or () if isinstance(m, AIMessage) else ()
        if any(c.get("id") in invalid for c in calls):
            m = m.model_copy(update={
                "tool_calls": [c for c in calls if c.get("id") not in invalid],
                "invalid_tool_calls": [*m.invalid_tool_calls, *(invalid[c["id"]] for c in calls if c.get("id") in invalid)]})
        out.append(m)
    return out


class _Compacted:
    """A compaction's messages, whether it changed the history and the Compactor's result it
    came from (``_finish`` reads them)."""

    def __init__(self, messages: list[Any], changed: Any, result: CompactionResult | None = None) -> None:
        self.messages, self.changed, self.result = messages, changed, result


class ContextFoldMiddleware(AgentMiddleware):  # type: ignore[type-arg, unused-ignore]
    """Compacts the messages of each model request before the model sees them.

    Two ways to build it:

    - ``ContextFoldMiddleware(model=..., trigger=..., keep=...)``, the words of LangChain's
      ``SummarizationMiddleware``: ``model`` (a model string for ``init_chat_model`` or any
      ``BaseChatModel``; None: contextfold's offline extractive digest) writes the summaries;
      ``trigger`` (``("tokens", n)``, ``("fraction", f)`` of ``context_window``, ``("messages",
      n)``) says when; ``keep`` what stays verbatim (``("messages", n)``, ``("tokens", n)``,
      ``("fraction", f)``, or an int: the last tool results kept unmasked). ``budget``: tokens
      after a compaction (default half the trigger); ``strategy``: ``hybrid`` (default),
      ``mask`` or ``summarize``; ``pricing_model``: the model whose tokens are counted.
    - ``ContextFoldMiddleware(compactor)``: a ``contextfold.Compactor``, or any callable taking
      the request's messages and returning the messages to send (a list, or an object with
      ``.messages``; ``contextfold.prune`` bound with ``functools.partial`` fits). ``model``
      is then the model name the ``last_tokens`` estimates are priced for.

    With a recoverable Compactor (``recoverable=True``, in either form) the middleware
    registers the ``contextfold_recall`` tool (``tools``), declared as the Compactor declares
    it: the agent's tool node runs it when the model asks for what a fold removed, and it
    answers with a page of the original sized by the Compactor that made the conversation's
    fold, to what the history the model was sent leaves under the budget
    (``Compactor.answer(call, history=...)``).

    With a Compactor, a call compacts only when the history reaches the trigger
    (``Compactor.should_compact``), and the result is reused on the next calls: what the model
    is sent is the last compaction's messages plus what the agent appended since, so the
    summarizer runs once per compaction and the prefix the model sees stays the same between
    compactions (its prompt cache keeps hitting). The request's system prompt and tools count
    in the trigger and the budget. A plain callable runs on every call.

    The agent's state is never modified; ``last_tokens`` holds ``(before, after)`` estimated
    tokens (system prompt and tools included) of the latest call; ``compactions`` counts them.
    """

    def __init__(
        self,
        compactor: Any = None,
        *,
        model: str | BaseChatModel | None = None,
        trigger: Any = None,
        keep: Any = None,
        budget: int | None = None,
        strategy: str = "hybrid",
        context_window: int | None = None,
        pricing_model: str | None = None,
        provider: str = "openai",
        recoverable: bool = False,
    ) -> None:
        super().__init__()
        if compactor is None:
            if trigger is None and context_window is None:
                raise TypeError("pass a compactor, or trigger= (e.g. ('tokens', 100_000)) or context_window=")
            compactor = Compactor(
                provider=provider, model=pricing_model, context_window=context_window, budget=budget,
                trigger=trigger, keep=keep, strategy=strategy,  # type: ignore[arg-type]
                summarizer=_summarizer_for(model), recoverable=recoverable)
            self.model: str | None = pricing_model
        else:
            if not isinstance(model, (str, type(None))):
                raise TypeError("with a compactor, model= is the model name estimates are priced for")
            if recoverable:
                raise TypeError("with a compactor, recoverable= is the Compactor's own: Compactor(recoverable=True)")
            self.model = model
        require_budget(compactor, "ContextFoldMiddleware")
        self.compactor = compactor
        self.provider = provider
        self.last_tokens: tuple[int, int] | None = None
        self.compactions = 0
        #: The last compaction that changed a history (its ``notes``, ``summary``,
        #: ``fallback_used``), None before the first.
        self.last: CompactionResult | None = None
        self._lock = threading.Lock()
        # Latest compaction per conversation: (messages it was made from, messages it sent, the
        # Compactor that made it).
        self._folds: OrderedDict[int, tuple[list[Any], list[Any], Any]] = OrderedDict()
        self._bound = BoundCompactors(compactor) if isinstance(compactor, Compactor) else None
        #: Tools the agent registers with this middleware (``create_agent`` reads them): the
        #: recall tool for a recoverable Compactor.
        self.tools: list[BaseTool] = [self._recall_tool()] if isinstance(compactor, Compactor) \
            and compactor.recoverable else []

    # -- the shared logic ----------------------------------------------------------------------

    def _bind(self, request: ModelRequest) -> tuple[Any, Any, list[dict[str, Any]] | None]:
        """The compactor that counts the request's system prompt and tools (a copy of the
        Compactor per system prompt and tool set, so concurrent requests never read each
        other's), with the two."""
        system, tools = _system_of(request), _tools_of(request)
        c = self.compactor
        if self._bound is not None:
            c = self._bound.get(system, tools)
        return c, system, tools

    def _fold_of(self, sent: list[Any]) -> tuple[int | None, list[Any], Any]:
        """The last compaction's key, its messages plus what was appended since, and the
        Compactor that made it, when ``sent`` extends the history that compaction was made from
        (else ``(None, sent, None)``)."""
        with self._lock:
            for key, (source, out, made_by) in reversed(self._folds.items()):
                n = len(source)
                if len(sent) >= n and all(a is b or a == b for a, b in zip(sent, source)):
                    self._folds.move_to_end(key)
                    return key, out + sent[n:], made_by
        return None, sent, None

    def _remember(self, key: int | None, sent: list[Any], out: list[Any], made_by: Any) -> None:
        with self._lock:
            if key is not None:
                self._folds.pop(key, None)
            self._folds[id(sent)] = (sent, out, made_by)
            while len(self._folds) > MAX_REMEMBERED:
                self._folds.popitem(last=False)

    def _estimate(self, messages: list[Any], system: Any, tools: Any) -> int:
        c = self.compactor
        provider = c.provider if isinstance(c, Compactor) else self.provider
        model = c.model if isinstance(c, Compactor) else self.model
        return contextfold.estimate(messages, provider=provider, model=model, system=system, tools=tools)  # type: ignore[arg-type]

    def _plan(self, request: ModelRequest) -> tuple[Any, list[Any], list[Any], int | None, bool, Any, Any]:
        """(the compactor, sent, what to send or compact, fold key, compact now?, system, tools)."""
        sent: list[Any] = list(request.messages)
        c, system, tools = self._bind(request)
        if not isinstance(c, Compactor):
            return c, sent, sent, None, True, system, tools
        key, effective, _ = self._fold_of(sent)
        return c, sent, effective, key, c.should_compact(effective), system, tools

    def _finish(self, request: ModelRequest, sent: list[Any], effective: list[Any], out: Any, key: int | None,
                compacted: bool, system: Any, tools: Any, made_by: Any = None) -> ModelRequest:
        changed = getattr(out, "changed", None)
        result = out if isinstance(out, CompactionResult) else getattr(out, "result", None)
        out = getattr(out, "messages", out)
        if not isinstance(out, list):
            raise TypeError(f"compactor must return a list of messages or an object with .messages, got {type(out).__name__}")
        if compacted and isinstance(self.compactor, Compactor) and changed:
            self.compactions += 1
            if isinstance(result, CompactionResult):
                self.last = result
            self._remember(key, sent, out, made_by)
        before = self._estimate(sent, system, tools)
        if out is sent or out == sent:
            self.last_tokens = (before, before)
            return request
        self.last_tokens = (before, self._estimate(out, system, tools))
        new: list[BaseMessage] = convert_to_messages(out)
        return request.override(messages=new)  # type: ignore[arg-type]

    @staticmethod
    def _back(out: Any, invalid: dict[str, Any]) -> Any:
        if not invalid:
            return out
        messages = getattr(out, "messages", out)
        if not isinstance(messages, list):
            return out  # (``_finish`` names what the compactor returned)
        return _Compacted(_calls_back_invalid(messages, invalid), getattr(out, "changed", None),
                          out if isinstance(out, CompactionResult) else None)

    @staticmethod
    def _run(c: Any, effective: list[Any]) -> Any:
        # (A compaction that cannot be made sends the history as it stands: ``folding``.)
        compact = getattr(c, "compact", None)
        history, invalid = _invalid_calls_as_calls(effective)
        try:
            out = compact(history) if callable(compact) else c(history)
        except CompactionError as e:
            not_compacted(e, "ContextFoldMiddleware")
            return effective
        return ContextFoldMiddleware._back(out, invalid)

    @staticmethod
    async def _arun(c: Any, effective: list[Any]) -> Any:
        compact_async = getattr(c, "compact_async", None)
        if not callable(compact_async):
            return ContextFoldMiddleware._run(c, effective)
        history, invalid = _invalid_calls_as_calls(effective)
        try:
            out = await compact_async(history)
        except CompactionError as e:
            not_compacted(e, "ContextFoldMiddleware")
            return effective
        return ContextFoldMiddleware._back(out, invalid)

    # -- recall --------------------------------------------------------------------------------

    def _recall_tool(self) -> BaseTool:
        """The ``contextfold_recall`` tool, declared with the core's own schema (the tool the
        Compactor prices in its budget), answered by ``_recall``."""
        spec = recall_tool("chat")["function"]

        # (Every argument optional: a call the model wrote wrong is answered with what was wrong
        # by ``Compactor.answer``, not refused by the tool node.)
        def contextfold_recall(runtime: ToolRuntime, id: Any = None, offset: Any = None,
                               max_tokens: Any = None) -> str:
            args = {k: v for k, v in (("id", id), ("offset", offset), ("max_tokens", max_tokens)) if v is not None}
            return self._recall(runtime, args)

        return StructuredTool.from_function(contextfold_recall, name=spec["name"], description=spec["description"],
                                            args_schema=spec["parameters"])

    def _recall(self, runtime: ToolRuntime, args: dict[str, Any]) -> str:
        """The page answering the model's recall call ``args``: the agent's history (the
        tool node's state) read as the model was sent it (the conversation's last compaction
        plus what was appended since), answered by the Compactor that made that compaction."""
        messages = list(runtime.state["messages"])
        _, effective, made_by = self._fold_of(messages)
        compactor = made_by if isinstance(made_by, Compactor) else self.compactor
        call = AIMessage(content="", tool_calls=[{"id": runtime.tool_call_id or "", "name": RECALL_TOOL, "args": args}])
        return str(compactor.answer(call, history=effective).content)

    # -- the hooks -----------------------------------------------------------------------------

    def wrap_model_call(self, request: ModelRequest, handler: Callable[[ModelRequest], ModelResponse]) -> ModelResponse:
        c, sent, effective, key, now, system, tools = self._plan(request)
        out = self._run(c, effective) if now else effective
        return handler(self._finish(request, sent, effective, out, key, now, system, tools, c))

    async def awrap_model_call(
        self, request: ModelRequest, handler: Callable[[ModelRequest], Awaitable[ModelResponse]]
    ) -> ModelResponse:
        c, sent, effective, key, now, system, tools = self._plan(request)
        out = await self._arun(c, effective) if now else effective
        return await handler(self._finish(request, sent, effective, out, key, now, system, tools, c))
