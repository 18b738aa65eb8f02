"""The messages behind a summary or an edited copy: what a Compactor's extractive digest reads
in their place.

An agent loop compacts again and again. Merging the previous summary with the newly folded
messages digests a digest: every round clips and drops again what the last round had already
clipped, so the facts of the oldest turns wear away. Over the held-out probe sets
(``docs/evaluation.md``), an agent loop compacting at the naive cut's budget kept 369 of 608
facts that way, where one compaction of the same history kept 460.

So a Compactor remembers, for each summary its extractive digest wrote, the messages that summary
stood for (references to the caller's message objects, never changed). When a later fold holds
that summary (``plan["previous_at"]``), the digest reads those messages in its place (a turn the
summary was merged into stays, without the summary: ``_core.without_summary``) and writes the
summary of the whole span afresh, as one compaction of the whole history would. Likewise an
output the Compactor masked or cut the middle of in the history it returned is read whole when a
later compaction folds it.

The memory is bounded: a span is kept while its tokens are at most ``SPAN_BUDGETS`` times the
budget and ``SPAN_MAX_TOKENS`` (a longer one is merged as before, from its summary), and only the
last ``MAX_SPANS`` summaries' spans are kept. Nothing here is persisted with the session state: a
Compactor restored elsewhere merges from the summary. The proxy, whose client sends its whole
history every turn, files each span with its fold as the places of its messages in that history
(``serve.fold_cache.Fold.spans``) and gives them to the next turn's Compactor (``file``,
``note_originals``).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

from contextfold import _core
from contextfold.prune import _copy

__all__ = ["MAX_SPANS", "SPAN_BUDGETS", "SPAN_MAX_TOKENS", "FoldSources"]

#: A span is remembered while its tokens are at most this many times the compaction's budget: the
#: digest reads a span in a few milliseconds per thousand messages, and the memory holds only
#: references. (The held-out conversations run to 3-5 budgets at the naive cut's budget.)
SPAN_BUDGETS = 16
#: ... and at most this many tokens whatever the budget (about 8 MB of text held alive: a 1M-token
#: window's budget would otherwise let a span reach 16M tokens).
SPAN_MAX_TOKENS = 2_000_000
#: Spans of this many most recent summaries are kept (a history carries one summary at a time;
#: a caller that goes back to an older history finds its span too).
MAX_SPANS = 8

#: How a recoverable fold's line opens (``RecoverableFolds._fold_span``): it follows the summary's
#: text inside the markers, so it is not part of the text the span is filed under.
_FOLD_LINE = "[folded "


def _key(summary: str) -> int:
    """The content hash a summary's span is filed under: of its text without a fold line."""
    text = summary.strip("\n")
    head, sep, last = text.rpartition("\n")
    if sep and last.startswith(_FOLD_LINE):
        text = head
    return int(_core.summary_hash(text))


class FoldSources:
    """Spans of messages filed by the summary that stands for them (see the module)."""

    def __init__(self) -> None:
        self._spans: OrderedDict[int, tuple[tuple[Any, ...], int]] = OrderedDict()
        # id(copy) -> (copy, the caller's message it is an edited copy of), for the messages of
        # the last history this Compactor returned (the history an agent sends back, grown).
        self._copies: dict[int, tuple[Any, Any]] = {}

    def unedited(self, message: Any) -> Any:
        """The caller's message that ``message`` is this Compactor's edited copy of (an output
        it masked or cut the middle of, in the last history it returned), else ``message``."""
        entry = self._copies.get(id(message))
        return entry[1] if entry is not None and entry[0] is message else message

    def note_copies(self, out: Sequence[Any], given: Sequence[Any], sources: Sequence[int | None]) -> None:
        """Remember which messages of a returned history ``out`` are edited copies: position
        ``p`` of ``out`` stands for ``given[sources[p]]`` (None: a message the compaction wrote,
        the summary or the turn it was merged into). A later fold reads the caller's message in
        a copy's place: a SWE loop's first compactions masked outputs and cut one's middle,
        and the summary that folded them later read the placeholders."""
        copies: dict[int, tuple[Any, Any]] = {}
        for m, i in zip(out, sources, strict=True):
            if i is None:
                continue
            original = self.unedited(given[i])
            if m is not original:
                copies[id(m)] = (m, original)
        self._copies = copies

    def note_originals(self, copies: Sequence[Any], originals: Sequence[Any | None]) -> None:
        """Remember that each of ``copies`` is an edited copy of the message at the same place of
        ``originals`` (None: of none), as ``note_copies`` does for a history this Compactor
        returned: for a caller that keeps the originals and rebuilds the Compactor each time
        (the proxy, whose client sends its whole history every turn)."""
        self._copies = {id(c): (c, o) for c, o in zip(copies, originals, strict=True) if o is not None and c is not o}

    def filed(self) -> list[tuple[int, tuple[Any, ...], int]]:
        """The remembered spans, oldest first: the content hash of the summary each is filed
        under (``_core.summary_hash`` of its text), its messages and their tokens."""
        return [(key, span, tokens) for key, (span, tokens) in list(self._spans.items())]

    def file(self, key: int, span: Sequence[Any], tokens: int) -> None:
        """File ``span`` (``tokens`` tokens) as the messages behind the summary whose content hash
        is ``key`` (a span ``filed`` by another Compactor of the same conversation)."""
        self._spans.pop(key, None)
        self._spans[key] = (tuple(span), tokens)
        while len(self._spans) > MAX_SPANS:
            try:
                self._spans.popitem(last=False)
            except KeyError:  # (emptied by another thread meanwhile)
                break

    def behind(self, plan: Mapping[str, Any]) -> int:
        """Tokens of the remembered messages behind ``plan``'s previous summary (0: none are):
        what its fold stands for beyond its own messages."""
        previous = plan["previous_summary"]
        if previous is None or plan.get("previous_at") is None:
            return 0
        found = self._spans.get(_key(previous))
        return 0 if found is None else found[1]

    def span(self, plan: Mapping[str, Any], msgs: Sequence[Any], fmt: str) -> tuple[list[Any], str | None, int]:
        """The messages a summary of ``plan``'s fold reads, the previous summary it merges, and
        the tokens of the messages a remembered span put in that summary's place (0 when none
        did): where the fold's previous summary is remembered, its span in its place (beside
        the turn it was merged into, that turn without it: ``fmt`` is the history's wire
        format) and, as the previous summary, only that summary's identifier index (None
        without one); else the folded messages and the previous summary as the plan found
        them."""
        folded_at: list[int] = list(plan["folded"])
        folded = [self.unedited(msgs[i]) for i in folded_at]
        previous: str | None = plan["previous_summary"]
        at = plan.get("previous_at")
        if previous is None or at is None or at not in folded_at:
            return folded, previous, 0
        found = self._spans.get(_key(previous))
        if found is None:
            return folded, previous, 0
        k = folded_at.index(at)
        span, tokens = found
        instead = list(span)
        if not plan.get("previous_alone", True):
            # The summary was merged into a turn (where a message of its own would have put two
            # turns of one role side by side): the turn's own words stay, next to the span on
            # the side the summary sat.
            try:
                host = _core.without_summary(folded[k], format=fmt, copy=_copy)  # type: ignore[arg-type]
            except (TypeError, ValueError, AttributeError):
                # (A message object the copy cannot write: the summary is merged as before.)
                host = None
            if host is None:
                return folded, previous, 0
            turn, leads = host
            instead = [*instead, turn] if leads else [turn, *instead]
        # (Filed again as the newest: pop and set, each one step, where a move could find the
        # key gone under a Compactor shared between threads.)
        self._spans.pop(_key(previous), None)
        self._spans[_key(previous)] = found
        # The previous summary's identifier index still comes along: the identifiers it kept
        # are carried first, as a merge carries them (read from the span alone, a second
        # summary kept fewer of the first one's identifiers: 93 of 120 SWE runs at 90% or
        # more, where the merge kept them in all 120).
        at_index = _core.identifier_index_at(previous)
        return [*folded[:k], *instead, *folded[k + 1:]], None if at_index is None else previous[at_index:], tokens

    def remember(self, summary: str, plan: Mapping[str, Any], msgs: Sequence[Any], fmt: str, *,
                 budget: int) -> None:
        """File the messages ``summary`` stands for (``plan``'s fold, with a remembered span in
        its previous summary's place), unless the fold merged a summary whose span is not
        remembered (the new summary carries it: its span is not whole) or the span is over
        ``SPAN_BUDGETS`` budgets."""
        span, previous, carried = self.span(plan, msgs, fmt)
        if previous is not None and not carried:
            return
        costs: Sequence[int] = plan["costs"]
        at = plan.get("previous_at") if carried else None
        tokens = carried + sum(int(costs[i]) for i in plan["folded"] if i != at)
        if tokens > min(SPAN_BUDGETS * budget, SPAN_MAX_TOKENS):
            return
        self.file(_key(summary), span, tokens)
