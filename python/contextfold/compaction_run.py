"""One compaction in progress: the history it works on, its plan, its sizes and its notes.

``Compactor._steps`` drives a compaction as a state machine (mask, degrade, summarize, verify);
the state those steps share lives here, with the two steps that only read it: the result that
leaves the history unchanged, and the verification of a finished history against the core's
check (problems the caller's history already had are not raised about).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from collections.abc import Callable, Sequence
from typing import Any

from contextfold import _core
from contextfold.compaction_result import CompactionResult
from contextfold.content_store import ContentStore
from contextfold.errors import InvalidArgumentsError, UnpairedToolCallsError
from contextfold.history import WireFormat
from contextfold.summarize.base import SummaryRequest


@dataclass(slots=True)
class CompactionRun:
    """The state of one ``compact()`` call. Sizes are the estimator's tokens: ``budget`` as the
    caller set it, ``effective`` the budget aimed at (scaled by the session's real-usage
    correction, less a recall round's room), ``tail`` and ``summary_tokens`` the planned shares.
    ``msgs`` and ``plan`` move together (a degrading step replaces both); ``undegraded`` keeps
    the first pair when one did; ``original`` the history as the run started (copied and
    repaired), which a compaction that changes nothing returns."""

    msgs: list[Any]
    fmt: WireFormat
    budget: int
    effective: int
    tail: int
    summary_tokens: int
    priced: _core.PricedRequest
    options: _core.CompactionOptions
    notes: list[str]
    plan: dict[str, Any] = field(default_factory=dict)
    before: int = 0
    undegraded: tuple[list[Any], dict[str, Any]] | None = None
    original: list[Any] = field(default_factory=list)
    #: The tail fill's middle cut, as an edit of ``original`` with the tokens it saved.
    fill_cut: Any = None
    #: The degrading steps' middle cuts, as edits of the undegraded history with the tokens
    #: each saved (``contextfold.degrade.degrade``).
    degrade_cuts: list[Any] = field(default_factory=list)
    #: The messages the core has read in this run, by object: each plan, digest and check of
    #: the run reads a message object once (the run never changes one in place).
    #: (Looked up when a run starts, not when this module is imported: ``benches/ab_compact.py``
    #: points the package at another build of the core by rebinding ``_core``.)
    read: _core.MessageCache = field(default_factory=lambda: _core.MessageCache())
    #: ``Compactor(exact=True)``: the exact counter ``verified`` checks with (None: the
    #: estimate), the history's exact count, the budget it must meet (after any recall round's
    #: room) and the history's exact-to-estimate ratio the run plans with (``effective`` is
    #: ``exact_limit`` divided by it).
    exact: _core.ExactLedger | None = None
    exact_before: int = 0
    exact_limit: int = 0
    exact_scale: float = 1.0
    #: Where the run stores what its placeholders, cuts and folds name: the compaction's held
    #: writes (``content_store.PendingWrites``), committed for the ids its result names
    #: (``Compactor._steps``). None before the run starts.
    store: ContentStore | None = None
    #: How many messages the pending last turn holds (calls awaiting their results, which
    #: repair leaves as they are): the end of the history, the same in its compaction.
    pending_tail: int = 0
    #: A recoverable run that keeps room for a recall round: a fold that cannot name its id
    #: fails the run, and the run without that room is tried (``Compactor._steps``).
    recover_only: bool = False
    #: The recall round this run keeps room for (``recoverable``): its page (tokens; None
    #: without a reserve) and whether the room is kept under the budget.
    recall_page: int | None = None
    round_kept: bool = False
    #: The fold's previous summary is the only home of what it stands for: a digest whose turns
    #: this Compactor cannot read again (``fold_sources``). Its plans keep all of it before the
    #: tail gives way (``_core.compaction_plan(carried_whole=)``).
    carried_whole: bool = False
    #: Messages the degrading steps keep verbatim where the fold was (``degrade.turn_pin``: the
    #: user's last turn, which a squeezed summary cannot hold), besides the caller's ``pinned``.
    pins: tuple[int, ...] = ()
    #: ``trigger=("messages", n)`` fired: the tail keeps at most this many messages (by its token
    #: target: the last ones' tokens) and is never grown back into the fold, masking is skipped
    #: (it shortens no history in messages), and ``effective`` is at most what the head, that
    #: tail and the summary's share take. None: a run sized by tokens alone.
    tail_messages: int | None = None
    #: The notes as the compaction's steps began (``Compactor._compacted``): a step that
    #: returns another history than the one the later steps built says only what it did.
    start_notes: tuple[str, ...] = ()

    @property
    def held(self) -> ContentStore:
        """``store``, once the run has started (``Compactor._start`` sets it)."""
        if self.store is None:
            raise RuntimeError("the compaction run has no store yet")
        return self.store

    def __post_init__(self) -> None:
        self.original = self.msgs

    def unchanged(self, reason: str) -> CompactionResult:
        """The result of a compaction that leaves the history as it was, saying why."""
        return CompactionResult(
            # Not `msgs`: a step may have replaced it (the tail filled by cutting a long result)
            # before the gate found the compaction not worth making.
            messages=self.original, summary=None, tokens_before=self.before, tokens_after=self.before, removed=(),
            pruned=(), strategy_used=None, fallback_used=False, reason=reason, budget=self.budget,
            notes=tuple(self.notes))

    def verified(self, out: list[Any], seams: list[int], limit: int | None) -> tuple[int, list[tuple[str, int, str]]]:
        """``out``'s tokens and the failures of the core's check that the input did not have
        already (the plan reports those: ``input_failures``); ``limit``: the budget to check.
        With ``exact``, ``out`` is counted exactly and checked against the budget by that count
        (``limit`` in the plan's estimated tokens: ``effective`` stands for ``exact_limit``); the
        tokens returned are that count scaled to the plan's (what the run compares)."""
        tokens, failures = _core.compaction_verify(
            out, self.priced, budget_tokens=limit if self.exact is None else None, seams=seams,
            overhead_tokens=int(self.plan["overhead_tokens"]), cache=self.read)
        if self.exact is not None:
            counted = int(self.exact.count(out))
            tokens = round(counted / self.exact_scale)
            if limit is not None:
                exact_limit = self.exact_limit if limit == self.effective else int(limit * self.exact_scale)
                if counted > exact_limit:
                    failures = [*failures, ("over_budget", -1,
                                            f"{counted} tokens exceed the budget of {exact_limit} (exact count)")]
                else:
                    # (Scaled back, a count within the budget never reads as over it.)
                    tokens = min(tokens, limit)
        if failures and any(k != "over_budget" for k, _, _ in failures):
            # Problems the caller's history already had are not ours to raise about.
            known = {(k, d.split(":", 1)[-1]) for k, _, d in self.plan["input_failures"]}
            failures = [f for f in failures if f[0] == "over_budget" or (f[0], f[2].split(":", 1)[-1]) not in known]
        return tokens, failures


    def refuse_inherited(self, result: CompactionResult) -> tuple[str, ...]:
        """Raise when the compacted history still has a fault the caller's history came in with,
        which ``verified`` leaves to this last step (a fold that takes the fault away repairs
        it, so only the finished history can tell): ``UnpairedToolCallsError`` for a broken
        tool pair (a call without its result, a result without its call; a call of the pending
        last turn is not broken; a call id used twice where the format wants each once),
        ``InvalidArgumentsError`` for a call's arguments that are not
        valid JSON. Both are a ``CompactionError`` and an ``InvalidMessageError``, and name the
        caller's message; a history returned unchanged is the caller's own. Returns the notes
        of the faults sent on as they came (``SENT_ON``), which a compatible server may take."""
        inherited = self.plan["input_failures"]
        if not inherited:
            return ()
        if result.strategy_used is None:
            return _sent_on(inherited)
        _, failures = _core.compaction_verify(result.messages, self.priced, budget_tokens=None, seams=[],
                                              overhead_tokens=int(self.plan["overhead_tokens"]), cache=self.read)
        pending = len(result.messages) - self.pending_tail
        # What is still there, in the caller's indices: the compacted history's indices are not
        # the caller's once a span is folded, so the input's failures are matched by what they
        # say past the index (the call's id, its position in its message).
        def what(f: tuple[str, int, str]) -> tuple[str, str]:
            return f[0], f[2].split(":", 1)[-1]

        left = {what(f) for f in failures if not (f[0] == "orphan_call" and f[1] >= pending)}
        still = [f for f in inherited if what(f) in left]
        said = {what(f) for f in still}
        broken = tuple(f for f in failures if what(f) in said)
        pairs = [f for f in still if f[0] in ("orphan_call", "orphan_result", "duplicate_call_id")]
        if pairs:
            kind, index, _ = pairs[0]
            raise UnpairedToolCallsError(
                f"message {index}: the history came in with tool calls and results that do not pair, and the "
                "compacted history still has them (a provider would reject it): " + "; ".join(d for _, _, d in pairs),
                "Compact with repair=True (or contextfold.repair() first): a call without its result gets a "
                "stand-in marked interrupted, a result without its call is dropped, a duplicate call id is made "
                "unique", broken, max(0, int(index)),
                "tool_call_id" if kind == "orphan_result" else "tool_calls")
        invalid = [f for f in still if f[0] == "invalid_arguments"]
        if invalid:
            index = invalid[0][1]
            raise InvalidArgumentsError(
                f"message {index}: the history came in with tool-call arguments that are not valid JSON, and the "
                "compacted history still has them (servers that parse past arguments reject the request): "
                + "; ".join(d for _, _, d in invalid),
                'Compact with repair=True (or contextfold.repair() first): the text is kept as a JSON string under '
                '"invalid_json"', broken, max(0, int(index)), "arguments")
        return _sent_on(still)


#: Faults of the caller's history that a compaction sends on as they came, since a server of the
#: format may take them (an Anthropic-compatible server other ids, Mistral an empty
#: ``tool_calls`` list), said in ``.notes``: ``repair=True`` fixes each.
SENT_ON = ("empty_message", "blank_text", "empty_tool_calls", "trailing_whitespace", "invalid_call_id")


def _sent_on(faults: Sequence[tuple[str, int, str]]) -> tuple[str, ...]:
    """The note of ``faults`` (the check's, in the caller's indices) of a ``SENT_ON`` kind."""
    said = [d for k, _, d in faults if k in SENT_ON]
    if not said:
        return ()
    return ("sent as the history came, which the provider may refuse (repair=True fixes it): " + "; ".join(said[:5])
            + (f"; and {len(said) - 5} more" if len(said) > 5 else ""),)


def keep_nothing() -> None:
    """``Draft.keep`` of a history that names nothing not stored yet (a fold that is not
    recoverable)."""


@dataclass(slots=True)
class Draft:
    """A summarized history being fitted to its budget: the summary asked for (``request``) and
    its ``text`` (with a provider's own compaction messages, ``native``, when it sent some), the
    history it makes (``out``: the tail's edits in ``base``, the fold line ending the summary,
    the plan's ``seams``), that history's ``tokens`` and the check's ``failures``, and whether a
    fallback wrote the text."""

    request: SummaryRequest
    text: str
    native: tuple[Any, ...]
    base: list[Any]
    fold_line: str
    seams: list[int]
    fallback: bool
    #: The summary's room (tokens; 0: not known): a model's text over its share is replaced by
    #: the digest written for all of it.
    room: int = 0
    #: Stores what ``out`` names that no earlier step stored (the span ``fold_line`` names, a
    #: round moved into the tail with its middle cut): called only when the draft is the result
    #: (a fold refused for a cut in place, or not worth making, names none of it).
    keep: Callable[[], None] = keep_nothing
    out: list[Any] = field(default_factory=list)
    tokens: int = 0
    failures: list[tuple[str, int, str]] = field(default_factory=list)

    def over_only(self) -> bool:
        """Whether the history fails only by exceeding the budget."""
        return bool(self.failures) and all(f[0] == "over_budget" for f in self.failures)
