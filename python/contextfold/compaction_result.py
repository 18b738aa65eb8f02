"""What a compaction returns: the new history and what was done to it (frozen results)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["CompactionResult", "Pruned"]


@dataclass(frozen=True, slots=True)
class Pruned:
    """One masking edit: message ``index`` of the caller's list, what was shortened (``kind``:
    ``content``, ``result_block``, ``image``, ``arguments``, ``tool_use_input``, ``observation``,
    ``drop_part``),
    which block or call (``slot``) and the tokens it saved."""

    index: int
    kind: str
    slot: int
    tokens_saved: int


@dataclass(frozen=True, slots=True)
class CompactionResult:
    """What a compaction did.

    ``messages`` is the NEW history to send (the caller's list is never altered; unchanged
    messages are the caller's own objects). ``tokens_before`` / ``tokens_after`` are the same
    estimator's prompt tokens (system and tools included). ``removed`` are the indices of the
    caller's list folded into ``summary``; ``pruned`` what masking shortened;
    ``strategy_used`` is ``"mask"``, ``"summarize"`` or None when nothing was done, and then
    ``reason`` says why. ``kept`` are messages of the middle kept verbatim (pinned, server
    compaction items); ``notes`` remarks (a fallback, a back-off). ``summary_hash`` is the hash
    by which the next compaction trusts this summary as the library's own (also kept in the
    session's ``summary_hashes`` and state).
    """

    messages: list[Any]
    summary: str | None
    tokens_before: int
    tokens_after: int
    removed: tuple[int, ...]
    pruned: tuple[Pruned, ...]
    strategy_used: Literal["mask", "summarize"] | None
    fallback_used: bool
    reason: str | None
    budget: int
    kept: tuple[int, ...] = ()
    notes: tuple[str, ...] = ()
    summary_hash: int | None = None
    #: With ``Compactor(recoverable=True)``: the tool list to send with ``messages`` (the
    #: caller's tools plus the recall tool, priced in the budget); else None.
    tools: list[Any] | None = None
    #: What the summarizer's model calls of this compaction were billed
    #: (`contextfold.SummaryUsage`: calls, input and output tokens as the provider reported
    #: them); None when no model was called (the extractive digest). ``cost()`` prices it.
    summarizer_usage: Any = None

    @property
    def changed(self) -> bool:
        """True when ``messages`` differs from the input."""
        return self.strategy_used is not None

    @property
    def over_budget(self) -> bool:
        """True when ``tokens_after`` exceeds ``budget`` (tokens): only ``strategy="mask"``
        returns such a history (masking never folds; a note says by how much), or an
        unchanged one the gate let through (``reason`` says why)."""
        return self.tokens_after > self.budget

    def cost(self, *, model: str, provider: str = "openai", **kw: Any) -> Any:
        """The predicted effect of this compaction on ``model``'s bill, in USD
        (`contextfold.cost.compaction_cost`: the summarizer call, the cached prefix it
        invalidates, what each later turn saves)."""
        from contextfold.cost import compaction_cost

        return compaction_cost(self, model=model, provider=provider, **kw)

    def __repr__(self) -> str:
        what = self.strategy_used or f"unchanged ({self.reason})"
        return (
            f"CompactionResult({what}: {self.tokens_before} -> {self.tokens_after} tokens, "
            f"budget {self.budget}, {len(self.removed)} folded, {len(self.pruned)} pruned)"
        )
