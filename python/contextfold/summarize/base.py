"""The summarizer protocol: what the Compactor asks of any summarizer, sync or async."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

__all__ = ["Summarizer", "SummaryRequest", "SummaryResult", "SummaryUsage", "utf8_text"]


def utf8_text(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD (a split pair joined): the core reads
    a text argument as UTF-8, which has no form for one. A model's reply cut mid-emoji arrives
    so (a JSON ``\\ud83d`` escape decodes to a lone surrogate), as may a caller's string."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


@dataclass(frozen=True, slots=True)
class SummaryRequest:
    """What to fold into a summary.

    ``messages`` are the caller's objects of the folded middle, in the conversation's wire
    format (``provider`` says how to read them); ``max_tokens`` is the summary's budget in the
    conversation model's tokens; ``previous_summary`` is the text of the summary being updated
    (iterative compaction); ``instructions`` is a focus string that steers what is kept.
    ``read_cache`` is the Compactor's ``contextfold._core.MessageCache`` for the compaction that
    asks: the messages as the core has read them already, by object (the extractive digest reads
    ``messages`` through it rather than again; other summarizers can ignore it).
    """

    messages: Sequence[Any]
    provider: str
    model: str | None = None
    previous_summary: str | None = None
    instructions: str | None = None
    max_tokens: int = 2_000
    read_cache: Any = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Every summarizer hands these texts to the core (the extractive digest, every one's
        # fallback, directly): a lone surrogate in them raised a bare UnicodeEncodeError there
        # (the model's name too: a UnicodeEncodeError that named no field).
        for name in ("model", "previous_summary", "instructions"):
            value = getattr(self, name)
            if isinstance(value, str):
                object.__setattr__(self, name, utf8_text(value))


@dataclass(frozen=True, slots=True)
class SummaryUsage:
    """The tokens a summarizer's model calls were billed: ``calls`` replies received (retries
    and replies refused by the output checks included: each was billed), ``input_tokens`` and
    ``output_tokens`` as the provider reported them, in ``model``'s tokens. ``estimated``: the
    provider reported no usage for some reply, whose tokens are the estimator's instead."""

    model: str
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    estimated: bool = False

    def __add__(self, other: SummaryUsage) -> SummaryUsage:
        # (Two models' tokens are not one count: the first model's name is kept, the calls of
        # a Compactor's summarizer all go to one model.)
        return SummaryUsage(self.model, self.calls + other.calls, self.input_tokens + other.input_tokens,
                            self.output_tokens + other.output_tokens, self.estimated or other.estimated)


@dataclass(frozen=True, slots=True)
class SummaryResult:
    """A summary's text; ``fallback_used`` is True when a fallback produced it (``error`` says why).
    ``messages``: the provider's own messages standing for the summary (a compaction block or
    item, ``contextfold.summarize.provider``), sent verbatim in its place when given. ``usage``:
    what the model calls behind it were billed (None: no model was called). ``notes``: what the
    summarizer says of this text (what it could not hold); a compaction that sends the text adds
    them to its own ``.notes``."""

    text: str
    fallback_used: bool = False
    error: str | None = None
    messages: tuple[Any, ...] = ()
    usage: SummaryUsage | None = None
    notes: tuple[str, ...] = ()


@runtime_checkable
class Summarizer(Protocol):
    """Anything that turns a ``SummaryRequest`` into a ``SummaryResult``."""

    def summarize(self, request: SummaryRequest) -> SummaryResult:
        """Summarize synchronously."""
        ...

    async def asummarize(self, request: SummaryRequest) -> SummaryResult:
        """Summarize without blocking the event loop."""
        ...
