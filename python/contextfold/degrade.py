"""What a compaction does before it gives up: degrade in steps, each said in ``.notes``.

When what must stay verbatim (the head, the protected tail, a summary's minimum) exceeds the
budget, the plan already masks old tool output and shrinks long arguments inside the protected
tail. Then, in order:

1. keep fewer tail messages: never fewer than the last user turn and a pending tool round
   (the last assistant message with calls and the results that follow it); a text agent's
   observation (a user turn opening with its return code) is the harness's answer, not a
   user turn (``_core.tail_floor``), so step 2 may cut it as it cuts a tool output;
   where the agent ran rounds after the user's last turn and the tail holds only the newest,
   that turn stays verbatim where the fold is (``turn_pin``), as a pinned message would;
2. cut the middle of the largest message left in the tail (its head and end kept; the cut is
   stored under a fold id the marker names, so ``Compactor.recall`` gives it back), then the
   next largest, a few times (a cut that would free under ``MIN_CUT_GAIN_TOKENS`` is not made);
   what the summary leaves unused goes back to the cuts (``Compactor._leftover``);
3. give the summary only what is left, under its usual minimum; where that is under the fold's
   standing rules, a summary of the rules alone in it (``Compactor._rules_only``);
4. the last step (``bare_history``): the head, the last user turn and what follows it, and in
   the middle a summary of the fold's standing rules alone where one fits, else a marker line.
   Rules are what a fold must not lose: a marker in their place dropped the user's "never" and
   "do not" with the span. A summary holding every rule whole, on a tail down to the last user
   turn alone, is tried before a step 3 or 4 summary that clips one (``rules_only``).

Only when the system prompt, the tools, the task and the last user turn alone exceed the
budget is ``CompactionBudgetError`` raised, saying by how much (``budget_error``).

A history with nothing to fold (too short, or its protected tail covers it) that is over the
budget takes step 2 alone (``cut_in_place``): the middle of its largest messages cut until it
fits, never the head, the task, the last user turn, a standing rule or a summary. (A last user
turn that carries the newest tool results beside the user's words, as Anthropic, Bedrock and
Gemini write them, has its results cut like any tool output, its words never: ``uncut``.)
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from contextfold import _core
from contextfold.content_store import ContentStore, keep_text
from contextfold.errors import CompactionBudgetError
from contextfold.prune import _copy, apply_edits
from contextfold.summary_message import summary_message

__all__ = ["budget_error", "cut_in_place", "degrade", "floor_tokens", "turn_pin"]

#: How many messages step 2 cuts at most.
MAX_CUTS = 6

#: Tool outputs over this many tokens are masked inside the tail when nothing else fits.
HARD_MASK_TOKENS = 48

#: Arguments longer than this (characters) are shrunk inside the tail when nothing else fits
#: (shrink_json keeps them valid JSON).
HARD_ARGS_CHARS = 64

#: A cut aims at this share of what would just fit.
CUT_MARGIN = 0.95

#: A cut in place aims this many tokens under what would just fit, and is aimed again until it
#: lands at FILL_SHARE of that or more (the history's price and the sum of its messages' differ
#: by a token or two).
FILL_SLACK_TOKENS = 4
FILL_SHARE = 0.97

#: The least a cut must free (tokens) to be made: its marker names an id and a size.
MIN_CUT_GAIN_TOKENS = 8

#: The smallest summary the last step writes (tokens): a line naming what was folded.
MIN_ROOM_TOKENS = 12

#: The plan reason the degrading steps lift: what must stay leaves no room for a summary.
#: ("too short" and "nothing to fold" return the history unchanged, as before: they never raise.)
_LIFTABLE = ("budget",)


def liftable(reason: str | None) -> bool:
    """Whether keeping fewer tail messages or cutting one may make room."""
    return reason is not None and reason.startswith(_LIFTABLE)


def turn_pin(msgs: Sequence[Any], plan: dict[str, Any]) -> int | None:
    """The user's last turn (not the task) when ``plan`` folds it: the agent ran rounds after
    it and the tail holds only the newest. A plan the degrading steps must lift leaves the
    summary a few tokens, too few to quote it (a tau-bench dialogue's "upgrade all the remaining
    reservations" went with the fold behind a 19-token summary), so it stays verbatim where the
    fold is, as a pinned message does. Only the turn: the rounds after it may be many (a SWE
    run's), and the summary and the cuts share what they leave. None otherwise."""
    task, last_user, _, _ = _core.tail_floor(msgs)
    if last_user is None or last_user == task or last_user not in plan.get("folded", ()):
        return None
    return int(last_user)


def degrade(
    msgs: list[Any],
    plan: dict[str, Any],
    make_plan: Callable[..., dict[str, Any]],
    *,
    min_tail: int,
    budget: int,
    summary_tokens: int,
    store: ContentStore,
    provider: str,
    model: str | None,
    notes: list[str],
    recoverable: bool = True,
    cuts: list[Any] | None = None,
) -> tuple[list[Any], dict[str, Any]]:
    """The history (with cut messages replaced) and its plan after the degrading steps, each
    noted; stops at the first plan that leaves room for a summary. ``recoverable=False``: a
    cut's marker names no fold id and no recall tool (the model is not offered one). ``cuts``,
    when given, gets each middle cut made, as an edit of ``msgs`` with the tokens it saved
    (``(index, path, value, saved)``): what the summary leaves unused can give them back."""
    if plan.get("tail_edits"):
        notes.append(f"degraded: masked {len(plan['tail_edits'])} tool outputs / arguments inside the protected tail")
    n = len(msgs)
    task, last_user, floor_start, with_results = _core.tail_floor(msgs)
    floor = max(1, n - floor_start)
    tail = min_tail
    result_max: int | None = None
    args_max: int | None = None
    if floor < min_tail:
        tail = floor
        plan = make_plan(msgs, tail, summary_tokens)
        notes.append(f"degraded: kept the last {floor} messages at least instead of {min_tail} "
                     "(the last user turn and the pending tool round stay whole)")
        if not liftable(plan["reason"]):
            return msgs, plan
    if str(plan["reason"] or "").startswith("budget"):
        # Mask harder inside the tail: every tool output over a placeholder's size.
        harder = make_plan(msgs, tail, summary_tokens, result_max=HARD_MASK_TOKENS, args_max=HARD_ARGS_CHARS)
        if len(harder.get("tail_edits") or ()) > len(plan.get("tail_edits") or ()):
            notes.append(f"degraded: masked tool outputs over {HARD_MASK_TOKENS} tokens and shrank arguments over "
                         f"{HARD_ARGS_CHARS} characters inside the protected tail")
            plan = harder
            result_max, args_max = HARD_MASK_TOKENS, HARD_ARGS_CHARS
    keep_whole = uncut(task, last_user, with_results)
    tried: set[int] = set()
    for _ in range(MAX_CUTS):
        if not str(plan["reason"] or "").startswith("budget"):
            break
        over = int(plan["fixed_tokens"]) + min(int(_core.MIN_SUMMARY_TOKENS), summary_tokens) - budget
        costs = _core.estimate_each(msgs, provider=provider, model=model)  # type: ignore[arg-type]
        candidates = sorted((i for i in range(int(plan["tail_start"]), n) if i not in keep_whole and i not in tried),
                            key=lambda i: -costs[i])
        if not candidates:
            break
        i = candidates[0]
        # A message cut anyway gives the summary its planned share too, up to half of what the
        # cut would keep: the summary is the only home of the user's earlier requests, and the
        # cut is recoverable. (Freeing only the summary's minimum left a 159-token summary beside
        # a 1,485-token cut.)
        need = max(over, 0)
        extra = max(0, int(plan["fixed_tokens"]) + summary_tokens - budget - need)
        free = need + min(extra, max(0, costs[i] - need) // 2)
        # The text's estimate and the message's price differ a little: aim below the overflow.
        keep = max(16, int((costs[i] - free) * CUT_MARGIN) - 32)
        best, price = _aimed_cut(msgs, i, keep, costs[i], provider=provider, model=model, recoverable=recoverable)
        tried.add(i)
        if best is None or costs[i] - price < MIN_CUT_GAIN_TOKENS:
            # A short message's placeholder costs about what it held: cutting it frees nothing
            # (a 31-token reply became a 30-token marker and lost its words).
            continue
        (edit, fold_id, whole), cut_msgs = best
        cut_plan = make_plan(cut_msgs, tail, summary_tokens, result_max=result_max, args_max=args_max)
        if cut_plan["reason"] is not None and not str(cut_plan["reason"]).startswith("budget"):
            break  # the cut would change the plan's nature, not make room: keep the history whole
        keep_text(store, fold_id, whole, promised=recoverable)
        if cuts is not None:
            cuts.append((*edit, max(0, costs[i] - int(price))))
        msgs, plan = cut_msgs, cut_plan
        notes.append(f"degraded: cut the middle of message {i} (~{costs[i]} -> ~{keep} tokens; "
                     f"id={fold_id} restores it)")
    if str(plan["reason"] or "").startswith("budget"):
        # What is left under the budget is less than a summary's usual minimum: give the
        # summary just that (the folded span stays recoverable by its id).
        room = budget - int(plan["fixed_tokens"])
        if room >= MIN_ROOM_TOKENS:
            small = make_plan(msgs, tail, room, result_max=result_max, args_max=args_max)
            if small["reason"] is None:
                notes.append(f"degraded: the summary gets only the {room} tokens left under the budget")
                plan = small
    return msgs, plan


def uncut(task: int | None, last_user: int | None, with_results: bool) -> set[int]:
    """The messages no middle cut touches: the task, and the last user turn, unless it carries
    tool results beside the user's words (Anthropic, Bedrock, Gemini write the newest results
    and the next words in one turn): ``cut_middle`` cuts such a turn's largest result and never
    its words. Kept whole, a large result there raised ``CompactionBudgetError`` where the
    same history with the words in a turn of their own fit."""
    whole = {task} if task is not None else set()
    if last_user is not None and (not with_results or last_user == task):
        whole.add(last_user)
    return whole


def _aimed_cut(msgs: list[Any], i: int, keep: int, cost: int, *, provider: str, model: str | None,
               recoverable: bool, arguments: bool = False,
               fill: float = 0.0) -> tuple[tuple[Any, list[Any]] | None, int]:
    """Message ``i`` (``cost`` tokens) with its middle cut to about ``keep`` tokens: ``((the
    core's cut: edit, fold id, whole text), the history with it), its price)``, or ``(None,
    cost)`` where the message has nothing to cut. With ``fill`` (a share of ``keep``), a cut
    that lands under ``fill * keep`` is aimed again higher, between the aims that fit and
    missed, and the largest cut within ``keep`` is returned."""
    best: tuple[Any, list[Any]] | None = None
    price = cost
    fitting: tuple[tuple[Any, list[Any]], int] | None = None
    aim, low, high = keep, 0, cost
    for _ in range(6 if fill else 4):
        # Cut from the message as it is, re-aimed until its price meets the target (the text's
        # estimate and the message's price differ by a few percent; on escaped JSON a cut lands
        # 5-20% under its aim, and the price moves in steps).
        cut = _core.cut_middle(msgs, index=i, keep_tokens=aim, provider=provider, model=model,  # type: ignore[arg-type]
                               recoverable=recoverable, arguments=arguments)
        if cut is None:
            if not fill or aim <= 16:
                break
            # No cut this close to the whole is smaller than it: aimed lower.
            high = aim
            nxt = (low + aim) // 2 if low else max(16, aim * 9 // 10)
        else:
            best = (cut, apply_edits(msgs, [cut[0]]))
            price = _core.estimate_each([best[1][i]], provider=provider, model=model)[0]  # type: ignore[arg-type]
            if price <= keep:
                if fitting is None or price > fitting[1]:
                    fitting = (best, price)
                if not fill or price >= fill * keep:
                    break
                low = aim
            elif aim <= 16:
                break
            else:
                high = aim
            if low and high < cost:
                nxt = (low + high) // 2
            else:
                nxt = max(16, aim * keep // max(1, price) - (8 if price > keep else 2))
        if nxt == aim or nxt >= high or nxt <= low:
            break
        aim = nxt
    if fitting is not None:
        return fitting
    return best, price


def cut_in_place(msgs: list[Any], *, head_end: int, budget: int,
                 check: Callable[[list[Any]], tuple[int, list[tuple[str, int, str]]]], store: ContentStore,
                 provider: str, model: str | None, recoverable: bool,
                 notes: list[str], pinned: Sequence[int] = (),
                 why: str = "nothing to fold, over the budget") -> tuple[list[Any], int, list[tuple[Any, int]]] | None:
    """A history with nothing to fold (too short, or its protected tail covers it) that is over
    ``budget``: the middle of its largest messages cut, the largest first, until ``check``
    passes at the budget (never a message of the head, the task or the last user turn, nor one
    that states a standing rule or carries a summary: a cut summary loses the rules and requests
    it holds, nor one of ``pinned``, which the caller keeps verbatim; each cut's head and end
    kept, its text stored under the fold id its marker names, each noted).
    ``(messages, tokens, [(edit, tokens saved)])``, or None where the cuts cannot make it fit
    (or the check finds anything but the budget wrong). ``why`` opens each cut's note."""
    task, last_user, _, with_results = _core.tail_floor(msgs)
    keep_whole = uncut(task, last_user, with_results) | set(range(head_end)) | set(pinned)
    out, made, tried = list(msgs), [], set()
    tokens, failures = check(out)
    for _ in range(MAX_CUTS):
        if not failures or any(k != "over_budget" for k, _, _ in failures):
            break
        costs = _core.estimate_each(out, provider=provider, model=model)  # type: ignore[arg-type]
        candidates = sorted((i for i in range(len(out)) if i not in keep_whole and i not in tried),
                            key=lambda i: -costs[i])
        if not candidates:
            break
        i = candidates[0]
        tried.add(i)
        if _holds_rules(out[i]):
            continue
        # What the message may cost for the history to just fit: a cut aimed there, filled up to
        # it (a cut aimed at CUT_MARGIN alone landed a reservation at 152 of the 228 tokens it
        # could keep), checked whole; where the whole history's price disagrees, the cut aimed
        # below it with the margin.
        limit = costs[i] - (tokens - budget)
        best, price = None, costs[i]
        checked: tuple[int, list[tuple[str, int, str]]] | None = None  # (the check of ``best``, once made)
        for keep, fill in ((limit - FILL_SLACK_TOKENS, FILL_SHARE), (max(16, int(limit * CUT_MARGIN) - 32), 0.0)):
            if keep < 16:
                continue
            # (Here a call's huge arguments may be cut too: nothing can be folded.)
            best, price = _aimed_cut(out, i, keep, costs[i], provider=provider, model=model, recoverable=recoverable,
                                     arguments=True, fill=fill)
            checked = None
            if not fill:
                break
            if best is not None:
                checked = check(best[1])
                if not any(k == "over_budget" for k, _, _ in checked[1]):
                    break
        if best is None or costs[i] - price < MIN_CUT_GAIN_TOKENS:
            continue
        (edit, fold_id, whole), out = best
        keep_text(store, fold_id, whole, promised=recoverable)
        made.append((edit, max(0, costs[i] - int(price))))
        what = "shrank the arguments" if cut_kind(edit[1]) in ("arguments", "tool_use_input") else "cut the middle"
        notes.append(f"{why}: {what} of message {i} (~{costs[i]} -> "
                     f"~{price} tokens; id={fold_id} restores it)")
        # (The filled cut was checked whole already: not checked again.)
        tokens, failures = checked if checked is not None else check(out)
    return (out, tokens, made) if made and not failures else None


def cut_kind(path: Sequence[Any]) -> str:
    """The ``Pruned.kind`` of a cut at ``path`` (``_core.cut_middle``'s edit): a message's own
    text is ``content``, a block's text ``result_block``, a call's arguments ``arguments`` (chat,
    Responses) or ``tool_use_input`` (a call block)."""
    if path and path[-1] in ("arguments", "input", "args"):
        return "arguments" if path[0] in ("tool_calls", "arguments") else "tool_use_input"
    return "content" if len(path) == 1 else "result_block"


def _holds_rules(message: Any) -> bool:
    """Whether ``message`` states a standing rule or carries a summary (the markers the library
    writes around one): cutting its middle could drop what no later step gets back."""
    if _core.standing_rules([message], previous=None):
        return True
    try:
        text = json.dumps(message, default=str)
    except (TypeError, ValueError, RecursionError):
        text = str(message)
    return _core.SUMMARY_MARKERS[0] in text


def _role(m: Any) -> str | None:
    r = m.get("role") if isinstance(m, dict) else getattr(m, "role", None)
    return r if isinstance(r, str) else None


def floor_tokens(msgs: Sequence[Any], kw: dict[str, Any], fmt: str | None = None) -> int:
    """Tokens of what a compaction never gives up: the system prompt and tools (``kw``: the
    estimate's keywords), the task and the last user turn. With ``fmt`` (a compaction that
    folds, in that wire format), what a fold needs beside them as well: where the task and the
    last user turn are two user turns with messages between them, the shortest marker message
    between the two (both are sent byte-identical, and two user turns never meet at a fold)."""
    task, last_user, _, _ = _core.tail_floor(msgs)
    system = [i for i in range(task or 0) if _role(msgs[i]) in ("system", "developer")]
    kept = sorted({*system, *(i for i in (task, last_user) if i is not None)})
    must = [msgs[i] for i in kept]
    if fmt is not None and task is not None and last_user is not None and last_user > task + 1 \
            and _role(msgs[task]) == _role(msgs[last_user]) == "user":
        marker = json.loads(_core.summary_message(BARE_MARKERS[-1], format=fmt, role="assistant"))  # type: ignore[arg-type]
        must.insert(kept.index(last_user), marker)
    return int(_core.estimate(must, **kw))


def budget_error(msgs: Sequence[Any], *, budget: int, kw: dict[str, Any], reason: str,
                 needed: int, fmt: str | None = None) -> CompactionBudgetError:
    """The error raised when nothing fits, saying what must stay and by how much it misses.
    ``needed``: the plan's smallest history (head, tail floor, a summary's minimum); ``fmt``:
    the wire format of a compaction that folds (its floor holds a marker between two user
    turns: ``floor_tokens``)."""
    floor = floor_tokens(msgs, kw)
    if floor > budget:
        return CompactionBudgetError(
            f"the system prompt, tools, the task and the last user turn alone take {floor} tokens, "
            f"{floor - budget} over the budget of {budget}", tokens=floor, budget=budget)
    marked = floor_tokens(msgs, kw, fmt) if fmt is not None else floor
    if marked > budget:
        return CompactionBudgetError(
            f"the system prompt, tools, the task and the last user turn take {floor} of the {budget} tokens, and "
            f"the shortest marker between the task and the last user turn (two user turns, each sent "
            f"byte-identical) brings them to {marked}, {marked - budget} over", tokens=marked, budget=budget)
    return CompactionBudgetError(
        f"{reason}: {needed - budget} tokens over after every degrading step (the system prompt, tools, "
        f"task and last user turn alone take {floor} of the {budget} tokens; the messages after the last "
        "user turn and the summary's markers do not fit beside them)", tokens=needed, budget=budget)


#: Marker lines of a history folded without a summary, richest first (``{n}``: messages folded,
#: ``{calls}``: the tools they called).
BARE_MARKERS = ("[{n} earlier messages folded without a summary (no room for one under the budget){calls}]",
                "[{n} earlier messages folded without a summary]", "[{n} messages folded]", "[…]")

Check = Callable[[list[Any], list[int]], "tuple[int, list[tuple[str, int, str]]]"]


def _seams(origin: Sequence[int | None]) -> list[int]:
    """Output positions joining messages that were not neighbours (``None``: a message added)."""
    return [p for p in range(1, len(origin))
            if origin[p] is None or origin[p - 1] is None or origin[p] != origin[p - 1] + 1]  # type: ignore[operator]


#: ``(folded indices, room in tokens) -> (summary text, message text with its markers)`` of a
#: summary of the fold's standing rules alone, or None (see ``bare_history``).
RulesSummary = Callable[[list[int], int], "tuple[str, str] | None"]

#: A recoverable compaction's clause naming a folded span's stored id, and the call storing it.
FoldClause = Callable[[list[Any]], "tuple[str, Callable[[], None]]"]


def _with_clause(marker: str, clause: str) -> str:
    """``marker`` naming the fold's id before its closing bracket (braces escaped: the marker
    is a format string)."""
    return marker[:-1] + "; " + clause.replace("{", "{{").replace("}", "}}") + "]"


#: What a note adds where a recoverable compaction's fold kept no id.
_UNRECOVERABLE = "; not recoverable (no room for its id)"


def _stored(marker: str, clause: str, keep: Callable[[], None]) -> str:
    """Store the fold when the marker kept names it; what the note adds (nothing otherwise:
    a marker that had no room for the id leaves the span unrecoverable, and says so)."""
    if clause and marker not in BARE_MARKERS:
        keep()
        return ""
    return _UNRECOVERABLE if clause else ""

#: Tokens of a summary message besides its text, guessed before the check prices it.
_ENVELOPE_GUESS = 12


def _roles_after(before: Any, fmt: str) -> tuple[str, ...]:
    """The roles a message the compaction writes may take right after ``before``: never a user
    turn after a chat tool result (Mistral's validator refuses tool -> user, as for the summary:
    ``Dialect::refuses_user_after_tool``; a fold marker took the user role there)."""
    if fmt == "chat" and isinstance(before, dict) and before.get("role") == "tool":
        return ("assistant",)
    return ("assistant", "user")


def _rules_between(rules: RulesSummary, folded: list[int], front: list[Any], tail: list[Any],
                   origin: list[int | None], *, check: Check, like: Callable[[dict[str, Any]], Any], fmt: str,
                   budget: int, hard: Callable[[list[Any], list[int | None]], list[Any]]) -> tuple[list[Any], int, str] | None:
    """``front``, a rules-only summary message, ``tail``: the summary sized to what the two
    leave under ``budget`` (re-aimed by what the check finds over, up to three times), as a
    message of the role the seams accept. Where the two leave no room, they are masked as the
    marker's step masks them (``hard``). ``(messages, tokens, summary text)`` or None."""
    seams = _seams(origin)
    plain = _seams([k for k in origin if k is not None])
    without, _ = check(front + tail, plain)
    if without + _ENVELOPE_GUESS >= budget:
        masked = hard(front + tail, [k for k in origin if k is not None])
        front, tail = masked[:len(front)], masked[len(front):]
        without, _ = check(front + tail, plain)
    for between in _roles_after(front[-1] if front else None, fmt):
        room = budget - without - _ENVELOPE_GUESS
        for _ in range(3):
            made = rules(folded, room) if room > 0 else None
            if made is None:
                break
            text, wrapped = made
            out = front + [like(summary_message(wrapped, format=fmt, role=between))] + tail
            tokens, failures = check(out, seams)
            if not failures:
                return out, tokens, text
            if any(k != "over_budget" for k, _, _ in failures):
                break
            room -= tokens - budget + 2
    return None


#: Tokens beyond its mask's price a recoverable cut of the last degrading step keeps, tried in
#: turn (``bare_history``): a marker's worth, none, then the least a cut keeps (16 tokens).
_RECOVERABLE_CUT_SLACKS = (24, 0, -(1 << 20))


def bare_history(
    msgs: list[Any],
    plan: dict[str, Any],
    *,
    fmt: str,
    check: Check,
    like: Callable[[dict[str, Any]], Any],
    notes: list[str],
    budget: int,
    estimate_kw: dict[str, Any],
    rules: RulesSummary | None = None,
    rules_only: bool = False,
    fold_clause: FoldClause | None = None,
    recover_only: bool = False,
    pinned: Sequence[int] = (),
    store: ContentStore | None = None,
) -> tuple[list[Any], int, tuple[int, ...], str | None] | None:
    """The last step before raising: the head (system, task), the last user turn and what
    follows it (the pending tool round whole), and no summary: a summary of the fold's standing
    rules alone where one fits (``rules(folded, room)``: the summary's text and its message
    text with the markers, or None when the fold states no rule or none fits ``room`` tokens),
    else only a marker line saying how many messages were folded, the richest that fits (an
    added message where two turns of one role would meet: never a line joining them, which
    would rewrite the task, a head or a pinned message).
    ``check(out, seams)`` is the Compactor's verification at the budget. Over the budget only,
    the kept messages are masked as hard as inside the tail (tool output over
    ``HARD_MASK_TOKENS``, arguments over ``HARD_ARGS_CHARS``; never the last message, nor one
    of ``pinned`` or the plan's kept ones). Returns
    ``(messages, tokens, folded indices, the rules summary's text or None)`` or None when even
    that does not fit or would not be valid, or when the system prompt, tools, task and last
    user turn alone do not fit (``estimate_kw``: the estimate's keywords; then the error says
    by how much). With ``rules_only``, only a rules summary is tried (no marker). With
    ``fold_clause`` (a recoverable compaction: the clause naming a span's stored id, and the
    call that stores it), each marker names the fold's id, and a marker without it is tried
    only where none with it fits; with ``recover_only`` as well, never (None instead: the
    caller has a step that frees room for the id). With ``store`` (a recoverable compaction),
    each message that hard masking would shorten is cut in its middle to about the size of its
    mask instead, its text stored under the id its marker names; the plain masks (which name no
    id) only where those cuts do not fit."""
    from contextfold.prune import prune

    if floor_tokens(msgs, estimate_kw, fmt) > budget:
        return None
    provider, model = estimate_kw["provider"], estimate_kw.get("model")

    # The messages kept verbatim: the caller's pinned ones, wherever they stand, and those the
    # plan keeps in the middle with them (an item kept with its own).
    verbatim = {int(i) for i in plan.get("kept", ())} | set(pinned)

    def hard(out: list[Any], origin: list[int | None]) -> list[Any]:
        masked = prune(out, protect_tail_tokens=0, min_tail=1, protect_first_n=1, provider=provider, model=model,
                       tool_result_max_tokens=HARD_MASK_TOKENS, arguments_max_chars=HARD_ARGS_CHARS)
        # The pending round's own arguments too (the walk keeps a tool group whole).
        masked = _core.shrink_arguments(masked, max_chars=HARD_ARGS_CHARS, copy=_copy)
        # A pinned message stays as it is: where the rest masked as hard does not make room
        # for it, the compaction raises.
        return [out[p] if origin[p] in verbatim else m for p, m in enumerate(masked)]

    def named_cuts(out: list[Any], masked: list[Any], changed: list[int], prices: list[int],
                   slack: int) -> dict[int, tuple[Any, str, str]]:
        # Each message the masking shortened, cut from its original to about its mask's size
        # and ``slack`` tokens, as (edit, id, text): a marker (or the arguments' fold key)
        # naming the id that restores it. A message no cut can name is left out.
        cuts = {}
        for p, price in zip(changed, prices, strict=True):
            got = _core.cut_middle(out, index=p, keep_tokens=max(16, price + slack), provider=provider,
                                   model=model, recoverable=True, arguments=True)
            if got is not None:
                cuts[p] = (got[0], got[1], got[2])
        return cuts

    def with_cuts(out: list[Any], masked: list[Any], changed: list[int],
                  cuts: dict[int, tuple[Any, str, str]]) -> list[Any]:
        # ``out`` with the named cuts, and the plain masks of the other changed messages.
        cut = apply_edits(out, [edit for edit, _, _ in cuts.values()])
        for p in changed:
            if p not in cuts:
                cut[p] = masked[p]
        return cut

    def recoverably(out: list[Any], masked: list[Any], seams: Any) -> tuple[list[Any], int] | None:
        # The masked history with each mask that can name an id replaced by a named cut: the
        # cuts keep about their masks' size and a marker's more; where that does not fit,
        # their masks' size (a marker naming an id is no longer than a mask's placeholder),
        # then the least a cut keeps; then the cuts that cost the most over their masks give
        # way to them one by one. None where no named cut fits: a mask naming no id is the
        # last resort.
        changed = [p for p, m in enumerate(masked) if m is not out[p]]
        if not changed or store is None:
            return None
        prices = [int(t) for t in _core.estimate_each([masked[p] for p in changed], provider=provider, model=model)]

        def fits(cuts: dict[int, tuple[Any, str, str]]) -> tuple[list[Any], int] | bool:
            # The history with ``cuts`` and its tokens where it passes the check; else whether
            # it failed by the budget alone (smaller cuts may pass) or by anything else.
            cut = with_cuts(out, masked, changed, cuts)
            tokens, failures = check(cut, seams)
            return (cut, tokens) if not failures else all(k == "over_budget" for k, _, _ in failures)

        got: tuple[list[Any], int] | bool = False
        cuts: dict[int, tuple[Any, str, str]] = {}
        for slack in _RECOVERABLE_CUT_SLACKS:
            cuts = named_cuts(out, masked, changed, prices, slack)
            if not cuts or (got := fits(cuts)) is False:
                return None
            if got is not True:
                break
        else:
            # The least cuts, over the budget: those costing the most over their masks go first.
            now = _core.estimate_each([cut for p, cut in enumerate(with_cuts(out, masked, changed, cuts)) if p in cuts],
                                      provider=provider, model=model)
            excess = {p: int(t) - prices[changed.index(p)] for p, t in zip(sorted(cuts), now, strict=True)}
            for p in sorted(cuts, key=lambda q: -excess[q]):
                del cuts[p]
                if not cuts or (got := fits(cuts)) is False:
                    return None
                if got is not True:
                    break
        if isinstance(got, bool):
            return None
        for _, fold_id, text in cuts.values():
            keep_text(store, fold_id, text, promised=True)
        return got

    def attempt(out: list[Any], origin: list[int | None]) -> tuple[list[Any], int] | None:
        seams = _seams(origin)
        tokens, failures = check(out, seams)
        if failures and all(k == "over_budget" for k, _, _ in failures):
            masked = hard(out, origin)
            if (named := recoverably(out, masked, seams)) is not None:
                return named
            out = masked
            tokens, failures = check(out, seams)
        return None if failures else (out, tokens)
    base = apply_edits(msgs, plan["tail_edits"]) if plan.get("tail_edits") else list(msgs)
    n = len(base)
    task, last_user, floor_start, _ = _core.tail_floor(msgs)
    head_end = int(plan["head_end"])
    # (The caller's pinned messages of the middle are kept too, wherever the plan left them: a
    # rules-only fold took a pinned turn into its summary, in 4 of 5,960 audited loops.)
    kept = sorted({i for i in (*plan.get("kept", ()), *pinned) if head_end <= i < floor_start})
    front = list(range(head_end)) + kept
    # Tails, longest first: from the floor on, then the last user turn and the newest messages
    # after it (never opening on a result: the check rejects an orphan).
    own = last_user if last_user is not None and last_user >= head_end else None
    # A call of the pending last turn still awaiting its result (the caller appends the result
    # next) stays in every tail: folded, its result would arrive for a call the history no
    # longer has (the provider rejects it; the next compaction raises UnpairedToolCallsError).
    pending = int(plan.get("pending_from", n))
    awaiting = [int(i) for k, i, _ in plan.get("input_failures", ()) if k == "orphan_call" and int(i) >= pending]
    if pending < n and _core.called_tools([msgs[n - 1]]):
        # (The check passes a chat history's last message's own calls: answered next.)
        awaiting.append(n - 1)
    must_keep = min(awaiting) if awaiting else None
    tails: list[list[int]] = [list(range(max(floor_start, head_end), n))]
    lo = (own + 1) if own is not None else max(floor_start, head_end)
    for s in range(max(lo, floor_start + 1), n):
        tails.append(([own] if own is not None else []) + list(range(s, n)))
    if own is not None and own + 1 < n:
        # Last of all: the last user turn alone, the tool round after it folded with the rest
        # (the marker names the tools called, so the model does not call them blindly again;
        # a finished round only: a call awaiting its result is in every tail, see `must_keep`).
        tails.append([own])
    for tail in tails:
        if not tail or not front or (must_keep is not None and must_keep not in tail):
            continue
        folded = [i for i in range(head_end, n) if i not in kept and i not in tail]
        if not folded:
            continue
        left, right = base[front[-1]], base[tail[0]]
        same = isinstance(left, dict) and isinstance(right, dict) and left.get("role") is not None \
            and left.get("role") == right.get("role")
        said = f"kept the head, the last user turn and the {len(tail)} messages from {tail[0]}"
        calls = _core.called_tools([msgs[i] for i in folded])
        named = f"; tools called: {', '.join(calls)}" if calls else ""
        if tail[-1] != n - 1:
            after = f"message {n - 1}" if tail[-1] + 1 == n - 1 else f"messages {tail[-1] + 1}-{n - 1}"
            said += f"; what followed the last user turn ({after}) did not fit and was folded"
        if rules is not None:
            ruled = _rules_between(rules, folded, [base[i] for i in front], [base[i] for i in tail],
                                   [*front, None, *tail], check=check, like=like, fmt=fmt, budget=budget, hard=hard)
            if ruled is not None:
                notes.append(f"degraded: folded {len(folded)} messages into a summary of their standing rules "
                             f"alone (no room for more): {said}")
                return ruled[0], ruled[1], tuple(folded), ruled[2]
        if rules_only:
            continue
        span = [msgs[i] for i in folded]
        clause, keep = fold_clause(span) if fold_clause is not None else ("", lambda: None)
        named_only = bool(clause) and recover_only
        markers = [_with_clause(m, clause) for m in BARE_MARKERS] if clause else []
        if not named_only:
            markers += BARE_MARKERS
        for marker in markers:
            line = marker.format(n=len(folded), calls=named)
            # A marker message between the head and the tail (the check rejects the role that
            # would meet its own kind at a seam).
            for between in _roles_after(base[front[-1]], fmt):
                added = like(json.loads(_core.summary_message(line, format=fmt, role=between)))  # type: ignore[arg-type]
                got = attempt([base[i] for i in front] + [added] + [base[i] for i in tail], [*front, None, *tail])
                if got is not None:
                    notes.append(f"degraded: folded {len(folded)} messages without a summary (no room for one): {said}"
                                 + _stored(marker, clause, keep))
                    return got[0], got[1], tuple(folded), None
        if not same:
            # Turns of two roles meet: nothing is needed between them (a fold that keeps no id).
            got = None if named_only else attempt([base[i] for i in front] + [base[i] for i in tail],
                                                  [*front, *tail])
            if got is not None:
                notes.append(f"degraded: folded {len(folded)} messages without a summary or a marker (no room "
                             f"for either): {said}" + (_UNRECOVERABLE if clause else ""))
                return got[0], got[1], tuple(folded), None
        # Two turns of one role with not even a marker message between them are not joined into
        # one: the message before the fold is the task, a head or a pinned message, each sent
        # byte-identical (a join rewrote the task as the task, a marker line and the last user
        # turn); the compaction raises instead.
    return None
