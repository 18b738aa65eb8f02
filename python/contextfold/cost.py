"""What a compaction costs in money: a per-model price and prompt-cache table, and the predicted
effect of a `CompactionResult` on the bill (the summarizer call, the cached prefix it
invalidates, what it saves on every later turn).

Prices are list prices in USD per million tokens, as the providers publish them (sources on each
row); they change: pass your own `Prices` (or a whole table) to override. A compaction rewrites
the history from its first changed message on, so the next request writes that part to the
prompt cache again: on Anthropic a cache write costs more than plain input (1.25x for the
5-minute cache, 2x for the 1-hour one), so a compaction can shrink the prompt and still raise the
bill until enough turns have read the smaller prompt back.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from contextfold import _core

__all__ = ["CompactionCost", "PRICES", "Prices", "compaction_cost", "prices_for"]


@dataclass(frozen=True, slots=True)
class Prices:
    """One model's prices, USD per million tokens, and its prompt cache.

    ``cached_read``: input read from the prompt cache; ``cache_write``: input written to it
    (Anthropic's 5-minute cache write; OpenAI and Gemini cache implicitly, at the input price);
    ``ttl_s``: how long an unused cached prefix stays warm (seconds).
    """

    input: float
    cached_read: float
    cache_write: float
    output: float
    ttl_s: int = 300
    source: str = ""


_OPENAI = "https://openai.com/api/pricing (cached input: the prompt caching guide, platform.openai.com/docs/guides/prompt-caching: 5-10 minutes idle)"
_ANTHROPIC = ("https://platform.claude.com/docs/en/about-claude/pricing (model pricing table: base input, 5m cache "
              "writes, cache hits, output; cache writes 1.25x input for 5 minutes, reads 0.1x: "
              "docs.claude.com/en/docs/build-with-claude/prompt-caching)")
_GEMINI = "https://ai.google.dev/gemini-api/docs/pricing (implicit caching: ai.google.dev/gemini-api/docs/caching)"

#: List prices by model name; a row prices its own model and that model's dated snapshots
#: (``gpt-4o-2024-08-06``, ``claude-sonnet-4-5-20250929``), never a sibling (``o3`` is not
#: ``o3-mini``). Override any row, or pass ``prices=``.
PRICES: dict[str, Prices] = {
    "gpt-4o-mini": Prices(0.15, 0.075, 0.15, 0.60, 300, _OPENAI),
    "gpt-4o": Prices(2.50, 1.25, 2.50, 10.00, 300, _OPENAI),
    "gpt-4.1-nano": Prices(0.10, 0.025, 0.10, 0.40, 300, _OPENAI),
    "gpt-4.1-mini": Prices(0.40, 0.10, 0.40, 1.60, 300, _OPENAI),
    "gpt-4.1": Prices(2.00, 0.50, 2.00, 8.00, 300, _OPENAI),
    "gpt-5-nano": Prices(0.05, 0.005, 0.05, 0.40, 300, _OPENAI),
    "gpt-5-mini": Prices(0.25, 0.025, 0.25, 2.00, 300, _OPENAI),
    "gpt-5": Prices(1.25, 0.125, 1.25, 10.00, 300, _OPENAI),
    "o4-mini": Prices(1.10, 0.275, 1.10, 4.40, 300, _OPENAI),
    "o3": Prices(2.00, 0.50, 2.00, 8.00, 300, _OPENAI),
    # Anthropic's model pricing table (_ANTHROPIC) lists each of these models on its own row.
    "claude-opus-4-6": Prices(5.00, 0.50, 6.25, 25.00, 300, _ANTHROPIC),
    "claude-opus-4-5": Prices(5.00, 0.50, 6.25, 25.00, 300, _ANTHROPIC),
    "claude-opus-4-1": Prices(15.00, 1.50, 18.75, 75.00, 300, _ANTHROPIC),
    "claude-opus-4": Prices(15.00, 1.50, 18.75, 75.00, 300, _ANTHROPIC),
    "claude-sonnet-4-6": Prices(3.00, 0.30, 3.75, 15.00, 300, _ANTHROPIC),
    "claude-sonnet-4-5": Prices(3.00, 0.30, 3.75, 15.00, 300, _ANTHROPIC),
    "claude-sonnet-4": Prices(3.00, 0.30, 3.75, 15.00, 300, _ANTHROPIC),
    "claude-3-7-sonnet": Prices(3.00, 0.30, 3.75, 15.00, 300, _ANTHROPIC),
    "claude-haiku-4-5": Prices(1.00, 0.10, 1.25, 5.00, 300, _ANTHROPIC),
    "claude-3-5-haiku": Prices(0.80, 0.08, 1.00, 4.00, 300, _ANTHROPIC),
    "gemini-2.5-pro": Prices(1.25, 0.31, 1.25, 10.00, 300, _GEMINI),
    "gemini-2.5-flash": Prices(0.30, 0.075, 0.30, 2.50, 300, _GEMINI),
    "gemini-3-pro-preview": Prices(2.00, 0.20, 2.00, 12.00, 300, _GEMINI),
}

# A provider's dated snapshot of one model: OpenAI's "-2024-08-06", Anthropic's "-20250929" and
# "-latest" alias. Anything else after a row's name (-mini, -pro, -lite, -nano) is another model.
_SNAPSHOT = re.compile(r"-(?:\d{4}-\d{2}-\d{2}|\d{8}|latest)$")
# Dated ids that are NOT priced as their base model: OpenAI's pricing page lists gpt-4o-2024-05-13
# on its own row at its own (higher) price, which we have no cited figure for: unknown, not gpt-4o.
_OWN_PRICE_SNAPSHOTS = frozenset({"gpt-4o-2024-05-13"})
# Amazon Bedrock's Claude ids: [region.]anthropic.<model>[-vN[:M]] (us., eu., apac., global., ...).
_BEDROCK = re.compile(r"^(?:[a-z]{2,6}\.)?anthropic\.(claude-[a-z0-9.-]+?)(?:-v\d+(?::\d+)?)?$")


def _base_name(model: str) -> tuple[str, bool]:
    """``model`` without routing prefixes (``openai/``, ``bedrock/``, an ARN's path), lower case,
    Claude's dotted versions spelled with dashes (OpenRouter's ``claude-sonnet-4.5``); and True
    when it is an Amazon Bedrock id."""
    base = model.rsplit("/", 1)[-1].lower()
    bedrock = _BEDROCK.match(base)
    if bedrock:
        base = bedrock.group(1)
    if base.startswith("claude-"):
        base = re.sub(r"(?<=\d)\.(?=\d)", "-", base)
    return base, bedrock is not None


def prices_for(model: str, table: Mapping[str, Prices] | None = None) -> Prices:
    """The prices of ``model`` from ``table`` (default `PRICES`): the row named exactly as the
    model (routing prefixes such as ``openai/`` removed), or the row of the model a dated
    snapshot id belongs to (``gpt-4o-2024-08-06`` -> ``gpt-4o``). A sibling is never used
    (``o3-mini`` is not priced as ``o3``). Raises ``KeyError`` naming the model when no row
    matches (pass ``prices=``).

    Amazon Bedrock ids (``us.anthropic.claude-sonnet-4-...-v1:0``, ``bedrock/...``) resolve to
    their model as `model_info` does, but the default table has no Bedrock prices: Bedrock
    publishes its own, per region and endpoint, so they raise ``KeyError`` unless ``table`` has
    a row for the id itself."""
    rows = PRICES if table is None else table
    full = model.rsplit("/", 1)[-1].lower()
    if table is not None and full in rows:
        return rows[full]
    base, bedrock = _base_name(model)
    if bedrock and table is None:
        raise KeyError(f"no prices for Bedrock model {model!r} ({base} on Amazon Bedrock): Bedrock sets its own "
                       "prices per region and endpoint; pass your own Prices, or add a row for this id")
    if base in rows:
        return rows[base]
    snapshot_of = _SNAPSHOT.sub("", base)
    if snapshot_of != base and snapshot_of in rows and base not in _OWN_PRICE_SNAPSHOTS:
        return rows[snapshot_of]
    raise KeyError(f"no prices for model {model!r}: pass your own Prices, or add a row to the table")


@dataclass(frozen=True, slots=True)
class CompactionCost:
    """A compaction's predicted effect on the bill, in USD (positive: money spent).

    ``summarizer_call``: the summarizer's input and output (0 for the extractive summarizer);
    ``next_turn_extra``: what the first request after the compaction costs beyond the same
    request without it (the rewritten part is written to the cache again instead of read from
    it; negative when the smaller prompt already pays); ``saved_per_turn``: what every later
    request saves (the removed tokens, read from a warm cache or, cold, written to it again);
    ``prefix_tokens``: the tokens that stay cached (system prompt, tool definitions and the
    messages before the first changed one).
    """

    summarizer_call: float
    next_turn_extra: float
    saved_per_turn: float
    prefix_tokens: int
    prices: Prices

    def net(self, turns: int) -> float:
        """USD the compaction costs over the next ``turns`` requests (negative: it saves)."""
        if turns < 1:
            return self.summarizer_call
        return self.summarizer_call + self.next_turn_extra - self.saved_per_turn * (turns - 1)

    @property
    def break_even_turns(self) -> int | None:
        """Requests after which the compaction has paid for itself (None: never)."""
        if self.net(1) <= 0:
            return 1
        if self.saved_per_turn <= 0:
            return None
        return 1 + int(-(-(self.summarizer_call + self.next_turn_extra) // self.saved_per_turn))


def _summarizer_prices(model: str) -> Prices:
    try:
        return prices_for(model)
    except KeyError as e:
        raise KeyError(f"no prices for the summarizer's model {model!r}: pass summarizer_prices= (a local model: "
                       "Prices of 0), or llm_summary=False to leave its call out") from e


def compaction_cost(
    result: Any,
    *,
    model: str,
    provider: str = "openai",
    prices: Prices | None = None,
    warm: bool = True,
    llm_summary: bool | None = None,
    summarizer_reuses_cache: bool = False,
    summary_output_tokens: int | None = None,
    same_model_summarizer: bool | None = None,
    summarizer_prices: Prices | None = None,
) -> CompactionCost:
    """The predicted money effect of ``result`` (a `CompactionResult`) on ``model``'s bill, in USD.

    ``warm``: the conversation's cached prefix is still in the provider's cache (a request within
    its TTL); cold (False): requests come further apart than the TTL, so every one, with or
    without the compaction, writes its whole prompt to the cache again (Anthropic's write price;
    OpenAI and Gemini: the input price).

    The summarizer call: where ``result.summarizer_usage`` holds what its model calls were
    billed (an `LLMSummarizer` reports it: every call, retries and refused replies included),
    those tokens are priced at ``summarizer_prices`` (default: the summarizer model's row of
    the table; ``KeyError`` naming it when there is none, a local model say: pass
    ``summarizer_prices=``); ``llm_summary=False`` prices no call. Without a usage,
    ``llm_summary=True`` predicts it: the folded tokens in and the summary out, at ``model``'s
    prices (was the only way, and it priced the call ~3.3x low: the prompt is the transcript
    and the template besides the folded tokens); the extractive summarizer costs nothing. The
    summarizer's input is priced as uncached input: `LLMSummarizer` sends its own system prompt
    and a transcript, which share no prefix with the conversation's cache. ``summarizer_reuses_cache``:
    the summarizer sends the conversation's own cached prefix (for example the same request with
    a summarize instruction appended), so its input is read at the cached price when warm. The
    summary's output tokens default to the estimate of ``result.summary``.
    ``same_model_summarizer``: the earlier name of ``summarizer_reuses_cache`` (deprecated).

    The cached prefix that survives is the request overhead (system prompt and tool definitions,
    sent first) plus the messages before the first changed one; a result that changed nothing
    costs and saves nothing.
    """
    if same_model_summarizer is not None:
        warnings.warn("compaction_cost(same_model_summarizer=) is now summarizer_reuses_cache=",
                      DeprecationWarning, stacklevel=2)
        summarizer_reuses_cache = same_model_summarizer
    p = prices or prices_for(model)
    per = 1e-6
    before, after = int(result.tokens_before), int(result.tokens_after)
    changed = [*result.removed, *(x.index for x in result.pruned)]
    if not changed and after == before:
        # Nothing rewritten: the next request is byte-identical, so it reads the same cache.
        return CompactionCost(0.0, 0.0, 0.0, before, p)
    first = min(changed) if changed else len(result.messages)
    # The messages before the first change are the caller's own, unchanged; everything after is
    # new. tokens_after counts system and tools too, so the prefix is what the new tail leaves.
    tail = result.messages[first:]
    tail_tokens = int(_core.estimate(tail, provider=provider, model=model)) if tail else 0  # type: ignore[arg-type]
    prefix = max(0, min(after - tail_tokens, after, before))
    # Like with like: warm, the kept prefix is read and the rest written where, without the
    # compaction, all of it would have been read; cold, both requests write their whole prompt.
    read = p.cached_read if warm else p.cache_write
    summary = 0.0
    usage = getattr(result, "summarizer_usage", None)
    if usage is not None and llm_summary is not False:
        sp = summarizer_prices or _summarizer_prices(usage.model)
        summary_read = sp.cached_read if (summarizer_reuses_cache and warm) else sp.input
        summary = (usage.input_tokens * summary_read + usage.output_tokens * sp.output) * per
    elif result.summary and llm_summary:
        out = summary_output_tokens
        if out is None:
            out = int(_core.estimate([{"role": "assistant", "content": result.summary}], provider=provider, model=model))  # type: ignore[arg-type]
        folded = max(0, before - after + out)
        summary_read = p.cached_read if (summarizer_reuses_cache and warm) else p.input
        summary = (folded * summary_read + out * p.output) * per
    if warm:
        with_it = prefix * p.cached_read + (after - prefix) * p.cache_write
        without = before * p.cached_read
    else:
        with_it = after * p.cache_write
        without = before * p.cache_write
    return CompactionCost(summary, (with_it - without) * per, (before - after) * read * per, prefix, p)
