"""The room a summary gets when the Compactor folds, and the identifier index appended to it.

Rule: the summary takes what the budget leaves once the head, the kept messages, the tail and
the summary's envelope are priced (``plan["fixed_tokens"]``), less a small margin for the
difference between pricing a text line by line and as one message; ``summary_max_tokens``
caps it. The planned share (``plan["summary_tokens"]``) is its floor.

Across successive compactions the room stays put: it is at most ``ROOM_SWING`` times the
*stable room* (``stable_room``), what the budget leaves when the tail meets its target exactly,
decided from the budget, the head and the tail's target, never from the whole messages the tail
walk happened to find (one more or one fewer tool round would otherwise swing the summary's
size from one compaction to the next). The tail never overshoots its target (the Compactor's
plan walks with a soft ceiling of 1.0), so the stable room is also what the summary gets at
least, unless the messages that must stay whole (the last ones, a pending tool round) exceed it.

Every summary ends with the identifier index (``contextfold._core.identifier_index``): the
extractive digest writes its own; any other summarizer's text gets one appended here, in the
room its text left (at least ``INDEX_SHARE`` of the room), with the previous summary's index
carried first. Any other summarizer's text is also held to the user's requests (``with_requests``:
those it does not quote are appended, in ``REQUESTS_SHARE`` of the room, up to
``MAX_REQUESTS_SHARE`` where the smaller share would drop some) and to the standing
rules (``with_rules``): a model that paraphrased or forgot what the user asked does not lose it.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Mapping, Sequence
from typing import Any

from contextfold import _core

__all__ = ["INDEX_SHARE", "MAX_REQUESTS_SHARE", "REQUESTS_HEADING", "REQUESTS_SHARE", "ROOM_SWING", "RULES_HEADING",
           "Requests", "index_at", "index_share", "index_demoted", "neutralize_markers", "requests_of", "stable_room",
           "strip_index", "summary_room", "trim_index", "with_index", "with_requests", "with_rules"]

#: Share of the summary's room the identifier index is sure to get.
INDEX_SHARE = 0.25
#: Margin (share of the room, plus tokens) left for line-by-line versus whole-message pricing.
_MARGIN_SHARE = 0.02
_MARGIN_TOKENS = 8
#: A summary's room is at most this multiple of its stable room.
ROOM_SWING = 1.2
#: Tokens the summary's envelope (its message, the markers) takes, counted out of the stable room.
_ENVELOPE_TOKENS = 16


def stable_room(plan: Mapping[str, Any], msgs: Sequence[Any], budget: int, tail_tokens: int, summary_tokens: int,
                *, provider: str, model: str | None) -> int:
    """Tokens a summary has when the tail meets its target exactly: ``budget`` less the request's
    overhead, the head and kept messages of ``plan`` (priced from ``msgs``), the tail's target
    (``tail_tokens``, shrunk as the plan shrinks it to leave ``summary_tokens``) and the
    envelope."""
    provider = provider if provider in _core.PROVIDERS else "openai"
    ahead = [msgs[i] for i in range(int(plan["head_end"]))] + [msgs[i] for i in plan["kept"]]
    head = sum(_core.estimate_each(ahead, provider=provider, model=model)) if ahead else 0  # type: ignore[arg-type]
    rest = budget - int(plan["overhead_tokens"]) - int(head)
    target = min(tail_tokens, max(0, rest - summary_tokens))
    return max(0, rest - target - _ENVELOPE_TOKENS)


def summary_room(plan: Mapping[str, Any], budget: int, cap: int | None, stable: int | None = None) -> int:
    """Tokens the summary text may take: the budget less everything else, at most ``ROOM_SWING``
    times the ``stable`` room (``stable_room``) when given, capped by ``cap``."""
    planned = int(plan["summary_tokens"])
    left = budget - int(plan["fixed_tokens"])
    room = max(planned, int(left * (1.0 - _MARGIN_SHARE)) - _MARGIN_TOKENS)
    if stable is not None:
        room = min(room, max(planned, int(stable * ROOM_SWING)))
    return min(room, cap) if cap is not None else room


def index_share(room: int) -> int:
    """Tokens kept for the identifier index out of a summary's ``room``."""
    return int(room * INDEX_SHARE)


def index_at(summary: str) -> int:
    """Where ``summary``'s identifier index section starts: the last line that is the heading
    alone (the same text quoted mid-line by a tool result is not one); -1 without one. The
    core's rule (``_core.identifier_index_at``), which its merges read summaries by."""
    at = _core.identifier_index_at(summary)
    return -1 if at is None else at


def index_demoted(text: str) -> str:
    """``text`` (a model's summary) with every identifier index heading read as
    ``## Identifiers``: the index is the library's, appended after the model's text (``with_index``).
    A model that wrote the heading (copied from a summary it read) had the real index left out,
    its later sections taken for index lines (``trim_index``) and the requests appended after
    it cut from what the next compaction asks a model to update (``strip_index``): 0 of 39
    identifiers shown and 3 of 8 requests lost where the heading ended its text."""
    while (at := index_at(text)) >= 0:
        text = text[:at] + "## Identifiers" + text[at + len(_core.IDENTIFIER_INDEX_HEADING):]
    return text


def strip_index(summary: str) -> str:
    """``summary`` without its identifier index section (what a model is asked to update)."""
    at = index_at(summary)
    return summary[:at].rstrip() if at >= 0 else summary


def summary_text_tokens(text: str, provider: str, model: str | None = None) -> int:
    """Tokens ``text`` takes inside a summary, priced as the history prices a summary: read whole
    between its markers (a long text elsewhere is priced from a sample; the estimator reads the
    library's own summary whole), less the markers and the message around them."""
    open_, close = _core.SUMMARY_MARKERS
    (wrapped,) = _core.estimate_each([{"role": "user", "content": f"{open_}\n{text}\n{close}"}],
                                     provider=provider, model=model)  # type: ignore[arg-type]
    return max(0, int(wrapped) - _summary_frame_tokens(provider, model))


@functools.lru_cache(maxsize=64)
def _summary_frame_tokens(provider: str, model: str | None) -> int:
    """Tokens of an empty summary's markers and the message around them (``trim_index`` prices
    a summary's index a dozen times in one call)."""
    open_, close = _core.SUMMARY_MARKERS
    return int(_core.estimate_each([{"role": "user", "content": f"{open_}\n\n{close}"}],
                                   provider=provider, model=model)[0])  # type: ignore[arg-type]


def with_index(text: str, folded: Sequence[Any], *, provider: str, model: str | None, previous: str | None,
               room: int, cache: Any = None) -> str:
    """``text`` ending with the identifier index of ``folded`` (and of ``previous``), within
    ``room`` tokens in all; unchanged when it already has one. ``cache``: a
    ``_core.MessageCache`` holding ``folded``'s messages, or None."""
    if index_at(text) >= 0:
        return text
    provider = provider if provider in _core.PROVIDERS else "openai"
    left = max(index_share(room), room - summary_text_tokens(text, provider, model) - 4)
    # Identifiers the text already shows are not listed again (the digest's own index does the same).
    index = _core.identifier_index(folded, max_tokens=left, provider=provider, model=model,  # type: ignore[arg-type]
                                   previous=previous, besides=text, cache=cache)
    return f"{text}\n\n{index}" if index else text


#: Heading of the section ``with_requests`` appends (the extractive digest's own).
REQUESTS_HEADING = "## User requests"
#: Share of a model summary's room the user's requests, carried verbatim, take at first. The
#: extractive digest packs the requests into it (``_core.requests_sections``: long ones clipped
#: head and tail, then the oldest dropped but the first two); the model is asked for the room
#: less the index's share and what the requests take.
REQUESTS_SHARE = 0.3
#: The share they may grow to where ``REQUESTS_SHARE`` would drop some: the requests' only home
#: is the summary, the model's own text is a paraphrase of turns kept whole in the store. At 0.3
#: alone a long session's updates kept 64 of 143 requests at 8,000 tokens where the extractive
#: digest, which gives them what its other units leave, kept 129 (up to 0.6, and never the
#: model's floor: 113).
MAX_REQUESTS_SHARE = 0.6
#: A room no section reaches: the whole requests section (every request in its fullest form).
_UNBOUNDED = 1 << 40


@dataclasses.dataclass(frozen=True, slots=True)
class Requests:
    """The user's requests a model summary is held to: ``section`` (its text, ``tokens``
    tokens) keeps ``kept`` of the ``total`` requests of the fold and the previous summary."""

    section: str = ""
    tokens: int = 0
    kept: int = 0
    total: int = 0

    @property
    def dropped(self) -> int:
        """Requests left out of the section (the oldest but the first two)."""
        return self.total - self.kept


def _count(section: str) -> int:
    return sum(line.startswith("- ") for line in section.splitlines())


def requests_of(span: Sequence[Any], *, previous: str | None, room: int, provider: str, model: str | None,
                cache: Any = None, most: int | None = None) -> Requests:
    """The user's requests of ``span`` (a fold) and of ``previous`` (its requests section), as
    the extractive digest's requests section in ``REQUESTS_SHARE`` of ``room`` (tokens), or in
    up to ``MAX_REQUESTS_SHARE`` where the smaller share would drop some, never more than
    ``most`` tokens (what the room leaves beside the model's own floor and the index: more made
    the summary overflow its room, and the digest replaced the model's). ``cache``: a
    ``_core.MessageCache`` holding ``span``'s messages, or None."""
    provider = provider if provider in _core.PROVIDERS else "openai"
    caps = [int(room * share) if most is None else max(int(room * REQUESTS_SHARE), min(int(room * share), most))
            for share in (REQUESTS_SHARE, MAX_REQUESTS_SHARE)]
    # (Packed at every room from one reading of the span: each its own read cost a 10k-message
    # fold three walks.)
    whole, *packed = _core.requests_sections(span, rooms=[_UNBOUNDED, *caps], provider=provider,  # type: ignore[arg-type]
                                             model=model, previous=previous, cache=cache)
    if not whole:
        return Requests()
    whole_tokens = summary_text_tokens(whole, provider, model)
    total = _count(whole)
    for cap, text in zip(caps, packed):
        if whole_tokens <= cap:
            return Requests(whole, whole_tokens, total, total)
        if _count(text) == total:
            break
    return Requests(text, summary_text_tokens(text, provider, model) if text else 0, _count(text), total)


def _stated(line: str, said: str) -> bool:
    """Whether ``said`` (folded space, case-folded) quotes a request ``line``: every piece of a
    clipped one (``head…tail``)."""
    return all(piece.strip() in said for piece in _folded_space(line).casefold().split("…") if piece.strip())


def with_requests(text: str, section: str) -> str:
    """``text`` (a model's summary) with each request of ``section`` (``requests_of``) that its
    own requests section does not quote appended to it, or to a new one at its end.

    Quoted anywhere else (under "Open tasks", "Goal") a request is still listed there: the next
    compaction carries the requests of that section alone, and a model that later rewrote or
    dropped the sentence it had quoted lost the request for good (the section's share of the
    room is set aside for every request, quoted or not)."""
    lines = text.rstrip().split("\n")
    at = next((k for k, line in enumerate(lines) if line.strip() == REQUESTS_HEADING), None)
    end = len(lines) if at is None else next(
        (k for k in range(at + 1, len(lines)) if lines[k].startswith("## ")), len(lines))
    said = "" if at is None else _folded_space("\n".join(lines[at + 1:end])).casefold()
    missing = [line for line in section.split("\n")[1:] if line.startswith("- ") and not _stated(line[2:], said)]
    if not missing:
        return text
    if at is None:
        return "\n".join(lines) + f"\n\n{REQUESTS_HEADING}\n" + "\n".join(missing)
    while end > at + 1 and not lines[end - 1].strip():
        end -= 1
    return "\n".join([*lines[:end], *missing, *([""] if end < len(lines) and lines[end].strip() else []),
                      *lines[end:]]).rstrip()


#: Heading of the section ``with_rules`` appends (the extractive digest's own).
RULES_HEADING = "## Standing rules"


def _folded_space(text: str) -> str:
    return " ".join(text.split())


def with_rules(text: str, folded: Sequence[Any], *, previous: str | None, cache: Any = None) -> str:
    """``text`` (a model's summary of ``folded``) with every standing rule of the fold and of
    ``previous`` that it does not state verbatim appended in a rules section (before the
    index, which ``with_index`` adds after): a model that paraphrased or forgot "never push to
    main" does not turn it into an allowed action."""
    rules = _core.standing_rules(folded, previous=previous, cache=cache)
    said = _folded_space(text)
    missing = [r for r in rules if _folded_space(r) not in said]
    if not missing:
        return text
    return text.rstrip() + f"\n\n{RULES_HEADING}\n" + "".join(f"- {r}\n" for r in missing).rstrip("\n")


def _index_lines(summary: str) -> tuple[str, list[str], list[tuple[str, list[str], str]]] | None:
    """``summary`` split at its identifier index: the text before it, the index's lines, and
    each item line as ``(label, identifiers, separator)``; None without an index."""
    at = index_at(summary)
    if at < 0:
        return None
    lines = summary[at:].split("\n")
    items: list[tuple[str, list[str], str]] = []
    for line in lines[1:]:
        if not line.startswith("- ") or ": " not in line:
            break
        label, rest = line[2:].split(": ", 1)
        sep = " | " if label == "errors" else ", "
        items.append((label, rest.split(sep), sep))
    return summary[:at], lines, items


def trim_index(summary: str, tokens: int, *, provider: str, model: str | None,
               previous: str | None = None) -> str | None:
    """``summary`` with about ``tokens`` fewer tokens taken from the end of its identifier index
    (the lowest-ranked identifiers of its longest lines go first, those the ``previous``
    summary's index carried last; every line keeps its first), or None when it has no index or
    the index cannot give that much. A summary a few tokens over its share (a model's text, sized by
    the model and not by the estimator) gives up its least identifiers rather than being
    written again."""
    split = _index_lines(summary)
    if split is None or tokens <= 0:
        return None
    body, lines, items = split
    if not items:
        return None
    index = summary[len(body):]
    provider = provider if provider in _core.PROVIDERS else "openai"
    old = _index_lines(previous) if previous else None
    carried = {x for _, ids, _ in old[2] for x in ids} if old else set()
    before = summary_text_tokens(index, provider, model)
    # Characters per token of this index, to aim the first cut; checked by pricing after.
    per_token = max(1.0, len(index) / max(1, before))
    want = tokens
    for _ in range(3):
        drop = int(want * per_token) + 1
        cut = [(label, list(ids), sep) for label, ids, sep in items]
        while drop > 0:
            # The longest line's last identifier not carried from the previous summary; carried
            # ones only when no line has another left.
            fresh = [j for j in range(len(cut)) if any(x not in carried for x in cut[j][1][1:])]
            lines_from = fresh or [j for j in range(len(cut)) if len(cut[j][1]) > 1]
            if not lines_from:
                return None
            k = max(lines_from, key=lambda j: len(cut[j][2].join(cut[j][1])))
            ids = cut[k][1]
            at = next((i for i in range(len(ids) - 1, 0, -1) if ids[i] not in carried), len(ids) - 1) \
                if fresh else len(ids) - 1
            drop -= len(ids.pop(at)) + len(cut[k][2])
        trimmed = "\n".join([lines[0], *(f"- {label}: {sep.join(ids)}" for label, ids, sep in cut),
                              *lines[1 + len(items):]])
        if before - summary_text_tokens(trimmed, provider, model) >= tokens:
            return body + trimmed
        want = int(want * 1.5) + 8
    return None


#: What both summary markers end with (``</contextfold:summary>`` and ``<contextfold:summary>``).
_MARKERS_END = os.path.commonprefix([m[::-1] for m in _core.SUMMARY_MARKERS])[::-1]


def neutralize_markers(text: str) -> str:
    """``text`` with the summary markers made inert (a folded tool output may quote them): only
    the markers the Compactor writes around a summary open and close it."""
    # (A text without the markers' common end, nearly every summary, holds neither: one search
    # of it instead of one per marker, on every summary a compaction writes.)
    if _MARKERS_END not in text:
        return text
    open_, close = _core.SUMMARY_MARKERS
    return text.replace(close, close.replace("<", "‹", 1)).replace(open_, open_.replace("<", "‹", 1))
