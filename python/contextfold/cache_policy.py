"""When a compaction is worth its cache break: the prompt cache's warmth and price, per model.

A compaction rewrites the history from its first changed message on; the next request writes that
part to the provider's prompt cache again (on Anthropic at 1.25x the input price, where reading
it back costs 0.1x). While the cached prefix is warm, compacting early mostly buys a cache write;
once it has gone cold the next request pays full input anyway, and compacting costs nothing
extra. `Compactor(cache_aware=True)` asks this policy.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

from contextfold.cost import Prices, prices_for
from contextfold.errors import UnknownPricesWarning

#: Later requests over which a compaction's cache write must pay back (`clear_at_least`).
PAYBACK_TURNS = 10
#: "The hard limit is near": the estimate is within this share of the usable window.
HARD_LIMIT_MARGIN = 0.05
#: With the default trigger (which sits at or above the nearly-full line: min(90% of the window,
#: window - output reserve)), the cold gate fires this share of the usable window below the
#: nearly-full line, so a warm cache has that span to defer in (gpt-4o: 81.6k to 91.2k tokens).
DEFER_SHARE = 0.10


@dataclass(slots=True)
class CachePolicy:
    """The cache of one conversation on one model. ``prices`` default to the model's row of
    `contextfold.cost.PRICES` (None when unknown: a 5-minute TTL and no premium assumed, said
    by an `UnknownPricesWarning` from `for_model`)."""

    prices: Prices | None
    clock: Callable[[], float] = time.monotonic
    _last: float | None = field(default=None, init=False)

    @classmethod
    def for_model(cls, model: str | None, prices: Prices | None = None, *, stacklevel: int = 2) -> CachePolicy:
        """The policy of ``model``: ``prices`` if given, else its row of the price table. A model
        without prices (an Amazon Bedrock id, a new model) warns: silently assuming no cache-write
        premium would make a warm Claude cache look free to break."""
        if prices is None:
            try:
                if not model:
                    raise KeyError("no model given")
                prices = prices_for(model)
            except KeyError as unknown:
                warnings.warn(f"cache_aware: {unknown.args[0]}; the gate assumes a 300-second TTL and no "
                              "cache-write premium (clear_at_least stays 0): pass cache_prices=Prices(...)",
                              UnknownPricesWarning, stacklevel=stacklevel + 1)
        return cls(prices)

    @property
    def ttl_s(self) -> float:
        return float(self.prices.ttl_s if self.prices else 300)

    def observe(self) -> bool:
        """Note a request about to be sent (the gate is asked before every model call); True when
        the previous one was within the cache's TTL, so its prefix is still cached."""
        now = self.clock()
        warm = self._last is not None and now - self._last < self.ttl_s
        self._last = now
        return warm

    def clear_at_least(self, budget: int) -> int:
        """Tokens a compaction must free to pay back its cache write within `PAYBACK_TURNS`
        requests: the rewritten prompt (about ``budget``) costs ``write - read`` more per token
        once, each freed token saves ``read`` per request. Anthropic's Sonnet: 1.15x the budget
        (compacting a warm cache rarely pays); gpt-4o: 0.1x."""
        p = self.prices
        if p is None or p.cached_read <= 0 or p.cache_write <= p.cached_read:
            return 0
        return math.ceil(budget * (p.cache_write - p.cached_read) / (p.cached_read * PAYBACK_TURNS))

    @staticmethod
    def hard_limit_near(tokens: int, usable: int | None) -> bool:
        """True when ``tokens`` is within `HARD_LIMIT_MARGIN` of the usable window (the
        nearly-full line, where the gate compacts even on a warm cache)."""
        return usable is not None and tokens >= usable * (1 - HARD_LIMIT_MARGIN)

    @staticmethod
    def cold_trigger(trigger: int, usable: int | None) -> int:
        """Tokens at which a cache-aware gate with the DEFAULT trigger fires (cold cache): the
        default trigger, but at least `DEFER_SHARE` of the usable window below the nearly-full
        line, so that a warm cache can defer between the two. An explicit trigger is kept as
        given (above the line it leaves no room to defer)."""
        if usable is None:
            return trigger
        return min(trigger, int(usable * (1 - HARD_LIMIT_MARGIN - DEFER_SHARE)))
