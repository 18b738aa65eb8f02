"""Exceptions raised by contextfold. All subclass ValueError, which callers already catch."""

from __future__ import annotations


class InvalidMessageError(ValueError):
    """A message of the history cannot be interpreted.

    ``index`` is the position of the offending message in the list passed in, ``field`` the
    path inside it (``"tool_calls[0].function"``, ``"content[2].image_url.url"``).
    """

    def __init__(self, reason: str, index: int, field: str) -> None:
        self.reason = reason
        self.index = index
        self.field = field
        where = f"message {index}" + (f", field {field!r}" if field else "")
        super().__init__(f"{where}: {reason}")

    def __reduce__(self) -> tuple[type[InvalidMessageError], tuple[str, int, str]]:
        # keep pickling (multiprocessing) working with three arguments
        return (type(self), (self.reason, self.index, self.field))


class UnknownModelError(ValueError):
    """A model name that contextfold cannot map to a tokenizer or a context window."""


class UnknownModelWarning(UserWarning):
    """A model name contextfold does not recognise (a typo like ``gpt4o``, a new model): its
    requests are priced with the provider's default constants. Filter it with
    ``warnings.filterwarnings("ignore", category=contextfold.UnknownModelWarning)``, or make it
    an error with ``strict=True``."""


class UnknownPricesWarning(UserWarning):
    """``Compactor(cache_aware=True)`` on a model without a row in ``contextfold.cost.PRICES``
    (an Amazon Bedrock id, a new model): the gate cannot weigh the cache-write premium, so it
    keeps a 5-minute TTL and ``clear_at_least`` 0. Pass ``cache_prices=Prices(...)``."""


class CompactionError(ValueError):
    """A compaction could not produce a history the provider would accept.

    ``failures`` lists what the final check found, as ``(kind, message index or -1, description)``
    tuples; kinds: ``orphan_call``, ``orphan_result``, ``duplicate_call_id``, ``role_collision``,
    ``first_turn_not_user``, ``invalid_arguments``, ``empty_message`` (no content, or text alone
    that the provider refuses: Anthropic's ``content: ""`` but in the final assistant turn),
    ``blank_text`` (a text block the provider refuses beside others: Anthropic's empty or
    whitespace-only text, Bedrock's empty text), ``empty_tool_calls`` (a chat turn sent with
    ``tool_calls: []``, which OpenAI refuses), ``trailing_whitespace`` (a final assistant turn
    whose text ends in whitespace, which Anthropic and Bedrock refuse), ``invalid_call_id`` (a call id the format's
    provider refuses: Anthropic and Bedrock take ``[a-zA-Z0-9_-]+``, Bedrock and Responses at most
    64 characters), ``over_budget``.
    """

    def __init__(self, message: str, failures: tuple[tuple[str, int, str], ...] = ()) -> None:
        self.failures = failures
        super().__init__(message)

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return (type(self), (self.args[0], self.failures))


class _InputFaultError(CompactionError, InvalidMessageError):
    """A fault the caller's history came in with, which the compacted history would still send:
    a ``CompactionError`` (``failures``: the compacted history's) and an ``InvalidMessageError``
    (``index``: the first such message in the list passed in, ``field``: what is wrong there).
    ``fault`` says what is wrong, ``advice`` how the library fixes it; the message is both (a
    caller without the library's options, the proxy, says the fault alone)."""

    def __init__(self, fault: str, advice: str, failures: tuple[tuple[str, int, str], ...], index: int,
                 field: str) -> None:
        self.fault, self.advice = fault, advice
        self.failures = failures
        self.reason = f"{fault}. {advice}"
        self.index = index
        self.field = field
        ValueError.__init__(self, self.reason)

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return (type(self), (self.fault, self.advice, self.failures, self.index, self.field))


class UnpairedToolCallsError(_InputFaultError):
    """The caller's history has a tool call without its result, or a result without its call,
    and the compacted history would still have it (a provider rejects it). Both a
    ``CompactionError`` (``failures``: the compacted history's) and an ``InvalidMessageError``:
    ``index`` is the first broken message in the list passed in, ``field`` what is broken there
    (``"tool_calls"``: a call without its result; ``"tool_call_id"``: a result without its
    call). ``Compactor(repair=True)`` or ``contextfold.repair()`` fixes it."""


class InvalidArgumentsError(_InputFaultError):
    """The caller's history has a tool call whose arguments are not valid JSON (a model's call
    cut off or malformed, recorded as it came: OpenAI chat ``function.arguments``, a Responses
    ``function_call`` item's ``arguments``), and the compacted history would still send it:
    servers that parse past arguments (vLLM, SGLang, proxies, some OpenAI-compatible providers)
    reject every later request that carries it. Both a ``CompactionError`` (``failures``: the
    compacted history's) and an ``InvalidMessageError``: ``index`` is the first such message in
    the list passed in, ``field`` ``"arguments"``. ``Compactor(repair=True)`` or
    ``contextfold.repair()`` keeps the text as a JSON string under ``"invalid_json"``."""


class CompactionBudgetError(CompactionError):
    """The budget cannot be met: what must stay verbatim (system, tools, the task, pinned
    messages, the last messages) already costs more. ``tokens`` is that floor, ``budget`` the
    target, both in the provider's tokens."""

    def __init__(self, message: str, *, tokens: int, budget: int) -> None:
        self.tokens = tokens
        self.budget = budget
        super().__init__(message, (("over_budget", -1, message),))

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return (_budget_error, (self.args[0], self.tokens, self.budget))


def _budget_error(message: str, tokens: int, budget: int) -> CompactionBudgetError:
    return CompactionBudgetError(message, tokens=tokens, budget=budget)


class SessionStateError(ValueError):
    """Bytes given to ``Session.from_state`` that cannot be continued from: written by another
    version of contextfold, corrupted (checksum mismatch), cut short, or self-contradictory.
    Never silently accepted: a session restored from them could give wrong numbers. Start a new
    ``Session`` (the estimate is then the uncalibrated heuristic until the next usage)."""


class InvalidUsageError(ValueError):
    """A usage object (``Session.record_usage``) that cannot be read: a container that
    contains itself, nesting beyond reason, or a token count that is not a non-negative int.
    ``path`` says where (``"usage.usage"``)."""

    def __init__(self, reason: str, path: str) -> None:
        self.reason = reason
        self.path = path
        super().__init__(f"{path}: {reason}")

    def __reduce__(self) -> tuple[type["InvalidUsageError"], tuple[str, str]]:
        return (type(self), (self.reason, self.path))


class SessionStoreError(ConnectionError):
    """A session store (``RedisSessionStore``) could not load or save a conversation's state:
    the server is unreachable or timed out (the redis-py error is chained as ``__cause__``), or
    every attempt of an update lost a race to other writers."""


class InternalError(RuntimeError):
    """A bug in contextfold, not in the input: the Rust core panicked. Raised instead of pyo3's
    ``PanicException`` (a ``BaseException`` that ``except Exception`` misses), with the core's
    message; ``where`` names the call. Please report it with the input that caused it."""

    def __init__(self, message: str, where: str) -> None:
        self.where = where
        super().__init__(f"contextfold internal error in {where}: {message} (please report it with the input)")

    def __reduce__(self) -> tuple[type["InternalError"], tuple[str, str]]:
        return (type(self), (str(self.args[0]), self.where))
