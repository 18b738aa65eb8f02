"""The messages behind a summary or an edited copy: what a Compactor's extractive digest reads
in their place.

An agent loop compacts again and again. Merging the previous summary with the newly folded
messages digests a digest: every round clips and drops again what the last round had already
clipped, so the facts of the oldest turns wear away. Over the held-out probe sets
(``docs/history/evaluation-rounds.md``), an agent loop compacting at the naive cut's budget
kept 369 of 608 facts that way, where one compaction of the same history kept 460.

So a Compactor remembers, for each summary its extractive digest wrote, the messages that summary
stood for (references to the caller's message objects, never changed). When a later fold holds
that summary (``plan["previous_at"]``), the digest reads those messages in its place (a turn the
summary was merged into stays, without the summary: ``_core.without_summary``) and writes the
summary of the whole span afresh, as one compaction of the whole history would. Likewise an
output the Compactor masked or cut the middle of in the history it returned is read whole when a
later compaction folds it.

The memory is bounded: a span is kept while its tokens are at most ``SPAN_BUDGETS`` times the
budget and ``SPAN_MAX_TOKENS`` (a longer one is merged as before, from its summary), and only the
last ``MAX_SPANS`` summaries' spans are kept, up to ``SPANS_MAX_TOKENS`` in all. Nothing here is persisted with the session state: a
Compactor restored elsewhere merges from the summary. The proxy, whose client sends its whole
history every turn, files each span with its fold as the places of its messages in that history
(``serve.fold_cache.Fold.spans``) and gives them to the next turn's Compactor (``file``,
``note_originals``). A Compactor given a ``store`` keeps each span there too (JSON, beside its
summary's text), so a new Compactor with the same store reads it: for callers in different
processes that build a Compactor per request and share a store between them (a directory, Redis).

The spans and copies of the last few histories are also kept for the whole process
(``PROCESS_MAX_SPANS``, ``PROCESS_SPANS_MAX_TOKENS``, ``PROCESS_COPY_HISTORIES``): a caller that
builds a new Compactor for each compaction (a hook that makes one per call) reads the turns
behind the last summary as a kept Compactor does. A span is found there only by its summary's
whole text after a hash of its history's head (the system prompt and the task) and of the turn
that followed the summary (``_scoped``), which only a caller holding that conversation can send; a copy only by the very object the earlier
compaction returned. ``forget_process_sources()`` empties it; ``shared = False`` keeps a
Compactor's sources out of it (the proxy's, which files its spans with its folds).
"""

from __future__ import annotations

import bisect
import json
import logging
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

from contextfold import _core, json_text
from contextfold.content_store import ContentStore
from contextfold.prune import _copy

__all__ = ["COPY_HISTORIES", "MAX_SPANS", "PROCESS_COPY_HISTORIES", "PROCESS_MAX_SPANS", "PROCESS_SPANS_MAX_TOKENS",
           "SPANS_MAX_TOKENS", "SPAN_BUDGETS", "SPAN_MAX_TOKENS", "FoldSources", "forget_process_sources"]

_log = logging.getLogger("contextfold")

#: A span is remembered while its tokens are at most this many times the compaction's budget: the
#: digest reads a span in a few milliseconds per thousand messages, and the memory holds only
#: references. (The held-out conversations run to 3-5 budgets at the naive cut's budget.)
SPAN_BUDGETS = 16
#: ... and at most this many tokens whatever the budget (about 8 MB of text held alive: a 1M-token
#: window's budget would otherwise let a span reach 16M tokens).
SPAN_MAX_TOKENS = 2_000_000
#: Spans of this many most recent summaries are kept. A history carries one summary at a time,
#: but one Compactor may serve many conversations (a framework hook on a server: the
#: integrations remember 256): interleaved agent loops over the held-out probe sets, one
#: Compactor per tool set, kept 385 of 608 facts with 8 spans, 428 with 64.
MAX_SPANS = 256
#: ... while their tokens add up to at most this many (spans of one conversation share their
#: messages, so the text held alive is less: references to the callers' objects, never copies).
SPANS_MAX_TOKENS = 16_000_000
#: Edited copies are remembered for this many of the last histories a Compactor returned (the
#: copies of one conversation's history, in a Compactor serving many, outlive the next
#: conversation's compaction).
COPY_HISTORIES = 32
#: The process's own memory (any Compactor without a store files there too): spans of this many
#: most recent summaries, of at most this many tokens in all (references to the callers'
#: messages, kept alive while remembered: about 16 MB of text at most), and the copies of this
#: many most recent returned histories. A caller that makes a Compactor per compaction usually
#: serves a few conversations at a time; a server of many keeps its Compactors or shares a store.
PROCESS_MAX_SPANS = 64
PROCESS_SPANS_MAX_TOKENS = 4_000_000
PROCESS_COPY_HISTORIES = 32

#: How a recoverable fold's line opens (``RecoverableFolds._fold_span``): it follows the summary's
#: text inside the markers, so it is not part of the text the span is filed under.
_FOLD_LINE = "[folded "


def _filed_text(summary: str) -> str:
    """The text a summary's span is filed under: the summary without a fold line."""
    text = summary.strip("\n")
    head, sep, last = text.rpartition("\n")
    return head if sep and last.startswith(_FOLD_LINE) else text


def _scoped(summary: str, plan: Mapping[str, Any], msgs: Sequence[Any], after: Any = None) -> str:
    """What a summary's span is filed under: the summary's text (``_filed_text``) after a hash of
    its history's head (the system prompt and the task, which a compaction keeps as they were)
    and of ``after``, the message that followed the summary's message in the history the
    compaction returned (the first of its verbatim tail: an agent appends to that history, so a
    later one holds it there too; ``_after`` finds it). One Compactor, or one process, serves
    many conversations (a framework hook on a server): two whose folds digest to the same text
    after the same system prompt and task (a templated task, a tiny room) are kept apart by the
    turn after their summaries, so one never reads the other's turns."""
    head_messages = [*msgs[: int(plan["head_end"])], after]
    # (ASCII: a caller's text may hold lone surrogates, which no UTF-8 string can.)
    head = json_text.dumps(head_messages, sort_keys=True)
    return f"{int(_core.summary_hash(head)):016x}\n{_filed_text(summary)}"


def _after(plan: Mapping[str, Any], msgs: Sequence[Any], given: Sequence[Any] | None = None) -> Any:
    """The message after the one that holds ``plan``'s previous summary in ``msgs`` (None: none
    follows): what its span was filed under beside the summary (``_scoped``). ``given``: the
    caller's history that ``msgs`` was planned from, message for message (a compaction may have
    cut that message already in ``msgs``); its message is the one taken."""
    at = plan.get("previous_at")
    source = given if given is not None and len(given) == len(msgs) else msgs
    return source[at + 1] if at is not None and at + 1 < len(source) else None


def _matches(wanted: Sequence[Any], among: Sequence[Any]) -> tuple[set[int], set[int]]:
    """The places in ``wanted`` and in ``among`` of the messages both hold, each matched once:
    the same object first, then an equal one (a span read back from a store is a copy; an equal
    message is matched once, so of a SWE run's many empty outputs only one goes per message
    wanted)."""
    if not wanted:
        return set(), set()
    places = {id(m): i for i, m in enumerate(among)}
    pairs = {w: places[id(m)] for w, m in enumerate(wanted) if id(m) in places}
    taken = set(pairs.values())
    for w, m in enumerate(wanted):
        if w not in pairs and (i := next((j for j, x in enumerate(among) if j not in taken and x == m), None)) is not None:
            pairs[w] = i
            taken.add(i)
    return set(pairs), taken


def _key(scoped: str) -> int:
    """The content hash a span is filed under (``_scoped``)."""
    return int(_core.summary_hash(scoped))


def _stored_id(scoped: str) -> str:
    """The store id of the span filed under ``scoped`` (``_scoped``)."""
    return str(_core.fold_id(_STORED_PREFIX + scoped))


#: What a span's store id is derived from besides its summary (apart from a recall id of the same
#: text).
_STORED_PREFIX = "contextfold span of\n"
#: ... and an edited copy's original's, besides the copy's text.
_COPY_PREFIX = "copy\n"
#: What every edited copy a compaction returns carries in its text: a placeholder's recall line,
#: a middle cut's marker (with or without an id), or a pruned output's stand-in
#: (``src/recall.rs``, ``src/degrade.rs``, ``src/prune.rs``). Only such messages are looked up
#: in a store (a message that merely quotes one costs a lookup that finds nothing).
_EDIT_MARKS = ("restores it]", "tokens cut from the middle", "tokens cut]", "[output pruned to save context:")
#: ... followed from copy to original at most this many steps.
_COPY_DEPTH = 4


def _edited_text(message: Any) -> str | None:
    """``message`` as the JSON text its original is filed under in a store, when it is a dict
    that carries an edit's mark (else None: no store lookup for it)."""
    if not isinstance(message, dict):
        return None
    try:
        text = json.dumps(message, sort_keys=True)
    except (TypeError, ValueError):
        return None
    return text if any(mark in text for mark in _EDIT_MARKS) else None


class _Shelf:
    """Spans filed under keys, the most recently filed last; the oldest go first past a count or
    a total of tokens (the newest stays whatever its size)."""

    def __init__(self) -> None:
        self.items: OrderedDict[Any, tuple[tuple[Any, ...], int]] = OrderedDict()
        self.tokens = 0

    def put(self, key: Any, span: Sequence[Any], tokens: int, *, max_spans: int, max_tokens: int) -> None:
        """File ``span`` (``tokens`` tokens) under ``key`` as the newest; forget the oldest past
        ``max_spans`` spans or ``max_tokens`` tokens in all."""
        old = self.items.pop(key, None)
        if old is not None:
            self.tokens -= old[1]
        self.items[key] = (tuple(span), tokens)
        self.tokens += tokens
        while len(self.items) > 1 and (len(self.items) > max_spans or self.tokens > max_tokens):
            try:
                _, (_, dropped) = self.items.popitem(last=False)
            except KeyError:  # (emptied by another thread meanwhile)
                break
            self.tokens -= dropped


class _Copies:
    """Edited copies of the caller's messages in the histories a Compactor returned: id(copy) ->
    (copy, the caller's message it is an edited copy of, the returned history it was noted for)."""

    def __init__(self) -> None:
        self.by_id: dict[int, tuple[Any, Any, int]] = {}
        self.histories: OrderedDict[int, list[int]] = OrderedDict()
        self.noted = 0

    def original(self, message: Any) -> Any | None:
        """The caller's message ``message`` is a copy of, else None."""
        entry = self.by_id.get(id(message))
        return entry[1] if entry is not None and entry[0] is message else None

    def note(self, pairs: Sequence[tuple[Any, Any]], *, keep: int) -> None:
        """File ``pairs`` (copy, original) as the copies of a newly returned history; the copies
        of histories older than the last ``keep`` are forgotten (those noted again since stay,
        with their newer history)."""
        self.noted += 1
        batch = self.noted
        copies = self.by_id
        for m, original in pairs:
            copies[id(m)] = (m, original, batch)
        self.histories[batch] = [id(m) for m, _ in pairs]
        while len(self.histories) > keep:
            try:
                old, keys = self.histories.popitem(last=False)
            except KeyError:  # (emptied by another thread meanwhile)
                break
            for k in keys:
                entry = copies.get(k)
                if entry is not None and entry[2] == old:
                    copies.pop(k, None)


class _ProcessSources:
    """The spans and copies every Compactor of this process that shares them filed (see the
    module): spans by their whole ``_scoped`` text (the summary after the hash of its head and
    next turn), so an equal text finds one and nothing else does. Read without the lock (one
    dict lookup), written under it."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.spans = _Shelf()
        self.copies = _Copies()

    def file(self, scoped: str, span: Sequence[Any], tokens: int) -> None:
        if PROCESS_MAX_SPANS <= 0 or tokens > PROCESS_SPANS_MAX_TOKENS:
            return
        with self.lock:
            self.spans.put(scoped, span, tokens, max_spans=PROCESS_MAX_SPANS, max_tokens=PROCESS_SPANS_MAX_TOKENS)

    def note(self, pairs: Sequence[tuple[Any, Any]]) -> None:
        if PROCESS_COPY_HISTORIES <= 0:
            return
        with self.lock:
            self.copies.note(pairs, keep=PROCESS_COPY_HISTORIES)


_PROCESS = _ProcessSources()


def forget_process_sources() -> None:
    """Forget the spans and copies this process's Compactors shared (``PROCESS_MAX_SPANS``): a
    new Compactor then merges a summary it did not write from its text, until one writes
    again."""
    with _PROCESS.lock:
        _PROCESS.spans = _Shelf()
        _PROCESS.copies = _Copies()


class FoldSources:
    """Spans of messages filed by the summary that stands for them (see the module). With
    ``store`` (a ``ContentStore`` the caller shares between Compactors), each span is also kept
    there as JSON, under an id derived from its summary, so a new Compactor given the same
    store reads the turns behind a summary it did not write itself. With ``shared`` (the
    default), spans and copies are also kept for the whole process (``PROCESS_MAX_SPANS``), so a
    new Compactor made in this process reads them too."""

    def __init__(self, store: ContentStore | None = None, *, shared: bool = True) -> None:
        self._store = store
        self._warned = False
        #: Whether this Compactor files its spans and copies for the whole process, and reads
        #: those others filed there (the proxy, which files its own with its folds, does not).
        self.shared = shared
        self._spans = _Shelf()
        # Copies of the messages of the last ``COPY_HISTORIES`` histories this Compactor returned
        # (the history an agent sends back, grown).
        self._copies = _Copies()
        # The last ``span`` read: (plan, msgs, given, what it gave), which ``remember`` of the
        # same plan takes instead of reading the span (and the store) again; emptied there.
        self._read: tuple[Any, Any, Any, tuple[list[Any], str | None, int]] | None = None

    def __getstate__(self) -> dict[str, Any]:
        # A Compactor sent to another process by pickle: its copies are known by the identity of
        # objects that process will not hold, so they stay behind (its spans go along).
        state = dict(self.__dict__)
        state["_copies"] = _Copies()
        state["_read"] = None
        return state

    def unedited(self, message: Any) -> Any:
        """The caller's message that ``message`` is an edited copy of (an output a Compactor
        masked or cut the middle of, in a history it returned: this one, or another of the
        process when shared), else ``message``."""
        original = self._copies.original(message)
        if original is None and self.shared:
            original = _PROCESS.copies.original(message)
        return message if original is None else original

    def note_copies(self, out: Sequence[Any], given: Sequence[Any], sources: Sequence[int | None]) -> None:
        """Remember which messages of a returned history ``out`` are edited copies: position
        ``p`` of ``out`` stands for ``given[sources[p]]`` (None: a message the compaction wrote,
        the summary or the turn it was merged into). A later fold reads the caller's message in
        a copy's place: a SWE loop's first compactions masked outputs and cut one's middle,
        and the summary that folded them later read the placeholders."""
        get = self._copy_map().get
        noted: list[Any] = []
        for m, i in zip(out, sources, strict=True):
            if i is None:
                continue
            # (``unedited`` inlined: a compaction passes every message of its history here.)
            original = given[i]
            if (e := get(id(original))) is not None and e[0] is original:
                original = e[1]
            if m is not original:
                noted.append((m, original))
        self._note(noted)

    def _copy_map(self) -> dict[int, tuple[Any, Any, int]]:
        """The copies known here and, when shared, for the process, in one map (id(copy) ->
        its entry; this Compactor's own win). The copies are few beside a history: merging the
        two maps costs less than a second lookup per message."""
        own = self._copies.by_id
        process = _PROCESS.copies.by_id if self.shared else {}
        return process | own if own and process else own or process

    def _note(self, pairs: Sequence[tuple[Any, Any]]) -> None:
        """File ``pairs`` (copy, original) as the copies of one returned history, here, when
        shared for the process, and with a store in it (by the copy's text: a Compactor of
        another process finds the original of a copy it reads back from JSON)."""
        self._copies.note(pairs, keep=COPY_HISTORIES)
        if self.shared:
            _PROCESS.note(pairs)
        if self._store is not None:
            for copy, original in pairs:
                text = _edited_text(copy)
                if text is not None and isinstance(original, dict):
                    self._put(_stored_id(_COPY_PREFIX + text), {"copy": text, "original": original})

    def _unedited_all(self, messages: Sequence[Any]) -> list[Any]:
        """``unedited`` of each of ``messages`` (with a store, also the originals it keeps of
        copies another process's Compactor returned)."""
        # (One lookup per message, in one comprehension: the fold of a 10k-message history passes
        # here at every compaction.)
        copies = self._copy_map()
        # (Most folds hold no copy at all: ``isdisjoint`` finds that in C, before a lookup per
        # message in Python.)
        if copies and not copies.keys().isdisjoint(map(id, messages)):
            get = copies.get
            out = [e[1] if (e := get(id(m))) is not None and e[0] is m else m for m in messages]
        else:
            out = list(messages)
        if self._store is not None:
            for i, m in enumerate(out):
                if m is messages[i] and (text := _edited_text(m)) is not None:
                    out[i] = self._stored_original(text, m)
        return out

    def _stored_original(self, text: str, message: Any) -> Any:
        """The original the store keeps of the copy whose JSON is ``text``, else ``message``; an
        original that is itself an edited copy (a later compaction cut a message an earlier one
        had masked) is looked up in turn, a few steps deep."""
        for _ in range(_COPY_DEPTH):
            kept = self._get(_stored_id(_COPY_PREFIX + text))
            # (The copy's own text is kept beside its original: an id shared by two copies misses.)
            if not isinstance(kept, dict) or kept.get("copy") != text or not isinstance(kept.get("original"), dict):
                return message
            message = kept["original"]
            if (edited := _edited_text(message)) is None:
                return message
            text = edited
        return message

    def note_originals(self, copies: Sequence[Any], originals: Sequence[Any | None]) -> None:
        """Remember that each of ``copies`` is an edited copy of the message at the same place of
        ``originals`` (None: of none), as ``note_copies`` does for a history this Compactor
        returned: for a caller that keeps the originals and rebuilds the Compactor each time
        (the proxy, whose client sends its whole history every turn)."""
        self._note([(c, o) for c, o in zip(copies, originals, strict=True) if o is not None and c is not o])

    def filed(self) -> list[tuple[int, tuple[Any, ...], int]]:
        """The remembered spans, oldest first: the content hash each is filed under (of its
        summary's text after its history's head hash: ``_scoped``), its messages and their
        tokens."""
        return [(key, span, tokens) for key, (span, tokens) in list(self._spans.items.items())]

    def file(self, key: int, span: Sequence[Any], tokens: int) -> None:
        """File ``span`` (``tokens`` tokens) under ``key`` (a span ``filed`` by another Compactor
        of the same conversation)."""
        self._spans.put(key, span, tokens, max_spans=MAX_SPANS, max_tokens=SPANS_MAX_TOKENS)

    def behind(self, plan: Mapping[str, Any], msgs: Sequence[Any], given: Sequence[Any] | None = None) -> int:
        """Tokens of the remembered messages behind ``plan``'s previous summary (0: none are):
        what its fold stands for beyond its own messages (``msgs``: the history planned;
        ``given``: the caller's, as ``_after`` reads it)."""
        previous = plan["previous_summary"]
        if previous is None or plan.get("previous_at") is None:
            return 0
        filed = self._previous(previous, plan, msgs, given)
        return 0 if filed is None else filed[1][1]

    def _previous(self, previous: str, plan: Mapping[str, Any], msgs: Sequence[Any],
                  given: Sequence[Any] | None = None) -> tuple[str, tuple[tuple[Any, ...], int]] | None:
        """The span filed for ``plan``'s previous summary (``previous``) and what it is filed
        under (``_scoped``): after the message that follows the summary's message, read as the
        caller's own (an output masked since, here or by another Compactor, is the message it
        was), else, for a summary that ended the history it was written into, after none."""
        after = _after(plan, msgs, given)
        for a in ([] if after is None else [self._unedited_all([after])[0]]) + [None]:
            scoped = _scoped(previous, plan, msgs, a)
            found = self._found(scoped)
            if found is not None:
                return scoped, found
        return None

    def span(self, plan: Mapping[str, Any], msgs: Sequence[Any], fmt: str,
             given: Sequence[Any] | None = None) -> tuple[list[Any], str | None, int]:
        """The messages a summary of ``plan``'s fold reads, the previous summary it merges, and
        the tokens of the messages a remembered span put in that summary's place (0 when none
        did): where the fold's previous summary is remembered, its span in its place (beside
        the turn it was merged into, that turn without it: ``fmt`` is the history's wire
        format) and no previous summary; else the folded messages and the previous summary as
        the plan found them. ``given``: the caller's history, as ``_after`` reads it."""
        read = self._read
        if read is not None and read[0] is plan and read[1] is msgs and read[2] is given:
            return read[3]
        out = self._span(plan, msgs, fmt, given)
        self._read = (plan, msgs, given, out)
        return out

    def _span(self, plan: Mapping[str, Any], msgs: Sequence[Any], fmt: str,
              given: Sequence[Any] | None) -> tuple[list[Any], str | None, int]:
        """``span``, read."""
        folded_at: list[int] = list(plan["folded"])
        folded = self._unedited_all([msgs[i] for i in folded_at])
        previous: str | None = plan["previous_summary"]
        at = plan.get("previous_at")
        if previous is None or at is None or at not in folded_at:
            return folded, previous, 0
        filed = self._previous(previous, plan, msgs, given)
        if filed is None:
            return folded, previous, 0
        scoped, found = filed
        k = folded_at.index(at)
        span, tokens = found
        # A span filed with the messages its fold kept verbatim (``_in_order``) holds them in
        # their places: the copies that stood before its summary give way to it, and those the
        # plan still keeps are not read twice.
        _, still = _matches(self._unedited_all([msgs[j] for j in plan["kept"]]), span)
        instead = [m for i, m in enumerate(span) if i not in still]
        behind, _ = _matches(folded[:k], span)
        before = [m for i, m in enumerate(folded[:k]) if i not in behind]
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
        # (Filed again as the newest.)
        self._file(scoped, *found)
        # Nothing of the previous summary comes along, not even its identifier index: the span
        # is the whole conversation behind it, and its digest ranks identifiers as one
        # compaction of the whole history does. Carried first, the old index put the first
        # summary's identifiers before what the conversation had come to: agent loops over the
        # held-out probe sets kept 431 of 608 facts with it, 444 without (the main set 185 and
        # 193 of 203). The second summary still keeps a median 100% of the first one's
        # identifiers (SWE runs at 90% or more: 89 of 120 where the carried index kept 119;
        # airline 143 of 149, 145).
        return [*before, *instead, *folded[k + 1:]], None, tokens

    def remember(self, summary: str, plan: Mapping[str, Any], msgs: Sequence[Any], fmt: str, *,
                 budget: int, after: Any = None, given: Sequence[Any] | None = None) -> None:
        """File the messages ``summary`` stands for (``plan``'s fold, with a remembered span in
        its previous summary's place), unless the fold merged a summary whose span is not
        remembered (the new summary carries it: its span is not whole) or the span is over
        ``SPAN_BUDGETS`` budgets. ``after``: the caller's message that follows the summary's
        message in the history returned (before any edit of it: ``_scoped``); ``given``: the
        caller's history ``msgs`` was planned from (``_after``)."""
        span, previous, carried = self.span(plan, msgs, fmt, given)
        self._read = None
        if previous is not None and not carried:
            return
        costs: Sequence[int] = plan["costs"]
        at = plan.get("previous_at") if carried else None
        span = self._in_order(span, plan, msgs, at)
        # (``at``, where carried, is one of the folded: its summary's tokens give way to the span's.)
        tokens = carried + int(sum([costs[i] for i in (*plan["folded"], *plan["kept"])])) \
            - (int(costs[at]) if at is not None else 0)
        if tokens > min(SPAN_BUDGETS * budget, SPAN_MAX_TOKENS):
            return
        scoped = _scoped(summary, plan, msgs, None if after is None else self._unedited_all([after])[0])
        self._file(scoped, span, tokens)
        if self._store is not None and all(isinstance(m, dict) for m in span):
            self._put(_stored_id(scoped), {"summary": scoped, "tokens": tokens, "messages": list(span)})

    def _in_order(self, span: list[Any], plan: Mapping[str, Any], msgs: Sequence[Any], at: int | None) -> list[Any]:
        """``span`` (the fold's messages in order, a remembered span in place of the previous
        summary at ``at``) with the messages the plan kept verbatim among them, each in its
        place. The summary goes after every kept message (``summary_assembly.assemble``): a span
        read again in its place put the turns it stands for after the messages that followed
        them (a rule kept whole after a command, read with the command's older rounds between
        it and the command's output, was read as that output and lost)."""
        kept: list[int] = plan["kept"]
        if not kept:
            return span
        folded_at: list[int] = plan["folded"]
        grown = len(span) - len(folded_at)
        out = list(span)
        for j, m in reversed(list(zip(kept, self._unedited_all([msgs[i] for i in kept]), strict=True))):
            out.insert(bisect.bisect_left(folded_at, j) + (grown if at is not None and at < j else 0), m)
        return out

    def _put(self, fold_id: str, record: dict[str, Any]) -> None:
        """Keep ``record`` in the store as JSON under ``fold_id``. A record JSON cannot hold is
        not kept, and a store that fails is logged (once) and passed over: a span or a copy's
        original is what a later compaction may read, never what this one needs, so a Redis
        outage does not fail the compaction (the later one merges the summary instead)."""
        assert self._store is not None
        try:
            text = json.dumps(record)
        except (TypeError, ValueError):
            return
        try:
            self._store.put(fold_id, text)
        except Exception as e:  # (any store the caller gave: its own errors)
            self._store_failed(e)

    def _get(self, fold_id: str) -> Any:
        """The JSON record the store keeps under ``fold_id``; None when it keeps none, keeps
        something else than JSON, or fails (logged once, as in ``_put``)."""
        assert self._store is not None
        try:
            raw = self._store.get(fold_id)
        except Exception as e:  # (any store the caller gave: its own errors)
            self._store_failed(e)
            return None
        if raw is None:
            return None
        try:
            return json.loads(raw)
        except (TypeError, ValueError):  # (a store that gave back something else than its text)
            return None

    def _store_failed(self, e: Exception) -> None:
        if not self._warned:
            self._warned = True
            _log.warning("the store failed to keep or give a span (%s: %s): later compactions merge the summary "
                         "where they would have read the turns behind it", type(e).__name__, e)

    def _file(self, scoped: str, span: Sequence[Any], tokens: int) -> None:
        """File ``span`` under ``scoped`` (``_scoped``) here and, when shared, for the process."""
        self.file(_key(scoped), span, tokens)
        if self.shared:
            _PROCESS.file(scoped, span, tokens)

    def _found(self, scoped: str) -> tuple[tuple[Any, ...], int] | None:
        """The span filed under ``scoped`` (``_scoped``) here, else for the process (when
        shared), else in the shared store (None: in none)."""
        key = _key(scoped)
        found = self._spans.items.get(key)
        if found is not None:
            return found
        if self.shared:
            found = _PROCESS.spans.items.get(scoped)
            if found is not None:
                self.file(key, *found)
                return found
        if self._store is None:
            return None
        kept = self._get(_stored_id(scoped))
        # The summary's own text (after its head's hash) is stored beside its span: an id shared
        # by two summaries (its 48-bit hash) can miss, never hand one conversation another's
        # turns.
        if not isinstance(kept, dict) or kept.get("summary") != scoped:
            return None
        messages, tokens = kept.get("messages"), kept.get("tokens")
        if not isinstance(messages, list) or not messages or not all(isinstance(m, dict) for m in messages) \
                or isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 0:
            return None
        self._file(scoped, messages, tokens)
        return self._spans.items.get(key)
