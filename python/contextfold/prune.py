"""Pruning of old tool output, applied without touching the caller's history.

The Rust core plans the edits (which tool results, images and arguments outside the protected
tail to replace); this module builds a NEW list in which only the edited messages are new
objects (shallow copies, with new inner lists/dicts along the edited path). Every other
message is the caller's own object, and nothing the caller holds is mutated.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from contextfold import _core
from contextfold._args import count_arg


def _as_dict(obj: Any) -> dict:
    """A shallow dict copy of a message or block (SDK objects: their JSON-mode dump)."""
    if isinstance(obj, dict):
        return dict(obj)
    dump = getattr(obj, "model_dump", None)
    if dump is not None:
        return dump(mode="json", exclude_none=True, by_alias=True)
    return {k: v for k, v in vars(obj).items() if not k.startswith("_") and v is not None}


def prune(
    messages: list,
    /,
    *,
    protect_tail_tokens: int,
    provider: str = "openai",
    model: str | None = None,
    protect_first_n: int = 1,
    min_tail: int = 3,
    soft_ceiling: float = 1.5,
    tool_result_max_tokens: int = 200,
    arguments_max_chars: int = 2000,
    prune_images: bool = True,
    dedupe: bool = True,
    cache_block_tokens: int = 0,
) -> list:
    """A new history where, outside the protected tail, old tool output is cut down.

    The tail (the last ``protect_tail_tokens`` estimated tokens, found by the same walk as
    ``find_tail_start``) and the first ``protect_first_n`` messages are kept as they are.
    Elsewhere: tool results costing more than ``tool_result_max_tokens`` tokens become a
    one-line placeholder naming the tool and the size; a tool result identical to a newer one
    becomes a pointer to it (``dedupe``); image parts become ``[image omitted: WxH]``
    (``prune_images``); tool-call arguments longer than ``arguments_max_chars`` characters are
    shrunk with ``shrink_json`` and stay valid JSON. With ``cache_block_tokens`` > 0 the pruned
    region only grows in whole blocks of that many tokens, so the prefix already sent stays
    byte-identical from turn to turn and the provider's prompt cache keeps hitting.

    Returns a new list; the caller's list and message objects are never modified. Edited
    SDK-object messages come back as dicts.
    """
    protect_tail_tokens = count_arg("protect_tail_tokens", protect_tail_tokens)
    protect_first_n = count_arg("protect_first_n", protect_first_n)
    min_tail = count_arg("min_tail", min_tail)
    tool_result_max_tokens = min(count_arg("tool_result_max_tokens", tool_result_max_tokens), 2**32 - 1)
    arguments_max_chars = count_arg("arguments_max_chars", arguments_max_chars)
    cache_block_tokens = count_arg("cache_block_tokens", cache_block_tokens)
    _, edits = _core.prune_plan(
        messages,
        protect_tail_tokens=protect_tail_tokens,
        provider=provider,
        model=model,
        protect_first_n=protect_first_n,
        min_tail=min_tail,
        soft_ceiling=soft_ceiling,
        tool_result_max_tokens=tool_result_max_tokens,
        arguments_max_chars=arguments_max_chars,
        prune_images=prune_images,
        dedupe=dedupe,
        cache_block_tokens=cache_block_tokens,
    )
    out = list(messages)
    copied: dict[int, dict] = {}
    parts_copied: set[int] = set()
    calls_copied: set[int] = set()

    def message(i: int) -> dict:
        if i not in copied:
            copied[i] = _as_dict(messages[i])
            out[i] = copied[i]
        return copied[i]

    def parts(i: int) -> list:
        m = message(i)
        key = "content" if m.get("content") is not None else "parts"
        if i not in parts_copied:
            m[key] = list(m[key])
            parts_copied.add(i)
        return m[key]

    for kind, i, slot, text in edits:
        if kind == "content":
            message(i)["content"] = text
        elif kind == "result_block":
            p = parts(i)
            block = _as_dict(p[slot])
            block["content"] = text
            p[slot] = block
        elif kind == "image":
            parts(i)[slot] = {"type": "text", "text": text}
        elif kind == "arguments":
            m = message(i)
            if "tool_calls" not in m and "arguments" in m:
                # An OpenAI Responses `function_call` item: the arguments are its own field.
                m["arguments"] = text
                continue
            if i not in calls_copied:
                m["tool_calls"] = [_as_dict(c) for c in m["tool_calls"]]
                calls_copied.add(i)
            call = m["tool_calls"][slot]
            call["function"] = dict(_as_dict(call["function"]), arguments=text)
        elif kind == "tool_use_input":
            p = parts(i)
            block = _as_dict(p[slot])
            block["input"] = json.loads(text)
            p[slot] = block
    return out


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
