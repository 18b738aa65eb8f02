"""What a compaction does before it gives up: degrade in steps, each said in ``.notes``.

When what must stay verbatim (the head, the protected tail, a summary's minimum) exceeds the
budget, the plan already masks old tool output and shrinks long arguments inside the protected
tail. Then, in order:

1. keep fewer tail messages: never fewer than the last user turn and a pending tool round
   (the last assistant message with calls and the results that follow it);
2. cut the middle of the largest message left in the tail (its head and end kept; the cut is
   stored under a fold id the marker names, so ``Compactor.recall`` gives it back), then the
   next largest, a few times.

Only when the system prompt, the tools, the task and the last user turn alone exceed the
budget is ``CompactionBudgetError`` raised, saying by how much (``budget_error``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from contextfold import _core
from contextfold.content_store import ContentStore
from contextfold.errors import CompactionBudgetError
from contextfold.prune import apply_edits

__all__ = ["budget_error", "degrade"]

#: How many messages step 2 cuts at most.
MAX_CUTS = 6

#: Tool outputs over this many tokens are masked inside the tail when nothing else fits.
HARD_MASK_TOKENS = 48

#: Arguments longer than this (characters) are shrunk inside the tail when nothing else fits
#: (shrink_json keeps them valid JSON).
HARD_ARGS_CHARS = 64

#: A cut aims at this share of what would just fit.
CUT_MARGIN = 0.95

#: The smallest summary the last step writes (tokens): a line naming what was folded.
MIN_ROOM_TOKENS = 12

#: Plan reasons the degrading steps can lift (the tail's floor leaves no room for a summary, or
#: covers the whole history).
_LIFTABLE = ("budget", "too short to compact", "nothing to fold: the head and the protected tail")


def liftable(reason: str | None) -> bool:
    """Whether keeping fewer tail messages or cutting one may make room."""
    return reason is not None and reason.startswith(_LIFTABLE)


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
) -> tuple[list[Any], dict[str, Any]]:
    """The history (with cut messages replaced) and its plan after the degrading steps, each
    noted; stops at the first plan that leaves room for a summary."""
    if plan.get("tail_edits"):
        notes.append(f"degraded: masked {len(plan['tail_edits'])} tool outputs / arguments inside the protected tail")
    n = len(msgs)
    task, last_user, floor_start = _core.tail_floor(msgs)
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
    keep_whole = {i for i in (task, last_user) if i is not None}
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
        # The text's estimate and the message's price differ a little: aim below the overflow.
        keep = max(16, int((costs[i] - max(over, 0)) * CUT_MARGIN) - 32)
        best: tuple[Any, list[Any]] | None = None
        aim = keep
        for _ in range(4):
            # Cut from the message as it is, re-aimed until its price meets the target (the
            # text's estimate and the message's price differ by a few percent).
            cut = _core.cut_middle(msgs, index=i, keep_tokens=aim, provider=provider, model=model)  # type: ignore[arg-type]
            if cut is None:
                break
            best = (cut, apply_edits(msgs, [cut[0]]))
            price = _core.estimate_each([best[1][i]], provider=provider, model=model)[0]  # type: ignore[arg-type]
            if price <= keep or aim <= 16:
                break
            aim = max(16, aim * keep // price - 8)
        tried.add(i)
        if best is None:
            continue
        (_, fold_id, whole), cut_msgs = best
        cut_plan = make_plan(cut_msgs, tail, summary_tokens, result_max=result_max, args_max=args_max)
        if cut_plan["reason"] is not None and not str(cut_plan["reason"]).startswith("budget"):
            break  # the cut would change the plan's nature, not make room: keep the history whole
        store.put(fold_id, whole)
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


def _role(m: Any) -> str | None:
    r = m.get("role") if isinstance(m, dict) else getattr(m, "role", None)
    return r if isinstance(r, str) else None


def budget_error(msgs: Sequence[Any], *, budget: int, kw: dict[str, Any], reason: str,
                 needed: int) -> CompactionBudgetError:
    """The error raised when nothing fits, saying what must stay and by how much it misses.
    ``needed``: the plan's smallest history (head, tail floor, a summary's minimum)."""
    task, last_user, _ = _core.tail_floor(msgs)
    system = [i for i in range(task or 0) if _role(msgs[i]) in ("system", "developer")]
    must = [msgs[i] for i in sorted({*system, *(i for i in (task, last_user) if i is not None)})]
    floor = int(_core.estimate(must, **kw))
    if floor > budget:
        return CompactionBudgetError(
            f"the system prompt, tools, the task and the last user turn alone take {floor} tokens, "
            f"{floor - budget} over the budget of {budget}", tokens=floor, budget=budget)
    return CompactionBudgetError(
        f"{reason}: {needed - budget} tokens over after every degrading step (the system prompt, tools, "
        f"task and last user turn alone take {floor} of the {budget} tokens; the messages after the last "
        "user turn and the summary's markers do not fit beside them)", tokens=needed, budget=budget)
