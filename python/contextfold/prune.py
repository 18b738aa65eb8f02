"""Pruning of old tool output, applied without touching the caller's history.

The Rust core plans the edits (which tool results, images and arguments outside the protected
tail to replace) and writes each in the message's own wire format: a path inside the message
and the replacement value; the core also applies them copy-on-write, without knowing any
format: only the containers along an edited path are new objects (shallow copies); every other
message and value is the caller's own object, and nothing the caller holds is mutated. This
module supplies the copy of what is not a dict or list (SDK objects, LangChain messages).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, cast

from contextfold import _core
from contextfold._args import count_arg
from contextfold.panic_guard import no_panic

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from contextfold._core import _PruneKnobs, _Provider


def is_langchain_message(obj: Any) -> bool:
    """Whether ``obj`` is a LangChain ``BaseMessage`` (never imports LangChain: no such message
    exists before ``langchain_core`` is imported)."""
    base = sys.modules.get("langchain_core.messages.base")
    return base is not None and isinstance(obj, base.BaseMessage)


def _copy(obj: Any) -> Any:
    """A shallow, writable copy of a container on an edit's path.

    Dicts and lists are copied as they are, tuples become lists, a LangChain message stays a
    message of its own class (``model_copy``: its fields are edited by attribute, its ids and
    metadata kept), and other SDK objects become the dict of their fields by attribute name
    (the names the reader read them by).
    """
    if isinstance(obj, dict):
        return dict(obj)
    if isinstance(obj, (list, tuple)):
        return list(obj)
    if is_langchain_message(obj):
        return obj.model_copy()
    dump = getattr(obj, "model_dump", None)
    if dump is not None:
        return dump(mode="json", exclude_none=True)
    return {k: v for k, v in vars(obj).items() if not k.startswith("_") and v is not None}


def apply_edits(messages: Sequence[Any], edits: Iterable[Sequence[Any]]) -> list[Any]:
    """A new list with every edit applied copy-on-write; the caller's objects are never modified.

    Each edit is ``(message index, path, value, ...)`` as the core plans it (extra fields are
    ignored): ``value`` is the replacement (a new object built by the core) at ``path`` (a list
    of keys and list positions inside the message, in that message's wire format), or ``None``
    to remove the list element the path names (a block dropped whole; no edit writes a null).
    An empty path sets the message's own fields the value (a dict) names: Ollama's native images
    masked, ``content`` and ``images`` together. Removals are applied after every replacement, highest position first, so the positions the
    plan gave stay valid. Applied by the core (``prune`` applies its own plan the same way);
    containers other than dicts, lists and tuples are copied by `_copy`.
    """
    return _core.apply_edits(messages, list(edits), copy=_copy)


@no_panic
def prune(
    messages: list[Any],
    /,
    *,
    protect_tail_tokens: int,
    provider: str = "openai",
    model: str | None = None,
    **options: Unpack[_PruneKnobs],
) -> list[Any]:
    """A new history where, outside the protected tail, old tool output is cut down.

    The tail (the last ``protect_tail_tokens`` estimated tokens, found by the same walk as
    ``find_tail_start``: ``min_tail`` messages at least, default 3, one more when the tail
    stays within ``soft_ceiling`` times the budget, default 1.5) and the first
    ``protect_first_n`` messages (default 1) are kept as they are. Elsewhere: tool results
    costing more than ``tool_result_max_tokens`` tokens (default 200) become a one-line
    placeholder naming the tool and the size; a tool result identical to a newer one becomes a
    pointer to it (``dedupe``, default True); image parts become ``[image omitted: WxH]``
    (``prune_images``, default True); tool-call arguments longer than ``arguments_max_chars``
    characters (default 2000, at least 64) are shrunk with ``shrink_json`` and stay valid JSON.
    With ``cache_block_tokens`` > 0 (default 0) the pruned region only grows in whole blocks of
    that many tokens, so the prefix already sent stays byte-identical from turn to turn and the
    provider's prompt cache keeps hitting.

    Every edit is written in the history's own wire format (OpenAI chat or Responses,
    Anthropic, Gemini, Bedrock): a tool result's text where that format keeps it, an omitted
    image as a text part of that format, shortened arguments as a string (OpenAI) or an object
    (Anthropic, Gemini, Bedrock). No key is added, no call loses its result, and an edit is made
    only when it makes the request smaller in bytes and in estimated tokens.

    Counts are ints (a bool is a TypeError, a negative one a ValueError; huge ones mean "all of
    it"); an unknown knob is a TypeError. Returns a new list; the caller's list and message
    objects are never modified. Edited SDK-object messages come back as dicts; edited LangChain
    messages stay messages of their class (a copy: ids and metadata kept, the edited field
    replaced).
    """
    # The knobs are named, checked and defaulted once, by the core (`_core.PruneOptions`).
    knobs = _core.PruneOptions(protect_tail_tokens=protect_tail_tokens, **options)
    request = _core.PricedRequest(provider=cast("_Provider", provider), model=model)
    # Planned and applied by the core in one call (the same copy-on-write as `apply_edits`,
    # without building the plan's paths as Python objects); `_copy` copies what is not a dict,
    # list or tuple.
    return _core.prune(messages, request, knobs, copy=_copy)


@no_panic
def find_tail_start(
    messages: Sequence[Any],
    /,
    *,
    budget_tokens: int,
    protect_first_n: int = 1,
    min_tail: int = 3,
    soft_ceiling: float = 1.5,
    provider: str = "openai",
    model: str | None = None,
) -> int:
    """Index where the protected tail begins, walking back from the end by token budget (the
    same per-message estimate as ``estimate_each``); see ``contextfold._core.find_tail_start``
    for the rules. Counts are ints (a bool is a TypeError, a negative one a ValueError; huge
    ones mean "all of it")."""
    return _core.find_tail_start(
        messages,
        budget_tokens=count_arg("budget_tokens", budget_tokens),
        protect_first_n=count_arg("protect_first_n", protect_first_n),
        min_tail=count_arg("min_tail", min_tail),
        soft_ceiling=soft_ceiling,
        provider=provider,  # type: ignore[arg-type]
        model=model,
    )
