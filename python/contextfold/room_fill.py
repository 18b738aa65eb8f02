"""A summary that fills its room: the Compactor's steps after a summary is written, so the
compacted history lands at 95-100% of its budget (``FILLED_SHARE``) without going over.

- A summary over its share is digested again smaller (``_fitted``), then, between the room that
  fit and the one that did not, once or twice more (``_refitted``).
- What a summary leaves unused goes back to the tail: the tail's masked or cut messages
  (``tail_fill.restore_tail``), else the fold's newest rounds moved into the tail whole
  (``_grown``), else the digest written wider (``_widened``).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Generator, Mapping, Sequence
from typing import Any

from contextfold import _core
from contextfold.compaction_run import CompactionRun, Draft, keep_nothing
from contextfold.content_store import ContentStore, keep_text
from contextfold.errors import CompactionBudgetError, CompactionError
from contextfold.prune import apply_edits
from contextfold.summarize.base import SummaryRequest, SummaryResult
from contextfold.summarize.extractive import ExtractiveSummarizer
from contextfold.summary_assembly import assemble
from contextfold.summary_room import summary_room, summary_text_tokens, trim_index
from contextfold.tail_fill import MIN_FILL_TOKENS, grow_tail, restore_tail, span_words

#: A folded history at this share of its budget or more has filled it (the goal is 95-100%):
#: a digest that filled its room is not redone to move more of the fold into the tail.
FILLED_SHARE = 0.95
#: Tries at moving the fold's newest rounds into the tail (each digests the shorter fold again):
#: aimed lower by what the last history missed, higher by what a shorter fold's digest left
#: under ``FILLED_SHARE``, and halfway back when a larger aim finds no plan (the cut round
#: would be masked in the tail). Successive SWE compactions under 95% of the budget: 33 of 909
#: with 3 tries, 30 with 4.
GROW_AIMS = 4
#: Tries of the same when the summary is kept as written (a model's): each costs a plan and a
#: check, no summary, so the aim is bisected further.
KEPT_GROW_AIMS = 8
#: A digest written again smaller that leaves more than this many tokens of the budget unused,
#: and more than ``REFIT_SLACK_SHARE`` of it, is written once more in a room between
#: (``Compactor._refitted``): each try is a whole digest, which on the 10,000-message synthetic
#: history is most of a compaction, to win back at most a share of the budget that small.
REFIT_SLACK_TOKENS = 16
REFIT_SLACK_SHARE = 0.01
#: A digest this full of its steady room may say more in a wider one (``_widened``): it packs
#: whole forms of units, so a digest that ran out of room stops short of it (a SWE run's sixth
#: compaction, 1,781 tokens of 1,935, beside 931 tokens of the budget unused).
WIDEN_FILL_SHARE = 0.85

#: What ``RoomFill._grown`` found: the history, its tokens, its summary, its plan, the line
#: ending its summary (a recoverable fold's id) and the call that stores what the history names
#: that is not stored yet (``Draft.keep``).
_Grown = tuple[list[Any], int, str, dict[str, Any], str, Callable[[], None]]


class RoomFill:
    """Mixin of ``Compactor``: fitting a written summary and its tail to the budget."""

    summarizer: Any
    provider: str
    model: str | None
    store: ContentStore
    recoverable: bool
    _fallback: ExtractiveSummarizer
    _summary_cap: int
    _plan: Callable[..., dict[str, Any]]
    _span: Callable[[CompactionRun, Mapping[str, Any], Sequence[Any]], tuple[list[Any], str | None]]
    _budget_error: Callable[[CompactionRun, list[Any], dict[str, Any]], CompactionBudgetError]
    _fold_line: Callable[[list[Any], ContentStore], tuple[str, Callable[[], None]]]

    def _place(self, run: CompactionRun, draft: Draft, text: str | None = None, base: list[Any] | None = None) -> bool:
        """Assemble ``draft``'s history (with ``text`` / ``base`` in place of its own when given)
        and check it; the draft takes them when the check passes or nothing was given. Whether
        it passed."""
        out = assemble(run, draft.base if base is None else base, draft.text if text is None else text,
                        draft.native, draft.fold_line)
        tokens, failures = run.verified(out, draft.seams, run.effective)
        if failures and (text is not None or base is not None):
            return False
        draft.out, draft.tokens, draft.failures = out, tokens, failures
        draft.text = draft.text if text is None else text
        draft.base = draft.base if base is None else base
        return not failures

    def _fitted(self, run: CompactionRun, draft: Draft) -> Generator[tuple[Any, SummaryRequest], SummaryResult, None]:
        """``draft`` within its budget: a model's summary a few tokens over gives up its least
        index identifiers first; then (the extractive digest at once) it is digested again
        smaller, at most three times; raises when it still overflows or the history fails the
        provider's checks."""
        # (The digest chooses what goes when it is asked for less; trimming its index gave up
        # the ids a continuing agent asks for. On the held-out probe sets with recoverable=True,
        # an agent loop kept 352 of 608 facts with the trim and 376 digesting again; one
        # compaction at 0.75x / 1x / 1.5x of the naive budget: 134 / 406 / 566 -> 132 / 409 /
        # 566, and without recoverable 167 / 485 / 575 -> 164 / 485 / 575, the loop 469 both.)
        if draft.over_only() and not draft.native and not isinstance(self.summarizer, ExtractiveSummarizer):
            # (The index's lines priced apart and the summary read whole differ by a few
            # tokens, so the cut is checked and widened.)
            excess = draft.tokens - run.effective
            for widen in (1, 2, 4):
                trimmed = trim_index(draft.text, (excess + 8) * widen, provider=self.provider, model=self.model,
                                     previous=draft.request.previous_summary)
                if trimmed is None:
                    break
                if self._place(run, draft, text=trimmed):
                    run.notes.append(f"the summary came out {excess} tokens over its share: "
                                     "its identifier index gave them up")
                    break
        over_room = 0  # the largest room whose digest came out over the budget
        for attempt in range(3):
            if not draft.over_only():
                break
            if attempt or isinstance(self.summarizer, ExtractiveSummarizer):
                over_room = draft.request.max_tokens
            # The summary came out longer than its share: digest again, smaller by the overflow
            # and, from the second try, by a growing margin (a digest's lines priced apart and
            # its text read whole differ a little, so a shorter digest can price a few tokens
            # higher in the history).
            shrink = draft.tokens - run.effective + 16 + attempt * max(32, draft.request.max_tokens // 25)
            r = draft.request
            if attempt == 0 and draft.room and not isinstance(self.summarizer, ExtractiveSummarizer):
                # A model's text over its share: the digest written for the summary's whole room
                # (the model was asked for less: the index's and the requests' shares held back;
                # the digest writes both itself). Shrunk from the model's share, it was written in
                # rooms of a few tokens and lost the standing rules (airline dialogues, a model
                # writing 300 tokens: 145 of 447 planted rules lost over successive compactions).
                draft.request = dataclasses.replace(r, max_tokens=draft.room)
            else:
                draft.request = dataclasses.replace(r, max_tokens=max(16, r.max_tokens - shrink))
            result = yield (self._fallback, draft.request)
            if isinstance(self.summarizer, ExtractiveSummarizer):
                note = "the digest came out over its share of the budget: digested again smaller"
            else:
                draft.fallback = True
                note = "summary over its share of the budget: replaced by the extractive digest"
            if note not in run.notes:
                run.notes.append(note)
            draft.text, draft.native = result.text.strip(), ()
            self._place(run, draft)
        if over_room and not draft.failures:
            yield from self._refitted(run, draft, over_room)
        if draft.failures:
            if draft.over_only():
                raise CompactionBudgetError(
                    f"compacted history still {draft.tokens} tokens, over the budget of {run.effective}",
                    tokens=draft.tokens, budget=run.effective)
            if run.undegraded is not None:
                # A degraded plan the check rejects is no answer: the budget error it replaced.
                raise self._budget_error(run, *run.undegraded)
            raise CompactionError("compaction produced a history a provider would reject: "
                                  + "; ".join(d for _, _, d in draft.failures), tuple(draft.failures))

    def _refitted(self, run: CompactionRun, draft: Draft, over_room: int) -> Generator[
            tuple[Any, SummaryRequest], SummaryResult, None]:
        """A digest written again smaller that fits, written in rooms between its own and
        ``over_room`` (whose digest came out over the budget), halving that bracket twice at
        most while the history leaves more of its budget unused than ``REFIT_SLACK_TOKENS`` and
        ``REFIT_SLACK_SHARE`` of it; the
        fullest that fits is kept. A fit packs whole forms of units and keeps a packing up to 4%
        under its room, so a room shrunk by the 28 tokens a digest overflowed by gave up 198
        (django-11211 as terminal calls: five grep results and their line numbers went, 96% of
        the budget used where 99% fits); and a wider room may pack less, so the bracket moves
        on a fit that is no fuller too."""
        fits = draft.request.max_tokens
        slack = max(REFIT_SLACK_TOKENS, int(run.effective * REFIT_SLACK_SHARE))
        for _ in range(2):
            aim = (fits + over_room) // 2
            if run.effective - draft.tokens <= slack or aim - fits < REFIT_SLACK_TOKENS:
                return
            again = dataclasses.replace(draft.request, max_tokens=aim)
            result = yield (self._fallback, again)
            kept = (draft.out, draft.tokens, draft.text)
            if not self._place(run, draft, text=(result.text or "").strip()):
                over_room = aim
                continue
            fits = aim
            if draft.tokens <= kept[1]:
                draft.out, draft.tokens, draft.text = kept  # (no fuller: the history as it was)
            else:
                draft.request = again

    def _leftover(self, run: CompactionRun, draft: Draft, room: int, own_index: bool) -> Generator[
            tuple[Any, SummaryRequest], SummaryResult, list[Any]]:
        """What the summary left unused goes back to the tail: its masked or cut messages
        (``restore_tail``), or, where it has none and the digest fell short of its room, the
        newest rounds of the fold (``_grown``). The tail's edits applied in the end."""
        tail_edits: list[Any] = run.plan["tail_edits"]
        # A message the tail's fill cut goes back like the tail's own edits: from the history as
        # the run started, the cut one of the edits (django-11848's second compaction cut a
        # thought to fill the tail, the digest came short of its room, and 26% of the budget
        # went unused). A degrading step's cuts likewise, from the undegraded history: a SWE
        # run's 2,420-token last output, cut to give the summary its share, beside a fold of
        # one message whose digest took 173 tokens of 799, left 20% of the budget unused.
        msgs, edits = run.msgs, list(tail_edits)
        cuts: list[Any] = []
        if run.undegraded is not None:
            if not run.degrade_cuts:
                return tail_edits
            cuts = run.degrade_cuts
            msgs, edits = run.undegraded[0], [*edits, *cuts]
        elif run.fill_cut is not None:
            cuts = [run.fill_cut]
            msgs, edits = run.original, [*edits, run.fill_cut]

        def with_kept(kept: list[Any]) -> tuple[list[Any], int, list[Any]]:
            built = assemble(run, apply_edits(msgs, kept) if kept else msgs, draft.text, draft.native,
                              draft.fold_line)
            return (built, *run.verified(built, draft.seams, run.effective))
        restored = restore_tail(msgs, edits, with_kept, tokens=draft.tokens, budget=run.effective,
                                store=run.held, provider=self.provider, model=self.model, notes=run.notes,
                                recoverable=self.recoverable)
        if restored is not None:
            draft.out, draft.tokens, kept, recut = restored
            tail_edits = [e for e in kept if not any(e is c for c in cuts)]
            # (Only where the fill's cut came back whole: given back cut less, under the same id,
            # the history planned whole again showed it whole beside its cut note.)
            if not kept and not recut and run.fill_cut is not None and run.undegraded is None \
                    and draft.tokens < run.effective * FILLED_SHARE:
                yield from self._grown_after_fill(run, draft, room, own_index)
        elif not tail_edits and run.undegraded is None:
            yield from self._room_taken(run, draft, room, own_index)
        return tail_edits

    def _room_taken(self, run: CompactionRun, draft: Draft, room: int, own_index: bool) -> Generator[
            tuple[Any, SummaryRequest], SummaryResult, bool]:
        """The room the summary left taken: by the digest's ``_grown_or_widened``; for a model's
        summary (models write a few hundred tokens whatever the room), by the fold's newest rounds
        moved into the tail, the next one cut to fit, the summary kept as written (asking the
        model again for each aim would multiply the compaction's cost; it covers those rounds
        too, which the continuing model now also reads whole). Whether it was taken."""
        if own_index:
            return (yield from self._grown_or_widened(run, draft, room))
        if draft.native:
            return False
        grown = yield from self._grown(run, draft.request, room, draft.tokens, draft.text, again=False)
        if grown is None:
            return False
        draft.out, draft.tokens, draft.text, run.plan, draft.fold_line, draft.keep = grown
        return True

    def _grown_or_widened(self, run: CompactionRun, draft: Draft, room: int) -> Generator[
            tuple[Any, SummaryRequest], SummaryResult, bool]:
        """The room the summary left taken by the fold's newest rounds, moved into the tail
        (``_grown``), or else by the digest written wider (``_widened``). Whether either took it."""
        grown = yield from self._grown(run, draft.request, room, draft.tokens, draft.text)
        if grown is not None:
            draft.out, draft.tokens, draft.text, run.plan, draft.fold_line, draft.keep = grown
            return True
        before = draft.tokens
        yield from self._widened(run, draft)
        return draft.tokens != before

    def _fills_room(self, request: SummaryRequest, text: str, *, share: float | None = None) -> bool:
        """Whether ``text`` fills ``request``'s room (``max_tokens``) within a fit's tolerance,
        or (``share``) that share of it."""
        written = self._text_tokens(text)
        if share is not None:
            return written >= request.max_tokens * share
        return written + max(MIN_FILL_TOKENS, request.max_tokens // 20) > request.max_tokens

    def _text_tokens(self, text: str) -> int:
        """Tokens of ``text`` as a summary's body (the provider's estimator, model-independent)."""
        return summary_text_tokens(text, self.provider if self.provider in _core.PROVIDERS else "openai")

    def _widened(self, run: CompactionRun, draft: Draft) -> Generator[tuple[Any, SummaryRequest], SummaryResult, None]:
        """The digest written again in the room its steady size (``ROOM_SWING``) held back, when
        it filled that room, the tail could take nothing more (no edit to give back, no round of
        the fold to move) and the history stands under ``FILLED_SHARE`` of its budget: the
        budget is used before the summary is kept steady (a SWE run's sixth compaction held
        its digest to 1,380 tokens of the 1,983 the budget left, beside a fold whose only other
        round held the previous summary: 87% of the budget used)."""
        request = draft.request
        if draft.native or draft.tokens >= run.effective * FILLED_SHARE \
                or not self._fills_room(request, draft.text, share=WIDEN_FILL_SHARE):
            return  # (a digest that said much less than its room: a wider one holds nothing more)
        # Aimed at the digest's size and what the history left unused, not at the room the
        # budget less the rest gives: the digest settles up to 4% under its room (when the
        # history still sampled a summary, a 24,300-character digest counted 6,706 tokens and
        # priced 6,018 in its history, which stood at 89.7% of its budget). The summary's cap is
        # still a cap.
        aim = min(self._summary_cap,
                  self._text_tokens(draft.text) + run.effective - draft.tokens - MIN_FILL_TOKENS // 4)
        before, kept = request.max_tokens, (draft.out, draft.tokens, draft.text)
        for _ in range(2):
            if aim < request.max_tokens + MIN_FILL_TOKENS:
                return
            again = dataclasses.replace(request, max_tokens=aim)
            result = yield (self.summarizer, again)
            wider = (result.text or "").strip()
            if not wider:
                return
            if self._place(run, draft, text=wider):
                if draft.tokens <= kept[1]:
                    # (No fuller: the history as it was, already checked.)
                    draft.out, draft.tokens, draft.text = kept
                    return
                draft.request = again
                run.notes.append(f"the summary takes the room the tail could not (~{aim} tokens where it "
                                 f"was given ~{before})")
                return
            # Over the budget (the digest's lines priced apart and its text read whole differ a
            # little): aimed lower by a tenth of what the wider room added.
            aim -= max(MIN_FILL_TOKENS, (aim - before) // 10)

    def _grown_after_fill(self, run: CompactionRun, draft: Draft, room: int, own_index: bool) -> Generator[
            tuple[Any, SummaryRequest], SummaryResult, None]:
        """After the tail fill's cut came back whole (``restore_tail``) and the history is still
        under ``FILLED_SHARE`` of its budget, the room left is taken as where nothing was cut
        (``_room_taken``): a SWE run's first compaction got its cut message back and
        stayed at 88% of its budget, its digest of 1,038 tokens in a room of 1,726."""
        if run.tail_messages is not None:
            return
        tail_start = int(run.plan["tail_start"])
        whole = self._plan(run, run.original, len(run.original) - tail_start, moved=True)
        if whole["reason"] is not None or int(whole["tail_start"]) != tail_start or whole["tail_edits"] \
                or list(whole["folded"]) != list(run.plan["folded"]):
            return
        # On the history as given back; where no round of the fold fits whole or cut, the digest
        # takes the room instead (a SWE run at 30% stood at 89% of its budget, its digest 4,710
        # tokens of a room of 4,834).
        saved = (run.msgs, run.plan, draft.base, draft.seams)
        run.msgs, run.plan, draft.base, draft.seams = run.original, whole, run.original, whole["seams"]
        if not (yield from self._room_taken(run, draft, room, own_index)):
            run.msgs, run.plan, draft.base, draft.seams = saved

    def _grown(self, run: CompactionRun, request: SummaryRequest, room: int, tokens: int, first: str, *,
               again: bool = True) -> Generator[
            tuple[Any, SummaryRequest], SummaryResult, _Grown | None]:
        """The history with the newest rounds of the fold moved into the tail, verbatim (the
        newest one with its largest message cut when none fits whole), when a digest (``first``)
        shorter than its room, or a history under ``FILLED_SHARE`` of its budget, left them room
        (``tail_fill.grow_tail``): ``(messages, tokens, summary, plan, fold line, keep)`` (nothing
        stored yet: ``Draft.keep``), or None when none fits
        the budget within ``GROW_AIMS`` tries or the result is no fuller. (The shorter fold's
        digest may come out a little longer than the first: the history as a whole must fit.)
        Without ``again``, the shorter fold is not summarized again: ``first`` stays the summary.
        None for a tail sized in messages (``CompactionRun.tail_messages``)."""
        if run.tail_messages is not None:
            return None
        old = run.plan
        # (A digest that filled its room: a shorter fold would free none of it, and digesting
        # again would double the compaction's cost for nothing; unless the history is still
        # under 95% of its budget: a room held to its stable size (`ROOM_SWING`) beside a tail
        # that found nothing to take left 1,500 of 4,344 tokens unused in a SWE run's first
        # compaction.)
        if self._fills_room(request, first) and tokens >= run.effective * FILLED_SHARE:
            return None
        # Aimed again by what the history missed when it comes out over: the tail's walk may take
        # more than the rounds moved (a SWE run's newest round cut to the 1,237 tokens left, and
        # the three messages before it joined too: 223 over, and the room was given up).
        left, best, fitted = run.effective - tokens, None, 0
        # A summary kept as written takes its own size, not the planned share: a tail planned
        # beside the share masked an output it had room for (an airline dialogue's 220-token
        # booking, beside a model's summary of 700 tokens in a share of 1,400).
        make_plan = functools.partial(self._plan, run, moved=True) if again else functools.partial(
            self._plan, run, moved=True, summary_tokens=self._text_tokens(first))
        for _ in range(GROW_AIMS if again else KEPT_GROW_AIMS):
            grown = grow_tail(run.msgs, old, make_plan, left=left,
                              provider=self.provider, model=self.model, recoverable=self.recoverable,
                              cut_next=not again)
            if grown is None:
                if left - fitted < 2 * MIN_FILL_TOKENS:
                    break
                # A larger aim found no plan (django-14915: the round cut to 1,427 tokens was masked
                # in the tail, where 741 was not): halfway back to the aim that fitted, or to none
                # (django-14539: the first aim's round, cut to the 1,262 tokens its digest left,
                # was masked in the tail, and 20% of the budget stayed unused).
                left = (fitted + left) // 2
                continue
            msgs, plan = grown.messages, grown.plan
            folded = [msgs[i] for i in plan["folded"]]
            if again:
                span, previous = self._span(run, plan, msgs)
                result = yield (self.summarizer, dataclasses.replace(request, messages=span, previous_summary=previous))
                text = (result.text or "").strip()
                if not text:
                    break
            else:
                text = first
            run.plan = plan  # (the assembly places the summary as this plan says)
            base = apply_edits(msgs, plan["tail_edits"]) if plan["tail_edits"] else msgs
            # (The span is stored only with the history returned: see ``Draft.keep``.)
            fold_line, store_span = self._fold_line(folded, run.held) if self.recoverable else ("", keep_nothing)
            out = assemble(run, base, text, (), fold_line)
            after, failures = run.verified(out, plan["seams"], run.effective)
            if again and failures and all(f[0] == "over_budget" for f in failures) \
                    and after - run.effective <= 2 * MIN_FILL_TOKENS:
                # Over by a little: the same rounds moved, the shorter fold digested smaller by
                # what the history missed. (The whole history's estimate samples long texts, so a
                # round cut shorter can price the history higher: django-10999 as a terminal
                # agent's calls came out 1 token over with its newest round cut to 209 tokens,
                # and 631 over with it cut to 184; the digest written again smaller was left
                # with 11% of the budget unused.)
                smaller = max(16, self._text_tokens(text) - (after - run.effective) - MIN_FILL_TOKENS // 4)
                result = yield (self.summarizer, dataclasses.replace(
                    request, messages=span, previous_summary=previous, max_tokens=smaller))
                if (result.text or "").strip():
                    text = (result.text or "").strip()
                    out = assemble(run, base, text, (), fold_line)
                    after, failures = run.verified(out, plan["seams"], run.effective)
            run.plan = old
            if any(f[0] != "over_budget" for f in failures):
                break
            if not failures:
                if after > (best[2] if best is not None else tokens):
                    best, fitted = (grown, out, after, text, fold_line, store_span), left
                if after >= run.effective * FILLED_SHARE:
                    break
                # The shorter fold's digest is shorter too and left room of its own (django-14373's
                # first compaction moved a round cut to the 1,111 tokens left, its fold of three
                # messages digested to 260 tokens, and 19% of the budget went unused): aimed
                # again with that room.
                left += run.effective - after - MIN_FILL_TOKENS // 4
                continue
            left -= after - run.effective + MIN_FILL_TOKENS // 4
        if best is None:
            return None
        grown, out, after, text, fold_line, store_span = best
        msgs, plan = grown.messages, grown.plan
        run.plan = plan
        run.msgs = msgs
        moved = f"the summary left room: {span_words(int(plan['tail_start']), int(old['tail_start']))}"
        one = int(old["tail_start"]) - int(plan["tail_start"]) == 1
        stored = store_span
        if grown.cut is None:
            run.notes.append(f"{moved} {'stays' if one else 'stay'} whole in the tail")
        else:
            i, before, keep, fold_id, whole = grown.cut
            cut_words = "joins the tail with its" if one else f"join the tail, message {i} with its"
            run.notes.append(f"{moved} {cut_words} middle cut (~{before} -> ~{keep} tokens; id={fold_id} restores it)")

            def stored() -> None:
                store_span()
                keep_text(run.held, fold_id, whole, promised=self.recoverable)
        return out, after, text, plan, fold_line, stored
