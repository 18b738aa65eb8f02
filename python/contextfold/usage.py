"""A provider's usage, read whole: the prompt the request cost, its cached part, and the prompt
a server-side compaction saw.

Every provider reports prompt tokens in its own shape; `usage_of` reads them all into one
`Usage` (SDK objects or dicts, the usage itself or the whole response).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from contextfold._args import HUGE
from contextfold.errors import InvalidUsageError

__all__ = ["Usage", "prompt_tokens_of", "usage_of"]

_MISSING = object()

#: Usage objects nest a few levels at most (response -> usage -> details).
_MAX_USAGE_DEPTH = 8


@dataclass(frozen=True, slots=True)
class Usage:
    """One response's prompt usage, in the provider's tokens.

    ``prompt_tokens``: what the request as sent cost (cached tokens included; None when the
    provider does not say). ``cache_read_tokens`` / ``cache_write_tokens``: its part read from /
    written to the prompt cache (OpenAI ``cached_tokens`` / ``cache_write_tokens`` of
    ``prompt_tokens_details`` (chat) or ``input_tokens_details`` (Responses), Anthropic
    ``cache_read_input_tokens`` / ``cache_creation_input_tokens``, Gemini
    ``cachedContentTokenCount``, Bedrock ``cacheReadInputTokens`` / ``cacheWriteInputTokens``).
    With Anthropic's ``usage.iterations`` (server-side tool loops, the advisor tool,
    compaction, fallback), ``prompt_tokens`` and the cache parts are the FIRST iteration's, the
    request as sent (the top-level counts sum the executor's iterations: 2,411 tokens for a
    1,128-token request that consulted the advisor). ``compacted_prompt_tokens``: when an
    iteration is a ``compaction``, the prompt the model answered from after (the last)
    compacting, the next executor iteration's; None when the response stopped at the
    compaction.
    """

    prompt_tokens: int | None
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    compacted_prompt_tokens: int | None = None
    model: str | None = None


def _get(obj: Any, path: str, *names: str) -> Any:
    """The first of ``names`` present on a dict key or object attribute (its value may be None).

    An attribute whose getter raises (a broken SDK property) becomes an ``InvalidUsageError``
    naming it, with the original exception chained.
    """
    for n in names:
        if isinstance(obj, Mapping):
            # Any Mapping reads as the dict it holds (types.MappingProxyType, a frozen dict).
            try:
                if n in obj:
                    return obj[n]
            except Exception as e:
                raise InvalidUsageError(f"reading {n!r} raised {type(e).__name__}: {e}", f"{path}.{n}") from e
        else:
            try:
                v = getattr(obj, n, _MISSING)
            except Exception as e:
                raise InvalidUsageError(f"reading {n!r} raised {type(e).__name__}: {e}", f"{path}.{n}") from e
            if v is not _MISSING:
                return v
    return _MISSING


def _tokens(v: Any, path: str) -> int | None:
    """A token count: a non-negative int (an integral float from a JSON decoder is accepted)."""
    if v is _MISSING or v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise InvalidUsageError(f"token count must be an int, got {type(v).__name__}", path)
    if isinstance(v, float):
        if not (v.is_integer() and v >= 0):
            raise InvalidUsageError(f"token count must be a non-negative integer, got {v!r}", path)
        v = int(v)
    if v < 0:
        raise InvalidUsageError(f"token count must be >= 0, got {v}", path)
    if v > HUGE:
        # A cache part is not added to the prompt count (OpenAI's cached_tokens), so the
        # session's bound on the prompt would not see it.
        raise InvalidUsageError(f"token count {v} beyond any context window", path)
    return int(v)


def _field(obj: Any, path: str, *names: str) -> int:
    """The first present count of ``names`` (0 when none is)."""
    for n in names:
        v = _tokens(_get(obj, path, n), f"{path}.{n}")
        if v is not None:
            return v
    return 0


def prompt_tokens_of(usage: Any) -> tuple[int | None, str | None]:
    """``(prompt tokens, model)`` from a provider's usage, or its whole response.

    Accepts SDK objects or dicts: OpenAI chat ``usage.prompt_tokens`` (cached tokens included),
    OpenAI Responses ``usage.input_tokens``, Anthropic ``input_tokens + cache_creation_input_tokens
    + cache_read_input_tokens`` (``input_tokens`` alone excludes the cache; with
    ``usage.iterations``, those of the first iteration, whatever its type: the request as sent,
    not the sum over a server-side loop or the prompt left after a compaction), Gemini
    ``usageMetadata.promptTokenCount`` (``usage_metadata.prompt_token_count`` in the SDK), Bedrock
    Converse ``inputTokens + cacheReadInputTokens + cacheWriteInputTokens``, Ollama
    ``prompt_eval_count`` (the whole prompt; ABSENT when served from the KV cache, which gives
    ``None``: unknown, not 0), or a plain int. The model is read from a whole response's ``model``
    (``modelVersion`` for Gemini) when present. Raises ``TypeError`` for an unrecognized shape,
    ``InvalidUsageError`` (a ValueError, with ``.path``) for a usage that contains itself, a
    count that is not a non-negative int (a bool included), or an attribute that raises.
    """
    u = usage_of(usage)
    return u.prompt_tokens, u.model


def usage_of(usage: Any) -> Usage:
    """A provider's usage (or whole response, or a plain int of prompt tokens) read whole: see
    `Usage` and `prompt_tokens_of` for the shapes; same errors."""
    if isinstance(usage, bool):
        raise TypeError("usage must be a usage object, a response or an int, got bool")
    return _usage(usage, "usage", [])


def _anthropic(usage: Any, path: str, base: int) -> Usage:
    read = _field(usage, path, "cache_read_input_tokens")
    write = _field(usage, path, "cache_creation_input_tokens")
    iterations = _get(usage, path, "iterations")
    if not isinstance(iterations, (list, tuple)) or not iterations:
        return Usage(base + read + write, read, write)
    # ``usage.iterations`` lists every sampling iteration of the request in order. The top-level
    # counts sum the executor's own iterations and leave compaction out (Anthropic: "A
    # `compaction` entry's tokens are not included in the top-level `usage` fields", BetaUsage
    # docstring, anthropic SDK 2.14; advisor tool usage,
    # https://platform.claude.com/docs/en/agents-and-tools/tool-use/advisor-tool), so after a
    # server-side loop they are no prompt of ours: the recorded advisor exchange
    # (replay test_anthropic_advisor_tool_stream.yaml#0) has iterations [message 1,128,
    # advisor_message 2,543, message 1,283] and top-level 2,411, while message_start said 1,128.
    # The first iteration, whatever its type, read the request exactly as sent: a compaction
    # summarizing it (recorded [compaction 55,196, message 220], top-level 220), the executor's
    # first turn, a declined model before a fallback.
    first = _iteration_prompt(iterations[0], f"{path}.iterations[0]")
    if first is None:
        return Usage(base + read + write, read, write)
    sent, i_read, i_write = first
    last_compaction = None
    for j, it in enumerate(iterations):
        if _get(it, f"{path}.iterations[{j}]", "type") == "compaction":
            last_compaction = j
    if last_compaction is None:
        return Usage(sent, i_read, i_write)
    # After compacting, the model answered from the summary: the next iteration of the executor
    # (an advisor's sub-inference reads its own transcript). A server-side tool loop can grow the
    # context past the trigger mid-request (the same docstring: each compaction entry "closes a
    # context", which "can exceed it by the final iteration's output and tool results"), so a
    # compaction can come after message iterations, and more than once: the last one counts.
    # A compaction's own count can be mostly cache reads (recorded [compaction 100 + 55,096
    # read, message 181]), hence input + cache read + cache write, as for any prompt.
    compacted = None
    for j in range(last_compaction + 1, len(iterations)):
        jpath = f"{path}.iterations[{j}]"
        if _get(iterations[j], jpath, "type") != "advisor_message":
            after = _iteration_prompt(iterations[j], jpath)
            compacted = None if after is None else after[0]
            break
    return Usage(sent, i_read, i_write, compacted)


def _iteration_prompt(it: Any, path: str) -> tuple[int, int, int] | None:
    """``(prompt tokens, cache read, cache write)`` of one ``usage.iterations`` entry; None
    when it carries no ``input_tokens`` (then the top-level counts are all there is)."""
    if it is None or isinstance(it, (bool, int, float, str)):
        return None
    fresh = _tokens(_get(it, path, "input_tokens"), f"{path}.input_tokens")
    if fresh is None:
        return None
    i_read = _field(it, path, "cache_read_input_tokens")
    i_write = _field(it, path, "cache_creation_input_tokens")
    return fresh + i_read + i_write, i_read, i_write


def _usage(usage: Any, path: str, seen: list[int]) -> Usage:
    if usage is None:
        return Usage(None)
    if isinstance(usage, int) and not isinstance(usage, bool):
        if usage < 0:
            raise InvalidUsageError(f"prompt tokens must be >= 0, got {usage}", path)
        return Usage(usage)
    if id(usage) in seen:
        raise InvalidUsageError("a usage object that contains itself (cycle)", path)
    if len(seen) >= _MAX_USAGE_DEPTH:
        raise InvalidUsageError(f"usage nested deeper than {_MAX_USAGE_DEPTH} levels", path)
    seen = [*seen, id(usage)]
    model = _get(usage, path, "model", "modelVersion", "model_version")
    model = model if isinstance(model, str) else None
    gemini = _get(usage, path, "usageMetadata", "usage_metadata")
    if gemini is not _MISSING and gemini is not None:
        gpath = f"{path}.usageMetadata"
        if isinstance(gemini, (bool, int, float, str, bytes, list, tuple)):
            # Read as an object it would hold no count, and the usage would pass as unknown.
            raise InvalidUsageError(f"expected Gemini's usage metadata object, got {type(gemini).__name__}", gpath)
        if id(gemini) in seen:
            raise InvalidUsageError("a usage object that contains itself (cycle)", gpath)
        tokens = _tokens(_get(gemini, gpath, "promptTokenCount", "prompt_token_count"), f"{gpath}.promptTokenCount")
        cached = _field(gemini, gpath, "cachedContentTokenCount", "cached_content_token_count")
        return Usage(tokens, cached, 0, None, model)
    inner = _get(usage, path, "usage")
    if inner is not _MISSING and inner is not None and not isinstance(inner, (int, str)):
        u = _usage(inner, f"{path}.usage", seen)
        return Usage(u.prompt_tokens, u.cache_read_tokens, u.cache_write_tokens, u.compacted_prompt_tokens, model)
    # A Responses stream's last event (``response.completed``, and the failed or incomplete
    # ones) holds the response, whose usage it is.
    wrapped = _get(usage, path, "response")
    if wrapped is not _MISSING and wrapped is not None and not isinstance(wrapped, (bool, int, float, str, bytes)):
        u = _usage(wrapped, f"{path}.response", seen)
        return Usage(u.prompt_tokens, u.cache_read_tokens, u.cache_write_tokens, u.compacted_prompt_tokens,
                     u.model or model)
    # Ollama: the final (done) object of /api/chat or /api/generate.
    ollama = _get(usage, path, "prompt_eval_count")
    if ollama is not _MISSING:
        return Usage(_tokens(ollama, f"{path}.prompt_eval_count"), model=model)
    if _get(usage, path, "eval_count", "done", "total_duration") is not _MISSING:
        return Usage(None, model=model)  # an Ollama response without prompt_eval_count: unknown
    for key in ("promptTokenCount", "prompt_token_count", "prompt_tokens"):
        v = _get(usage, path, key)
        if v is not _MISSING and v is not None:
            if key == "prompt_tokens":
                read, write = _openai_cache(usage, path)
            else:
                # Gemini's usage itself (``response.usage_metadata``, REST ``usageMetadata``):
                # its cached part sits beside the prompt count, as in a whole response.
                read = _field(usage, path, "cachedContentTokenCount", "cached_content_token_count")
                write = 0
            return Usage(_tokens(v, f"{path}.{key}"), read, write, None, model)
    v = _get(usage, path, "input_tokens")
    if v is not _MISSING and v is not None:
        base = _tokens(v, f"{path}.input_tokens") or 0
        if _get(usage, path, "cache_creation_input_tokens", "cache_read_input_tokens", "iterations") is not _MISSING:
            u = _anthropic(usage, path, base)
            return Usage(u.prompt_tokens, u.cache_read_tokens, u.cache_write_tokens, u.compacted_prompt_tokens, model)
        # OpenAI Responses: input_tokens already include cached tokens.
        read, write = _openai_cache(usage, path, "input_tokens_details")
        return Usage(base, read, write, None, model)
    v = _get(usage, path, "inputTokens")
    if v is not _MISSING and v is not None:
        base = _tokens(v, f"{path}.inputTokens") or 0
        read = _field(usage, path, "cacheReadInputTokens")
        write = _field(usage, path, "cacheWriteInputTokens")
        return Usage(base + read + write, read, write, None, model)
    if inner is None or gemini is None or any(_get(usage, path, k) is None for k in _PROMPT_COUNT_KEYS):
        # A count, or the whole usage, the server left null (a stream's chunks before the last
        # carry `usage: null`; some OpenAI-compatible servers null the count itself): unknown,
        # as an Ollama response without prompt_eval_count is.
        return Usage(None, model=model)
    raise TypeError(f"unrecognized usage object: {type(usage).__name__} ({path} holds none of "
                    f"{', '.join(_PROMPT_COUNT_KEYS)})")


#: The keys a usage object carries its prompt count under, in one API or another.
_PROMPT_COUNT_KEYS = ("prompt_tokens", "input_tokens", "inputTokens", "promptTokenCount", "prompt_token_count",
                      "prompt_eval_count")


def _openai_cache(usage: Any, path: str, details: str = "prompt_tokens_details") -> tuple[int, int]:
    """OpenAI's cached prompt tokens ``(read, written)``: ``cached_tokens`` and
    ``cache_write_tokens`` of ``prompt_tokens_details`` (chat) or ``input_tokens_details``
    (Responses), 0 when absent."""
    d = _get(usage, path, details)
    if d is _MISSING or d is None or isinstance(d, (int, str)):
        return 0, 0
    dpath = f"{path}.{details}"
    # Both are parts of prompt_tokens / input_tokens, not additions to them (openai SDK 3.57,
    # CompletionUsage.PromptTokensDetails and ResponseUsage.InputTokensDetails: "The number of
    # input tokens that were written to the cache"; recorded through OpenRouter from Claude:
    # prompt 3,329 = 3,211 read + 115 written + 3).
    return _field(d, dpath, "cached_tokens"), _field(d, dpath, "cache_write_tokens")
