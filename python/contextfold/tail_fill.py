"""The tail fills its target, so the summary's room stays put across compactions.

The protected tail is whole messages (a tool round is never split), found walking back from the
end up to the tail's target. When the next older round is larger than what is left of the
target, the tail stops short and that shortfall would go to the summary, whose size would then
swing with the size of whichever round happened to sit at the boundary (one compaction gets a
summary twice the size of the next). Instead, the summary's room is held to ``ROOM_SWING`` times
its stable room (``contextfold.summary_room.stable_room``) and the shortfall goes to the tail:
the round at the boundary joins it with the middle of its largest message cut (the head and end
kept; the cut is stored under a fold id the marker names, so ``Compactor.recall`` gives it back),
as ``contextfold.degrade`` cuts a message. Each such cut is said in ``.notes``.

The tail takes from the fold only what leaves the fold enough to fill the summary's room: a
digest is about as long as the span it reads at its fullest forms (``FOLD_PER_ROOM``), so a
tail that swallowed the span would leave a summary of a few lines and the budget unused. What
the summary then leaves unused goes back to the tail after the summary is written
(``restore_tail``): the tail's masked or cut messages get their content back, the newest first,
the last one that does not fit whole with its middle cut. A summary shorter than its room (a
short fold says little) leaves room the other way too: the newest rounds of the fold that fit it
join the tail verbatim and the rest is digested again (``grow_tail``, extractive digests only:
it asks the summarizer twice).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from contextfold import _core
from contextfold.content_store import ContentStore, keep_text
from contextfold.prune import apply_edits

__all__ = ["FOLD_PER_ROOM", "Grown", "fill_tail", "grow_tail", "restore_tail", "span_words"]

#: A shortfall under this many tokens is left to the summary (a cut that small keeps nothing).
MIN_FILL_TOKENS = 96

#: Tokens a cut's marker and the pricing differences take, aimed below.
_CUT_SLACK = 24

#: The kind of edit (``CompactionResult.pruned``) that drops a thinking block
#: (``keep_thinking_turns``): never given back.
THINKING_DROP = "drop_part"

#: Share of the budget within which a given-back cut's landing is not aimed again: each aim
#: checks the whole history (~12 ms on the 10,000-message one), and a cut that landed 166 tokens
#: under a budget of 2.49M took three more to fill them.
_AIM_TOLERANCE_SHARE = 0.001

#: Tries at a middle cut's size (``_cut_to``).
_CUT_AIMS = 5

#: A middle cut that fits but prices under this share of its aim is aimed once more, higher.
_CUT_FILL = 0.97

#: Tokens of folded messages per token of the summary's room the fold keeps when the tail grows
#: into it. The extractive digest at its fullest forms, over 600 random spans of the probe
#: conversations (airline and SWE, ``tests/data/probes``), is 0.45-1.40x the span's tokens (p10-p90;
#: median 1.05 airline, 0.84 SWE): a span of 1.5x the room fills it in nine cases of ten.
FOLD_PER_ROOM = 1.5


def span_words(start: int, end: int) -> str:
    """Messages ``start`` to ``end - 1`` in a note's words ("message 4", "messages 4-6")."""
    return f"message {start}" if end - start == 1 else f"messages {start}-{end - 1}"


class Grown(NamedTuple):
    """What ``grow_tail`` found: the history (a message cut when the newest round did not fit
    whole), its plan, and the cut as ``(index, tokens before, tokens aimed at, fold id, whole
    text)`` or None."""

    messages: list[Any]
    plan: dict[str, Any]
    cut: tuple[int, int, int, str, str] | None


def _round_before(legal: bytes, head_end: int, tail_start: int) -> int:
    """Where the tool round just before ``tail_start`` opens: the last opening after the head
    and before ``tail_start`` (``legal``: the plan's openings), or the head's first opening when
    there is none (``tail_walk::find_tail_start`` with a budget of 0 and the tail one longer)."""
    head = next((i for i in range(head_end, tail_start) if legal[i]), tail_start)
    return next((i for i in range(tail_start - 1, head, -1) if legal[i]), head)


def _cut_to(msgs: list[Any], i: int, keep: int, provider: str,
            model: str | None, recoverable: bool = True) -> tuple[list[Any], str, str, Any] | None:
    """``msgs`` with message ``i``'s middle cut so that it prices at ``keep`` tokens or under, the
    cut's fold id, the whole text and the edit; None when no cut of at least 32 tokens fits. A cut is made
    on its text's estimate and lands within a few percent of its aim, above as often as below
    (one 3,822-token output aimed at 1,136 tokens priced 1,237), and moves in jumps (the estimate
    samples long texts: a 6,314-token thought aimed at 1,617 priced 1,676, and aimed 59 lower,
    1,676 again): priced whole again, an overshoot is cut again aimed lower by what it missed,
    twice as much each time it misses again (``_CUT_AIMS`` tries); the first cut that fits is
    kept. ``recoverable=False``: the marker names no fold id and no recall tool (the model is
    not offered one; the caller can still recall the id)."""
    aim, down, low, high = keep, 0, 0, 0
    fitting: tuple[tuple[list[Any], str, str, Any], int] | None = None
    for _ in range(_CUT_AIMS):
        cut = _core.cut_middle(msgs, index=i, keep_tokens=aim, provider=provider, model=model,  # type: ignore[arg-type]
                               recoverable=recoverable)
        if cut is None:
            break
        edit, fold_id, text = cut
        out = apply_edits(msgs, [edit])
        price = int(_core.estimate_each([out[i]], provider=provider, model=model)[0])  # type: ignore[arg-type]
        if price <= keep:
            if fitting is None or price > fitting[1]:
                fitting = ((out, fold_id, text, edit), price)
            if price >= _CUT_FILL * keep:
                break
            # Under its aim by more than a few percent (a cut of escaped JSON lands 5-20%
            # short): aimed again higher, between the aims that fit and missed once one missed;
            # the largest cut that fits is kept.
            low = aim
            nxt = (low + high) // 2 if high else aim + keep - price - 2
        elif fitting is not None:
            high = aim
            nxt = (low + high) // 2
        else:
            down = max(price - keep, 2 * down)
            nxt = aim - down
        if nxt < 32 or nxt <= low or high and nxt >= high:
            break
        aim = nxt
    return None if fitting is None else fitting[0]


def _cut_round(msgs: list[Any], costs: list[int], group: range, room: int, provider: str,
               model: str | None, recoverable: bool = True) -> tuple[int, int, tuple[list[Any], str, str, Any]] | None:
    """The round ``group`` (message indices) fitted into ``room`` tokens by its largest
    message's middle cut: ``(that message's index, the tokens it is cut to, _cut_to's result)``,
    or None when the round fits whole, the cut would keep under 32 tokens, or none fits."""
    i = max(group, key=lambda k: costs[k])
    keep = costs[i] - (sum(costs[k] for k in group) - (room - _CUT_SLACK))
    if not 32 <= keep < costs[i]:
        return None
    cut = _cut_to(msgs, i, keep, provider, model, recoverable)
    return None if cut is None else (i, keep, cut)


def _carried(plan: dict[str, Any], provider: str, model: str | None) -> int:
    """Tokens of the previous summary the plan's fold holds (0: none)."""
    previous = plan.get("previous_summary")
    if not previous:
        return 0
    known = provider if provider in _core.PROVIDERS else "openai"
    return int(_core.estimate_each([{"role": "user", "content": previous}], provider=known, model=model)[0])  # type: ignore[arg-type]


def fill_tail(
    msgs: list[Any],
    plan: dict[str, Any],
    make_plan: Callable[..., dict[str, Any]],
    *,
    room_cap: int,
    budget: int,
    min_tail: int,
    store: ContentStore,
    provider: str,
    model: str | None,
    notes: list[str],
    recoverable: bool = True,
) -> tuple[list[Any], dict[str, Any], Any]:
    """``msgs`` and ``plan``, or, when the room the plan leaves the summary exceeds ``room_cap``
    by ``MIN_FILL_TOKENS`` or more, the tail extended by the whole rounds before it that fit that
    excess, then by the next round with its largest message cut to fit what is left. Third: that
    cut as an edit of ``msgs`` with the tokens it saved (``(index, path, value, saved)``), or None:
    what the summary leaves unused goes back to it (``restore_tail``).

    Both moves are found from the plan's own prices and openings, and planned once together (a
    plan reads the whole history: on 10,000 messages it is most of a compaction's time); the
    whole rounds alone are planned again only when the plan with the cut does not hold."""
    if plan["reason"] is not None or plan.get("kept"):
        return msgs, plan, None
    n = len(msgs)
    head_end = int(plan["head_end"])
    costs: list[int] = plan["costs"]  # (each message's tokens as the plan priced them)
    legal: bytes = plan["legal"]

    def extended(ms: list[Any], start: int, changed: tuple[int, ...] = ()) -> dict[str, Any] | None:
        # (Priced from the first plan's costs: only a message the move changed is priced again.)
        p = make_plan(ms, max(min_tail, n - start), costs=costs, reprice=changed)
        if p["reason"] is not None or int(p["tail_start"]) > start \
                or int(p["fixed_tokens"]) > budget - int(room_cap * 0.8):
            return None
        return p

    # What a fold digests to: a previous summary in it is carried about whole (merged section by
    # section), the rest at FOLD_PER_ROOM span tokens per summary token.
    carried = _carried(plan, provider, model)

    def digest_of(span: int) -> float:
        return min(room_cap, min(carried, span) + max(0, span - carried) / FOLD_PER_ROOM)

    # Whole rounds first: as many messages before the tail as the excess holds, back to where a
    # tail may open, leaving the fold what fills the room.
    excess = budget - int(plan["fixed_tokens"]) - room_cap
    tail_start = int(plan["tail_start"])
    # (No message of the middle is kept: the fold is every message between the head and the
    # tail, summed as slices.)
    span = sum(costs[head_end:tail_start])
    spare = span - carried - int(FOLD_PER_ROOM * max(0, room_cap - carried))
    if excess < MIN_FILL_TOKENS:
        return msgs, plan, None
    s, acc, movable = tail_start, 0, min(excess, spare) - _CUT_SLACK
    while s - 1 > head_end and acc + costs[s - 1] <= movable:
        s -= 1
        acc += costs[s]
    while s < tail_start and not legal[s]:
        s += 1
    whole = f"the tail takes {span_words(s, tail_start)} too: the summary's room (held steady, or capped) is full"
    # Then the round before, its largest message cut to what is left (the whole rounds' tokens
    # counted out of the excess as the plan priced them).
    left = excess - sum(costs[s:tail_start])
    start = _round_before(legal, head_end, s)
    cut = None
    # The cut round leaves the fold too: only where the tail gains more than the summary loses
    # (a first compaction moved a 3,013-token output into the tail cut to 267 tokens, and the
    # summary of the one message left took 111 tokens of a 1,503-token room: 71% of the budget
    # used; a later one left 39% of its budget unused rather than cut a 4,113-token output,
    # though its fold kept a previous summary that filled the room nearly alone).
    gained = left - _CUT_SLACK
    lost = digest_of(sum(costs[head_end:s])) - digest_of(sum(costs[head_end:start]))
    if left >= MIN_FILL_TOKENS and head_end < start < s and gained > lost:
        cut = _cut_round(msgs, costs, range(start, s), left, provider, model, recoverable)
    if cut is not None:
        i, keep, (cut_msgs, fold_id, text, edit) = cut
        p = extended(cut_msgs, start, (i,))
        if p is not None and not any(int(e[0]) == i for e in p["tail_edits"]):
            # (A cut masked again in the tail would make a fold of a fold: recall would give the cut.)
            keep_text(store, fold_id, text, promised=recoverable)
            if s < tail_start:
                notes.append(whole)
            notes.append(_tail_cut_note(i, costs[i], keep, fold_id))
            return cut_msgs, p, (*edit, max(0, costs[i] - int(p["costs"][i])))
    if s < tail_start and (p := extended(msgs, s)) is not None:
        notes.append(whole)
        return msgs, p, None
    return msgs, plan, None


def _tail_cut_note(i: int, before: int, keep: int, fold_id: str) -> str:
    """The note of the tail fill's cut of message ``i`` (``before`` -> ``keep`` tokens)."""
    return (f"{_tail_cut_lead(i)} (~{before} -> ~{keep} tokens; id={fold_id} restores it): "
            "the summary's room (held steady, or capped) is full")


def _tail_cut_lead(i: int) -> str:
    """How the note of the tail fill's cut of message ``i`` starts (``_tail_cut_note``)."""
    return f"the tail takes message {i} with its middle cut"


def restore_tail(
    msgs: list[Any],
    tail_edits: list[Any],
    assemble: Callable[[list[Any]], tuple[list[Any], int, list[Any]]],
    *,
    tokens: int,
    budget: int,
    store: ContentStore,
    provider: str,
    model: str | None,
    notes: list[str],
    why: str = "the summary left room",
    arguments: bool = False,
    where: str = " of the tail",
    recoverable: bool = True,
) -> tuple[list[Any], int, list[Any], bool] | None:
    """The compacted history with some of ``tail_edits`` left out, when the history they made
    (``tokens``) leaves ``MIN_FILL_TOKENS`` or more of ``budget`` unused: the edited messages get
    their content back, the newest first, while they fit whole; the next one, when it does not,
    with its middle cut to what is left. ``assemble(edits)`` builds and checks the history with
    ``edits`` applied: ``(messages, tokens, failures)``. Returns ``(messages, tokens, edits
    kept, whether a message given back was cut in the middle)``, or None when nothing was given
    back. ``why`` and ``where`` word the notes (what
    left the room, which messages); ``recoverable=False``: a cut's marker names no fold id and no
    recall tool (the model is not offered one); ``arguments``: a call's arguments may be cut
    again (the cut of a history with nothing to fold, ``degrade.cut_in_place``)."""
    left = budget - tokens
    # A thinking block ``keep_thinking_turns`` dropped is the caller's rule, not room the
    # compaction took: it stays dropped whatever room is left.
    fixed = [e for e in tail_edits if e[3] == THINKING_DROP]
    tail_edits = [e for e in tail_edits if e[3] != THINKING_DROP]
    fixed_at = {int(e[0]) for e in fixed}
    if not tail_edits or left < MIN_FILL_TOKENS:
        return None
    saved: dict[int, int] = {}
    for e in tail_edits:
        saved[int(e[0])] = saved.get(int(e[0]), 0) + int(e[-1])
    given: list[int] = []
    cut: tuple[Any, str, str] | None = None
    want = whole_tokens = 0
    for i in sorted(saved, reverse=True):
        if saved[i] <= left - _CUT_SLACK:
            left -= saved[i]
            given.append(i)
            continue
        # The newest edited message that does not fit whole: its original, middle cut. When it
        # has nothing to cut to that size, older ones may still fit whole (a SWE run's newest
        # masked output was 1,129 tokens for 1,099 left, and the 942 before it stayed masked).
        if left < MIN_FILL_TOKENS:
            break
        if i in fixed_at:
            continue  # (a cut of the original would cut the thinking the rule dropped)
        costs = _core.estimate_each([msgs[i]], provider=provider, model=model)  # type: ignore[arg-type]
        whole_tokens = int(costs[0])
        want = whole_tokens - saved[i] + left - _CUT_SLACK
        if want >= 32:
            cut = _core.cut_middle(msgs, index=i, keep_tokens=want, provider=provider, model=model,  # type: ignore[arg-type]
                                   recoverable=recoverable, arguments=arguments)
            if cut is not None:
                given.append(i)
                break
    if not given:
        return None
    keep = fixed + [e for e in tail_edits if int(e[0]) not in given]
    out, after, failures = assemble(keep + ([cut[0]] if cut is not None else []))
    if cut is None:
        # Messages given back whole are priced by what their edits saved; the history priced
        # whole can differ (a message the summary was merged into is priced with it: task3-trial0
        # gave back a 232-token cut and landed 1,082 over). Over the budget, the oldest given
        # back are edited again, one at a time.
        while failures and given:
            if any(f[0] != "over_budget" for f in failures):
                return None
            given.pop()
            keep = fixed + [e for e in tail_edits if int(e[0]) not in given]
            out, after, failures = assemble(keep)
        if failures or not given:
            return None
    else:
        # The cut message prices off its aim (a text's estimate and its message's price differ:
        # a 3,068-token output cut to 2,100 landed 95 tokens over the budget, and cut again by
        # that, 431 under): aim again by what the history missed, and keep the fullest that fits.
        best = None if failures or after > budget else (out, after, cut, want)
        fits, over = (want, None) if best is not None else (None, want)
        close = max(MIN_FILL_TOKENS, int(budget * _AIM_TOLERANCE_SHARE))
        for _ in range(4):
            if any(f[0] != "over_budget" for f in failures) or 0 <= budget - after < close:
                break
            # By what the history missed until the aim is bracketed, then halfway.
            want = (fits + over) // 2 if fits is not None and over is not None else want + budget - after - _CUT_SLACK
            again = _core.cut_middle(msgs, index=int(cut[0][0]), keep_tokens=want, provider=provider,  # type: ignore[arg-type]
                                     model=model, recoverable=recoverable, arguments=arguments) if want >= 32 else None
            if again is None:
                break
            out, after, failures = assemble(keep + [again[0]])
            if not failures and after <= budget:
                fits = want
                if best is None or after > best[1]:
                    best = (out, after, again, want)
            else:
                over = want
        if best is None:
            return None
        out, after, cut, want = best
        keep_text(store, cut[1], cut[2], promised=recoverable)
    whole = [i for i in given if cut is None or i != int(cut[0][0])]
    if whole:
        # A message the tail fill cut, given back whole: its cut note (and the id it names, which
        # the history no longer shows) is no longer true.
        stale = tuple(_tail_cut_lead(i) + " (~" for i in whole)
        notes[:] = [n for n in notes if not n.startswith(stale)]
        notes.append(f"{why}: message{'s' if len(whole) > 1 else ''} "
                     f"{', '.join(map(str, sorted(whole)))}{where} kept whole")
    if cut is not None:
        # A message the tail fill cut is cut again here from the same original, under the same
        # id: its note says where the cut ended instead of a second note on the same message.
        i = int(cut[0][0])
        at = next((k for k, n in enumerate(notes) if n.startswith(_tail_cut_lead(i)) and f"id={cut[1]} " in n), None)
        if at is not None:
            notes[at] = _tail_cut_note(i, whole_tokens, want, cut[1])
        else:
            notes.append(f"{why}: message {int(cut[0][0])}{where} kept with its middle cut "
                         f"(~{whole_tokens} -> ~{want} tokens; id={cut[1]} restores it)")
    return out, after, keep, cut is not None


def grow_tail(
    msgs: list[Any],
    plan: dict[str, Any],
    make_plan: Callable[..., dict[str, Any]],
    *,
    left: int,
    provider: str = "openai",
    model: str | None = None,
    recoverable: bool = True,
    cut_next: bool = False,
) -> Grown | None:
    """A plan whose tail also holds the newest whole rounds of ``plan``'s fold that fit ``left``
    tokens (what a summary shorter than its room left unused) or, when not even the newest one
    fits whole, that round with its largest message cut to fit (recoverable); None when neither
    fits. The fold that stays is digested again: it is shorter, so its summary is no longer, and
    the history lands closer to its budget with those rounds verbatim. With ``cut_next``, the
    round before the whole ones moved also joins, cut to what they left (a summary that is not
    written again for the shorter fold leaves that room unused otherwise)."""
    if plan["reason"] is not None or plan.get("kept") or left < MIN_FILL_TOKENS:
        return None
    n = len(msgs)
    head_end, tail_start = int(plan["head_end"]), int(plan["tail_start"])
    costs: list[int] = plan["costs"]
    legal: bytes = plan["legal"]
    s, acc = tail_start, 0
    while s - 1 > head_end and acc + costs[s - 1] <= left - _CUT_SLACK:
        s -= 1
        acc += costs[s]
    while s < tail_start and not legal[s]:
        s += 1
    out, cut = msgs, None
    if s >= tail_start:
        # Not even the newest round fits whole (a 4,113-token thought beside a 2,658-token
        # remainder): it joins the tail with its largest message cut to what is left.
        s = _round_before(legal, head_end, tail_start)
        if not head_end < s < tail_start:
            return None
        cut = _cut_round(msgs, costs, range(s, tail_start), left, provider, model, recoverable)
        if cut is None:
            return None
        out = cut[2][0]
    elif cut_next and left - acc - _CUT_SLACK >= MIN_FILL_TOKENS:
        before = _round_before(legal, head_end, s)
        cut = _cut_round(msgs, costs, range(before, s), left - acc, provider, model, recoverable) \
            if head_end < before < s else None
        if cut is not None:
            out, s = cut[2][0], before
    p = make_plan(out, n - s, costs=costs, reprice=() if cut is None else (cut[0],))
    # (The tail's walk may take more than the rounds moved: a round cut to fit is smaller, and
    # what its target then holds joins the tail too; the caller checks the history fits.)
    if p["reason"] is not None or int(p["tail_start"]) > s or not p["folded"] \
            or len(p["tail_edits"]) > len(plan["tail_edits"]):
        return None
    if cut is None:
        return Grown(msgs, p, None)
    i, keep, (_, fold_id, text, _) = cut
    return Grown(out, p, (i, costs[i], keep, fold_id, text))
