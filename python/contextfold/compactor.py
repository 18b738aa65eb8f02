"""The Compactor: fold the middle of a history into a summary so the next request fits.

The Rust core plans (one walk: costs, head, protected tail, mask edits, kept and folded
messages, the summary's role and place) and verifies the finished history (one walk: call /
result pairs, roles at the seams, JSON of every arguments string, the budget). This module only
orchestrates: apply the edits, call the summarizer on the folded messages, assemble the new
list. ``compact`` and ``compact_async`` drive the same generator; only the summarizer call
differs.

Token counts are the estimator's tokens of ``provider`` (calibrated by a ``Session``'s real
usage when one is attached).
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import functools
from collections import OrderedDict
from collections.abc import Callable, Generator, Mapping, Sequence
from typing import Any, Literal, cast

from contextfold import _core
from contextfold.cache_policy import CachePolicy
from contextfold.compactor_config import DEFAULT_MIN_TAIL, CompactorConfig, parse_keep
from contextfold.content_store import ContentStore, MemoryContentStore, PendingWrites, keep_text
from contextfold.conversation_key import conversation_key, remember
from contextfold.cost import Prices
from contextfold.degrade import (bare_history, budget_error, cut_in_place, cut_kind, degrade, floor_tokens, liftable,
                                 turn_pin)
from contextfold.compaction_result import CompactionResult, Pruned
from contextfold.compaction_run import CompactionRun, Draft, keep_nothing
from contextfold.errors import CompactionBudgetError, CompactionError, UnknownModelError
from contextfold.fold_sources import FoldSources
from contextfold.history import WireFormat, _require_history, detect_wire_format
from contextfold.model_info import check_model
from contextfold.panic_guard import no_panic
from contextfold.prune import apply_edits
from contextfold.recall import span_text
from contextfold.room_fill import RoomFill
from contextfold.recoverable import MAX_ROUND_SHARE, MIN_RECALL_PAGE_TOKENS, RecallRound, RecoverableFolds
from contextfold.session import MAX_SUMMARY_HASHES, Session
from contextfold.summarize.base import SummaryRequest, SummaryResult, SummaryUsage, utf8_text
from contextfold.summarize.bounded import run_bounded
from contextfold.summarize.extractive import ExtractiveSummarizer
from contextfold.summary_assembly import CLOSE, OPEN, assembled_from, like_history, native_merges
from contextfold.summary_room import (MAX_REQUESTS_SHARE, RULES_HEADING, Requests, index_at, index_share, index_demoted,
                                     neutralize_markers, requests_of, stable_room, summary_room, with_index,
                                     with_requests, with_rules)
from contextfold.tail_fill import fill_tail, restore_tail

__all__ = [
    "CompactionResult",
    "Compactor",
    "Pruned",
    "detect_wire_format",
]

Strategy = Literal["mask", "summarize", "hybrid"]

#: The room a recoverable compaction keeps for one recall round (``Compactor._steps``).
RoundRoom = Literal["page", "smallest", "none"]

#: Default budget: this share of the gate's trigger, so a compaction leaves room for many turns
#: before the gate fires again (the remedy of compaction repeating every few turns).
DEFAULT_BUDGET_SHARE = 0.5
#: Default protected tail: this share of the budget stays verbatim at the end, where a
#: compaction folds little (the history at most ``SHALLOW_RATIO`` times its budget: the previous
#: summary and a few turns, as in an agent loop's later compactions) ...
DEFAULT_TAIL_SHARE = 0.5
#: ... and this share where it folds much (the history ``DEEP_RATIO`` times its budget or more),
#: linearly between: the old middle is then most of the history, and its summary needs the room.
#: On the held-out probe sets (``docs/history/evaluation-rounds.md``) at 0.75x / 1x the naive cut's
#: budget (a history about 3x its budget), a tail of 50% kept 136 / 467 of 608 facts, 35%
#: 164 / 485, 25% 177 / 488, 20% 181 / 490 (an earlier build). Measured again at stop 60 on this
#: build, tails of 25 / 20 / 15 / 10%: held-out facts at the naive budget 513 / 515 / 517 / 517,
#: what each real agent wrote after a cut (``tools/future_report.py``, facts not chosen to sit in
#: the fold) in the SWE runs 4,527 / 4,563 / 4,588 / 4,607 of 6,073 (at 0.75x the naive budget
#: 3,770 -> 3,800 and at 1.5x 5,330 -> 5,364 from 25% to 15%), the main probe set 191 at each
#: (at 1.5x 201, and 200 at 10%); the tau-bench dialogues, whose budget is mostly the policy
#: prompt, do not move. 15% takes most of that and stops short of the last step: both measures
#: count literal facts, and the verbatim tail also holds the working context a model reads
#: whole, which they do not score (the last user turn and a pending tool round stay whole
#: whatever the target). Successive compactions (about 1.2x) fold little and keep half (below).
DEEP_TAIL_SHARE = 0.15
#: ... but not below this share where the fold's depth counts the messages a previous summary
#: stands for (``fold_sources``: an agent loop's later compactions, each of a history about 1.2x
#: its budget, whose summary covers the whole conversation). Agent loops over the held-out probe
#: sets (``tools/loop_report.py``) kept 415 of 608 facts with the depth of the history alone, 432
#: with this floor, 442 at 0.4 and 441 at 0.35; successive compactions of the 120 SWE runs grew
#: their summaries (last / first, median) 1.02x, 1.13x, 1.26x and 1.38x: a deeper tail gives the
#: later summaries more room than the first had, against the goal of 1.2x.
LOOP_TAIL_SHARE = 0.45
#: Default verbatim tail of a fold: this share of the budget at every depth. The depth-scaled
#: tail above is what masking protects (whether masking alone fits, and which outputs it leaves
#: whole); once the run folds, the tail beside the summary is this share, so an agent loop's
#: later compactions (a history about 1.2x its budget, a previous summary in the fold) give their
#: summary the room a deep history's gets. Measured at stop 67 against the depth-scaled tail for
#: folds as well: agent loops over the held-out probe sets (``tools/loop_report.py``) kept
#: 483 -> 513 of 608 facts with one Compactor and 445 -> 485 with a new Compactor in a new
#: process each time, the main set's 191 -> 193 and 189 -> 191; one compaction of the held-out
#: sets at 0.75x / 1x / 1.5x the naive budget 191 / 522 / 588 -> 191 / 523 / 587. Shares of
#: 0.10 / 0.20 / 0.25 kept 513 / 512 / 510 and 483 / 483 / 474 in those loops. The depth-scaled
#: tail with its shares lowered to 0.15, for masking too, kept 520 and 481 there, but chose
#: masking alone for more airline dialogues at 1.5x the naive budget (588 -> 580): their tool
#: results are the facts, and masking drops them. The cost is in the summaries' growth over
#: successive compactions of the SWE runs (``tools/successive_report.py``): last / first, median
#: 1.12x -> 1.14x, runs within 1.2x 79 -> 65 of 120, as a small tail target is overrun by a
#: large last tool round more often (the room then follows that round's size).
FOLD_TAIL_SHARE = 0.15
SHALLOW_RATIO = 1.5
DEEP_RATIO = 2.5
#: Default summary size: this share of the budget, within [256, 4_000] tokens.
DEFAULT_SUMMARY_SHARE = 0.25
#: Default cap of a summary (tokens) when neither ``summary_max_tokens`` nor ``summary_tokens``
#: is given: the largest reply of a summarizer model call on OpenAI's gpt-4.1 family (32,768
#: output tokens, platform.openai.com/docs/models/gpt-4.1), so an extractive digest is never
#: longer than a model could have written in its place. The budget beyond it goes to the verbatim
#: tail (``tail_fill``): at large budgets (a 1M-token window leaves a summary ~225k tokens) recent
#: messages whole keep more than a digest of twice their size, and the digest reads the fold once
#: instead of writing megabytes.
DEFAULT_SUMMARY_MAX_TOKENS = 32_768
#: Default mask block: masking only grows in steps of this share of the budget (at least 1,000
#: tokens), so the prefix sent last time stays byte-identical between steps (prompt cache).
DEFAULT_CACHE_BLOCK_SHARE = 0.05




@dataclasses.dataclass(slots=True)
class _Attempt:
    """What one compaction's first run tells the steps after it, kept per call (one Compactor
    may run several compactions at once, from threads or coroutines): whether the run kept no
    room for a recall round after all (a round would take most of the room)."""

    round_skipped: bool = False


@dataclasses.dataclass(frozen=True, slots=True)
class _FoundCut:
    """A cut in place not taken yet (``Compactor._cut_found``): the result it would return (its
    notes to come) and what the cuts say. (The texts their markers name wait in the run's held
    store with the rest: ``kept_named`` keeps them only where the result returned names them.)"""

    result: CompactionResult
    said: tuple[str, ...]


def kept_named(held: PendingWrites, given: Sequence[Any], result: CompactionResult) -> None:
    """Store, of what a compaction held (``held``), the texts its result names: the ids its new
    messages show (the model is promised those) and its notes, and the ids a text stored so
    names in turn (a folded span holding a placeholder). The rest is dropped. A compaction plans,
    degrades and tries several folds, and every plan stored the originals its placeholders
    named: one compaction of the 10k-message synthetic history wrote 3,571 entries, one of them
    named by its result, and a ``DirectoryContentStore``, which never expires, kept them all."""
    if not len(held):
        return
    # (The caller's own messages name only ids earlier compactions stored. A new message names
    # an id as ``id=cf...`` or, a cleared call's arguments, as the recall tool's argument.)
    # (``map(id, ...)`` builds the set in C: the given history is the whole 10k-message one.)
    given_ids = set(map(id, given))
    new = [m for m in result.messages if id(m) not in given_ids]
    named = dict.fromkeys(_core.fold_ids_in(span_text(new), anywhere=True) if new else (), True)
    for i in _core.fold_ids_in("\n".join(result.notes)):
        named.setdefault(i, False)
    todo = list(named)
    while todo:
        at = todo.pop()
        text = held.held(at)
        for i in _core.fold_ids_in(text, anywhere=True) if text is not None else ():
            if i not in named:
                named[i] = named[at]
                todo.append(i)
    held.commit(named)


def _holds_every_rule(text: str | None, span: list[Any], previous: str | None) -> bool:
    """Whether ``text`` holds whole every standing rule of ``span`` and of ``previous`` (the
    summary folded with it)."""
    rules = _core.standing_rules(span, previous=previous) if span else []
    return all(r in (text or "") for r in rules)


class Compactor(RoomFill, RecoverableFolds):
    """Keeps a conversation inside its window by masking old tool output and folding the middle
    of the history into a summary.

    Sizes are prompt tokens of ``provider``'s estimator (``model`` picks image rules; a
    ``session``'s real-usage correction scales the budget when it runs above 1).

    - ``budget``: target prompt tokens after compaction (messages + ``system`` + ``tools`` +
      ``response_format``, the structured-output schema, priced as ``contextfold.estimate`` does).
      Default: half the gate's trigger (``context_window`` or the model's known window; the
      trigger is ``min(0.9 * window, window - output reserve)``, see ``Session``).
    - ``strategy``: ``"mask"`` (observation masking only: old tool output, images, long
      arguments become placeholders; text agents' long observations too), ``"summarize"``
      (head + summary + tail) or ``"hybrid"`` (default: mask first, summarize only when masking
      does not reach the budget).
    - ``protect_first_n``: first messages kept verbatim (the first user request, the task, is
      always kept too); ``pinned``: indices or a predicate ``(message) -> bool`` of messages
      kept verbatim wherever they are (the predicate is called once per message per compaction);
      ``tail_tokens``: the protected tail (default: where the run folds, 15% of the budget;
      what masking protects, half the budget where the history is at most 1.5x the budget, 15%
      of it from 2.5x on, linearly between, where a previous summary this Compactor wrote counts
      as the messages it stands for, and then not under 45%; shrunk when head and summary leave
      less room; never fewer than ``min_tail`` messages, never inside a tool group).
    - ``min_tail`` (default 2): the fewest messages the tail keeps whole, the last message and
      the one it answers (the agent's question a user's "yes" replies to, the command an
      observation reports on); where the model's response ends the history, the tail opens with
      the user turn it answers, whatever this says.
    - ``trigger`` (when ``should_compact`` fires): tokens (int), a fraction of the window (float),
      ``("tokens" | "fraction" | "messages", value)`` or Anthropic's
      ``{"type": "input_tokens", "value": n}``; default: the ``Session`` gate. A history that
      reached ``("messages", n)`` is folded even under the token budget: to a tail of the last
      ``keep=("messages", k)`` messages, whole, else of at most n // 2 messages.
    - ``keep``: tool uses whose results are never masked (int: the last N, Anthropic's
      ``keep``), or ``("messages", n)`` / ``("tokens", n)`` / ``("fraction", f)`` for the
      protected tail (LangChain's words).
    - ``clear_at_least``: do nothing unless at least this many tokens are freed (a cache break
      for a small gain is not worth it); ``min_free_share``: likewise as a share of the tokens
      before (default 0.05), and then the gate backs off until the history has grown by that
      share of the trigger (anti-thrash).
    - ``exclude_tools``: outputs of these tools are never masked (memory, plan, todo tools; a
      str is one tool name);
      ``clear_tool_inputs``: also shrink the arguments of calls whose output was masked;
      ``keep_thinking_turns``: keep thinking blocks only in the last N assistant turns having
      them (the others go whole; the kept ones stay byte-identical).
    - ``instructions``: a focus string passed to the summarizer (``/compact <focus>``).
    - ``summary_max_tokens``: caps the summary (default ``DEFAULT_SUMMARY_MAX_TOKENS``, 32,768).
      Up to it, a summary takes the room the budget leaves; beyond it the tail keeps more
      messages whole (the result lands at 95-100% of the budget when there is enough to keep);
      every summary ends with an identifier index of the folded span (see ``summary_room``).
      ``summary_tokens`` is the share planned for it when sizing the tail (and the cap when
      given without ``summary_max_tokens``).
    - ``summarizer``: anything with ``summarize(SummaryRequest) -> SummaryResult`` (and
      optionally ``asummarize``); default ``ExtractiveSummarizer()``, also the fallback when a
      summarizer raises or returns nothing.
    - ``wire_format``: ``"chat"`` (OpenAI, Ollama, OpenAI-compatible), ``"responses"``,
      ``"anthropic"``, ``"gemini"``, ``"bedrock"``; default: detected from the history's shape.
      Every strategy runs on every format: each masking edit is written in the message's own
      format by the core (``wire/``), or not made at all.
    - ``strict``: an unknown ``model`` name raises ``UnknownModelError`` (default: an
      ``UnknownModelWarning``, and generic constants price it).
    - ``exact``: the budget holds by the model's own tokenizer, not by the estimate (OpenAI
      models with a public one, chat.completions histories; ``ValueError`` /
      ``UnknownModelError`` otherwise). The history is counted exactly once, the compaction is
      planned in estimated tokens scaled by that history's exact-to-estimate ratio (said in
      ``notes``), and every history it checks is counted exactly (counts kept by content):
      ``tokens_before`` and ``tokens_after`` are exact counts, ``tokens_after`` within the
      budget. The estimate runs a few percent off a summary's dense lines, so without it a
      result planned to 99% of its budget may be billed a little over it. The gate
      (``should_compact``) counts as its ``session`` does: ``Session(exact=True)`` counts exactly.
    - ``cache_block_tokens``: masking grows in blocks of this many tokens (default: 5% of the
      budget, at least 1,000), so the prefix sent last turn stays byte-identical between steps.
    - ``recoverable``: every placeholder and folded span names a fold id whose original the
      ``store`` keeps (default: the process's own, ``default_content_store()``, so an id stays
      recallable by a Compactor made later in the process); ``result.tools`` is then the tool list
      to send (yours plus ``contextfold_recall``, priced in the budget), ``answer(call)`` answers
      the model's recall call (pages of at most ``recall_max_tokens``; default: a tenth of the
      room the budget leaves beside the system prompt, tools, task and last user turn, within
      [64, 2,000] tokens) and ``recall(id)`` gives the original back (see
      ``contextfold.recoverable``). The compaction keeps room for one recall round under the
      budget (a smaller one, or none, noted, where the floor leaves no more);
      ``recall_reserve=False`` leaves that room to the caller, who has room beyond the budget (a
      proxy whose gate sits above its budget): on tight budgets the round's room is a large
      share of what the summary would get.
    - The messages behind each summary the extractive digest writes are read again when a later
      compaction folds it: by this Compactor, and by a new one in the same process (a bounded
      memory of the process, ``fold_sources.PROCESS_MAX_SPANS``). With ``store`` given (shared
      between Compactors of different processes, a directory or Redis, say) they are kept there
      too, so a new Compactor with the same store reads them (``fold_sources``).
    - ``repair``: repair the history first (``contextfold.repair``), each change in ``notes``.
    - Before raising, a compaction degrades in steps, each in ``notes`` (``contextfold.degrade``).
    - ``cache_aware``: the gate (``should_compact``, asked before every model call, each call
      noted as a request) defers while the previous call is within the model's cache TTL, unless
      the estimate is within 5% of the usable window (the nearly-full line). With the default
      trigger (itself at about that line) a cold cache compacts earlier, 10% of the usable window
      below the line, so a warm cache defers between the two (gpt-4o: 81.6k to 91.2k tokens);
      an explicit trigger (tokens, fraction or messages) is kept, and a warm cache defers from it
      to the line; ``clear_at_least`` (when left 0) is chosen from the model's cache prices
      (`contextfold.cache_policy`). ``cache_prices``: the model's `contextfold.cost.Prices`
      (default: its row of ``contextfold.cost.PRICES``; a model without one, such as an Amazon
      Bedrock id, gives an ``UnknownPricesWarning`` and no premium is assumed).

    Guarantees: the caller's list and objects are never altered; the result passes the core's
    check (every call with its result and vice versa, summary never between a call and its
    result, no two neighbours sharing a role at a seam, user first for Anthropic / Gemini /
    Bedrock, every arguments string valid JSON, tokens within the budget) or a
    ``CompactionError`` is raised (``CompactionBudgetError`` when what must stay verbatim
    already exceeds the budget).
    """

    def __init__(
        self,
        *,
        provider: str = "openai",
        model: str | None = None,
        context_window: int | None = None,
        budget: int | None = None,
        summarizer: Any = None,
        strategy: Strategy = "hybrid",
        protect_first_n: int = 1,
        tail_tokens: int | None = None,
        pinned: Sequence[int] | Callable[[Any], bool] | None = None,
        session: Session | None = None,
        system: Any = None,
        tools: Sequence[Any] | None = None,
        response_format: Mapping[str, Any] | type | None = None,
        trigger: Any = None,
        keep: int | tuple[str, float] | dict[str, Any] | None = None,
        clear_at_least: int = 0,
        min_free_share: float = 0.05,
        exclude_tools: Sequence[str] = (),
        clear_tool_inputs: bool = False,
        keep_thinking_turns: int | None = None,
        instructions: str | None = None,
        wire_format: WireFormat | None = None,
        summary_tokens: int | None = None,
        summary_max_tokens: int | None = None,
        min_tail: int = DEFAULT_MIN_TAIL,
        tool_result_max_tokens: int = 200,
        arguments_max_chars: int = 2000,
        cache_block_tokens: int | None = None,
        strict: bool = False,
        exact: bool = False,
        recoverable: bool = False,
        store: ContentStore | None = None,
        recall_max_tokens: int | None = None,
        recall_reserve: bool = True,
        repair: bool = False,
        cache_aware: bool = False,
        cache_prices: Prices | None = None,
    ) -> None:
        #: Every option, checked once here (TypeError / ValueError naming the option).
        self.config = cfg = CompactorConfig.build(
            provider=provider, model=model, context_window=context_window, budget=budget, strategy=strategy,
            protect_first_n=protect_first_n, tail_tokens=tail_tokens, pinned=pinned, trigger=trigger, keep=keep,
            clear_at_least=clear_at_least, min_free_share=min_free_share, exclude_tools=exclude_tools,
            clear_tool_inputs=clear_tool_inputs, keep_thinking_turns=keep_thinking_turns, instructions=instructions,
            wire_format=wire_format, summary_tokens=summary_tokens, summary_max_tokens=summary_max_tokens,
            min_tail=min_tail,
            tool_result_max_tokens=tool_result_max_tokens, arguments_max_chars=arguments_max_chars,
            cache_block_tokens=cache_block_tokens, tail_share=DEFAULT_TAIL_SHARE)
        if not isinstance(exact, bool):
            raise TypeError(f"exact must be a bool, got {type(exact).__name__}")
        if exact:
            if cfg.provider != "openai":
                raise ValueError(f"exact=True counts OpenAI models' tokens (provider='openai'), got provider={cfg.provider!r}")
            if cfg.model is None:
                raise ValueError("exact=True needs model= (an OpenAI model with a public tokenizer)")
            if system is not None:
                raise ValueError("exact=True counts chat.completions requests: put the system prompt in the messages")
            try:
                _core.encoding_for(cfg.model)
            except UnknownModelError:
                # (The core's advice, an encoding= for count_text, is no option of a Compactor.)
                raise UnknownModelError(
                    f"exact=True counts with an OpenAI model's public tokenizer, and none is known for "
                    f"{cfg.model!r}: name an OpenAI model (gpt-4o, o3, gpt-5, ...) or leave exact off "
                    "(the estimate prices any provider's model)") from None
        # An unknown model name (a typo) is priced with generic constants: say so, or raise.
        check_model(cfg.model, strict=strict, stacklevel=2)
        if summarizer is not None and not callable(getattr(summarizer, "summarize", None)):
            raise TypeError(f"summarizer must have a summarize(SummaryRequest) method, got {type(summarizer).__name__}")
        if session is not None and not isinstance(session, Session):
            raise TypeError(f"session must be a contextfold.Session, got {type(session).__name__}")
        self.provider = cfg.provider
        self.model = cfg.model
        #: Whether the budget holds by exact counts (``exact``).
        self.exact = exact
        self.strategy: Strategy = cfg.strategy
        self.summarizer = summarizer if summarizer is not None else ExtractiveSummarizer()
        self._fallback = ExtractiveSummarizer()
        # The messages behind each summary the extractive digest wrote: read again in its place.
        self._sources = FoldSources(store)
        self.protect_first_n = cfg.protect_first_n
        self.pinned = cfg.pinned
        self.system = system
        self.tools = tools
        self.response_format = response_format
        self.clear_at_least = cfg.clear_at_least
        self.min_free_share = cfg.min_free_share
        self.exclude_tools = cfg.exclude_tools
        self.clear_tool_inputs = cfg.clear_tool_inputs
        self.keep_thinking_turns = cfg.keep_thinking_turns
        self.instructions = cfg.instructions
        self.wire_format = cfg.wire_format
        self.min_tail = cfg.min_tail
        self.tool_result_max_tokens = cfg.tool_result_max_tokens
        self.arguments_max_chars = cfg.arguments_max_chars
        self._budget = cfg.budget
        self._tail_tokens = cfg.tail_tokens
        self._summary_tokens = cfg.summary_tokens
        # The summary takes the room the budget leaves when folding, up to its cap.
        self._summary_cap = next(c for c in (cfg.summary_max_tokens, cfg.summary_tokens, DEFAULT_SUMMARY_MAX_TOKENS)
                                 if c is not None)
        self._cache_block = cfg.cache_block_tokens
        self._trigger = cfg.trigger
        self.keep_tool_uses = cfg.keep_tool_uses
        self._tail_share = cfg.tail_share
        # The default tail shrinks with how much a compaction folds (``_deep_tail``); a tail the
        # caller sized (``tail_tokens``, ``keep=("fraction" | "tokens" | "messages", ...)``) does not.
        rule = parse_keep(keep)
        self._adaptive_tail = cfg.tail_tokens is None and rule.tail_share is None and rule.min_tail is None
        # ``keep=("messages", k)``: the tail a ``("messages", n)`` trigger folds to.
        self._keep_messages = rule.min_tail
        self.session = session if session is not None else Session(
            provider=cfg.provider, model=cfg.model, context_window=cfg.context_window, tools=tools, system=system,
            response_format=response_format)
        self._window = cfg.context_window
        self._check_budget_below_trigger()
        # Anti-thrash state, per conversation (one Compactor may serve many: a framework hook): the
        # tokens below which the gate stays closed after a compaction that freed too little
        # (``_worth_it``), by ``conversation_key``.
        self._backoffs: OrderedDict[int, int] = OrderedDict()
        self._init_recall(recoverable, store, recall_max_tokens, repair, recall_reserve)
        # The plan's fixed knobs, checked and built once (the core's `CompactionOptions`): each
        # compaction passes only what changes per call.
        self._options = self.config.plan_options(recoverable=self.recoverable)
        #: The request read and priced once per wire format: (tools, system, response_format) it
        #: was read from (by identity: an integration that rebinds them gets a new one), request.
        self._requests: dict[str, tuple[Any, Any, Any, _core.PricedRequest]] = {}
        if self.wire_format is not None:
            self._request(self.wire_format)  # the format is known: read the request now
        # cache_aware: the gate defers while the cached prefix is warm (contextfold.cache_policy).
        self._cache = CachePolicy.for_model(model, cache_prices, stacklevel=2) if cache_aware else None
        if self._cache is not None and clear_at_least == 0:
            try:
                self.clear_at_least = self._cache.clear_at_least(self.budget)
            except ValueError:
                pass  # no window known yet: nothing to choose from

    @property
    def sources(self) -> FoldSources:
        """The messages behind the summaries this Compactor's extractive digest wrote, read again
        in a summary's place when a later compaction folds it (``fold_sources``)."""
        return self._sources

    # -- sizes ---------------------------------------------------------------------------------

    @property
    def context_window(self) -> int | None:
        """The window in tokens: as given, else the session's, else None."""
        return self._window if self._window is not None else self.session.context_window

    @property
    def trigger_tokens(self) -> int:
        """Estimated prompt tokens at which ``should_compact`` fires."""
        if self._trigger is not None:
            kind, value = self._trigger
            if kind == "tokens":
                return int(value)
            if kind == "fraction":
                return int(value * self._require_window())
        try:
            return self.session.trigger_tokens
        except ValueError:
            pass
        if self._window is not None:
            w = self._window
            return int(min(w * 0.9, w - min(32_768, w // 4)))
        if self._budget is not None:
            return int(self._budget / DEFAULT_BUDGET_SHARE)
        raise ValueError("no context window known: pass context_window=..., budget= or trigger=")

    def _check_budget_below_trigger(self) -> None:
        """A budget given with a trigger must be below it: compacted to at least the trigger, a
        history fires the gate again on the next turn, and each call compacts (or runs a
        compaction that changes nothing) while the history sits above the trigger."""
        if self._budget is None or self._trigger is None or self._trigger[0] == "messages":
            return
        try:
            trigger = self.trigger_tokens
        except ValueError:
            return  # a fraction of a window not known yet: checked by nothing until then
        if self._budget >= trigger:
            raise ValueError(f"budget ({self._budget} tokens) must be below the trigger ({trigger} tokens): a "
                             "compaction leaves the history at the budget, and at or over the trigger every "
                             "turn would compact again")

    def _require_window(self) -> int:
        w = self.context_window
        if w is None:
            raise ValueError(f"no context window for model {self.model!r}: pass context_window=...")
        return w

    @property
    def budget(self) -> int:
        """Target prompt tokens after a compaction."""
        if self._budget is not None:
            return self._budget
        return int(self.trigger_tokens * DEFAULT_BUDGET_SHARE)

    def _deep_tail(self, before: int, budget: int, floor: float = DEEP_TAIL_SHARE) -> int:
        """The default tail's target (tokens) for a history of ``before`` tokens compacted to
        ``budget``: ``DEFAULT_TAIL_SHARE`` of the budget down to ``floor`` as the history
        runs from ``SHALLOW_RATIO`` to ``DEEP_RATIO`` times the budget."""
        ratio = before / max(1, budget)
        depth = min(1.0, max(0.0, (ratio - SHALLOW_RATIO) / (DEEP_RATIO - SHALLOW_RATIO)))
        return int(budget * (self._tail_share - depth * (self._tail_share - floor)))

    def _sizes(self, budget: int) -> tuple[int, int, int]:
        tail = self._tail_tokens if self._tail_tokens is not None else int(budget * self._tail_share)
        summary = self._summary_tokens if self._summary_tokens is not None else max(
            256, min(int(budget * DEFAULT_SUMMARY_SHARE), 4_000))
        block = self._cache_block if self._cache_block is not None else max(
            1_000, int(budget * DEFAULT_CACHE_BLOCK_SHARE))
        return tail, summary, block

    # -- the gate ------------------------------------------------------------------------------

    @no_panic
    def should_compact(self, messages: Sequence[Any], /) -> bool:
        """True when the history reaches the trigger (the Session gate: O(messages appended since
        the last call)). After a compaction that freed too little the gate backs off until the
        history has grown by ``min_free_share`` of the trigger, unless the window itself is full;
        the back-off is that conversation's (told apart by its first messages): a Compactor that
        serves many keeps the others' gates as they were."""
        _require_history(messages)
        # Every call is a request about to be sent: note it even when the gate answers early (a
        # back-off), or the next call would take a warm cache for a cold one.
        warm = self._cache.observe() if self._cache is not None else False
        if self._trigger is not None and self._trigger[0] == "messages":
            fire = len(messages) >= self._trigger[1]
            if not (fire and warm):
                return fire
            tokens = self.session.estimate(messages)
        else:
            tokens = self.session.estimate(messages)
            below = self._backoffs.get(conversation_key(messages)) if self._backoffs else None
            if below is not None and tokens < below:
                try:
                    full = tokens >= self.session.usable_tokens
                except ValueError:
                    full = False
                if not full:
                    return False
            if self._trigger is None and self.session.context_window is not None:
                fire = self.session.should_compact(messages)
                if self._cache is not None and not fire:
                    # The default trigger is at the hard limit: cache-aware, compact earlier
                    # while cold so that a warm cache has room to wait (cache_policy.DEFER_SHARE).
                    fire = tokens >= self._cache.cold_trigger(self.session.trigger_tokens, self._usable())
            else:
                fire = tokens >= self.trigger_tokens
        if self._cache is not None and warm and fire:
            # Warm cache: compacting now mostly buys a cache write; wait unless nearly full.
            return self._cache.hard_limit_near(tokens, self._usable())
        return fire

    def _usable(self) -> int | None:
        try:
            return self.session.usable_tokens
        except ValueError:
            return None

    # -- compaction ----------------------------------------------------------------------------

    @no_panic
    def compact(self, messages: Sequence[Any], /) -> CompactionResult:
        """Compact ``messages`` (see the class docstring); the caller's list is not altered."""
        steps = self._steps(messages)
        usage: SummaryUsage | None = None
        said: _Said = {}
        try:
            request = next(steps)
            while True:
                answer = self._summarize(request)
                usage = _added(usage, answer.usage)
                said = _said(said, request, answer)
                request = steps.send(answer)
        except StopIteration as done:
            return _with_usage(_with_said(done.value, said), usage)

    @no_panic
    async def compact_async(self, messages: Sequence[Any], /) -> CompactionResult:
        """As ``compact``, awaiting the summarizer's ``asummarize`` (or running its ``summarize``
        in a thread when it has none), so an asyncio server is never blocked by an LLM call.
        The extractive digest (the default summarizer, and every fallback) runs in a worker
        thread too, the GIL released for its walk. The rest of the core's work (a few ms on a
        history of thousands of messages) runs on the loop: it reads the Python objects and
        holds the GIL, so a thread would not free the loop (measured: worst tick gaps 1.4x
        longer, compactions 1.3x slower)."""
        steps = self._steps(messages)
        usage: SummaryUsage | None = None
        said: _Said = {}
        try:
            request = next(steps)
            while True:
                answer = await self._asummarize(request)
                usage = _added(usage, answer.usage)
                said = _said(said, request, answer)
                request = steps.send(answer)
        except StopIteration as done:
            return _with_usage(_with_said(done.value, said), usage)

    def _summarize(self, request: tuple[Any, SummaryRequest]) -> SummaryResult:
        summarizer, req = request
        try:
            out = summarizer.summarize(req)
        except Exception as e:  # noqa: BLE001 - any summarizer failure falls back, never drops
            if summarizer is self._fallback:
                raise
            return self._fell_back(req, f"{type(e).__name__}: {e}")
        return self._checked(out, req)

    async def _asummarize(self, request: tuple[Any, SummaryRequest]) -> SummaryResult:
        summarizer, req = request
        try:
            fn = getattr(summarizer, "asummarize", None)
            if fn is not None:
                out = await fn(req)
            else:
                out = await run_bounded(summarizer.summarize, req)
        except Exception as e:  # noqa: BLE001
            if summarizer is self._fallback:
                raise
            # (The digest stands in: built in a worker thread, as the extractive summarizer's.)
            return await asyncio.to_thread(self._fell_back, req, f"{type(e).__name__}: {e}")
        return self._checked(out, req)

    def _fell_back(self, req: SummaryRequest, error: str) -> SummaryResult:
        r = self._fallback.summarize(req)
        return SummaryResult(text=r.text, fallback_used=True, error=error)

    def _checked(self, out: Any, req: SummaryRequest) -> SummaryResult:
        """A summarizer's answer as a SummaryResult: a str is the summary's text; anything but a
        SummaryResult with str text falls back to the extractive digest, the error recorded."""
        # (A lone surrogate in the text, a model's reply cut mid-emoji, becomes U+FFFD: the core
        # reads the summary as UTF-8 and raised a bare UnicodeEncodeError out of compact.)
        if isinstance(out, str):
            return SummaryResult(text=utf8_text(out))
        if isinstance(out, SummaryResult) and isinstance(out.text, str):
            text = utf8_text(out.text)
            return out if text is out.text else dataclasses.replace(out, text=text)
        what = f"SummaryResult with text of type {type(out.text).__name__}" if isinstance(out, SummaryResult) else type(out).__name__
        return self._fell_back(req, f"summarizer returned {what}, expected a SummaryResult or a str")

    def _pinned_indices(self, msgs: list[Any]) -> list[int]:
        p = self.pinned
        if p is None:
            return []
        if callable(p):
            return [i for i, m in enumerate(msgs) if p(m)]
        n = len(msgs)
        return sorted({i + n if i < 0 else i for i in p if -n <= i < n})

    def __getstate__(self) -> dict[str, Any]:
        # The core's option and request objects do not pickle: a copy builds them again from its
        # config (the requests on first use).
        state = dict(self.__dict__)
        state.pop("_options", None)
        state["_requests"] = {}
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._options = self.config.plan_options(recoverable=self.recoverable)

    def _request(self, fmt: str) -> _core.PricedRequest:
        """The request of a history in ``fmt`` (the tools as sent: the recall tool added in that
        format when recoverable), read and priced once."""
        got = self._requests.get(fmt)
        if got is not None and got[0] is self.tools and got[1] is self.system and got[2] is self.response_format:
            return got[3]
        request = _core.PricedRequest(
            provider=self.provider, model=self.model, tools=self._request_tools(fmt),  # type: ignore[arg-type]
            system=self.system, response_format=self.response_format, format=fmt)  # type: ignore[arg-type]
        self._requests[fmt] = (self.tools, self.system, self.response_format, request)
        return request

    def _steps(self, messages: Sequence[Any]) -> Generator[tuple[Any, SummaryRequest], SummaryResult, CompactionResult]:
        """``_store_steps``; a recoverable compaction whose ``MemoryContentStore`` evicted
        entries meanwhile raises ValueError where the history it returns names an id the store
        no longer holds (a cap smaller than one compaction's folds: 48 of 98 ids of SWE
        compactions at 128 KiB were named and gone, and recall answered "not found")."""
        store = self.store if self.recoverable and isinstance(self.store, MemoryContentStore) else None
        evicted = store.evictions if store is not None else 0
        held = PendingWrites(self.store, promised=self.recoverable)
        result = yield from self._store_steps(messages, held)
        kept_named(held, messages, result)
        if store is not None and store.evictions > evicted and result.changed:
            # (However written: a cleared call names its id as the recall tool's argument.)
            named = _core.fold_ids_in(span_text(result.messages), anywhere=True)
            gone = sorted({i for i in named if store.get(i) is None})
            if gone:
                raise ValueError(
                    f"{len(gone)} of the {len(set(named))} ids the compacted history names were evicted from its "
                    f"MemoryContentStore during the compaction (max_bytes={store.max_bytes:,} is smaller than what it "
                    f"folds): raise max_bytes, or use a DirectoryContentStore")
        return result

    def _store_steps(self, messages: Sequence[Any], held: PendingWrites) -> Generator[
            tuple[Any, SummaryRequest], SummaryResult, CompactionResult]:
        """The state machine of one compaction (``_run_steps``). With ``recoverable``, a history
        whose floor fits the budget but not beside the room kept for a recall round of
        ``recall_max_tokens`` is compacted beside the room of the smallest page
        (``MIN_RECALL_PAGE_TOKENS``); where even that misses, with no room kept (an answer then
        goes over the budget by its size); where the recall tool's declaration itself tips the
        floor over, as plain compaction does, without the tool (nothing of that fold can be
        recalled). ``.notes`` says which: raising is for what plain compaction cannot fit. Every
        attempt stores into ``held``."""
        if not self.recoverable:
            return (yield from self._run_steps(messages, round_room="page", held=held))
        try:
            if not self.recall_reserve:
                return (yield from self._run_steps(messages, round_room="page", held=held))
            attempt = _Attempt()
            try:
                return (yield from self._run_steps(messages, round_room="page", attempt=attempt, held=held))
            except CompactionBudgetError as e:
                if attempt.round_skipped:
                    raise  # (it ran without the round's room: only the last step can do better)
                first = e
            try:
                result = yield from self._run_steps(messages, round_room="smallest", held=held)
                note = (f"room kept for a recall round of {MIN_RECALL_PAGE_TOKENS} tokens only: beside a round "
                        f"of recall_max_tokens, {first}")
            except CompactionBudgetError as e:
                result = yield from self._run_steps(messages, round_room="none", held=held)
                note = (f"no room kept for a recall round: an answer goes over the budget by its size (beside a "
                        f"round of {MIN_RECALL_PAGE_TOKENS} tokens, {e})")
            return dataclasses.replace(result, notes=(*result.notes, note))
        except CompactionBudgetError as e:
            # The recall tool is this library's own addition: where its declaration alone tips the
            # floor over the budget, compact as plain compaction would rather than raise, and say
            # that nothing of this fold can be recalled. Where the history does not fit without
            # the tool either, plain compaction's error names by how much.
            return (yield from self._without_recall_tool(messages, e, held))

    def _without_recall_tool(self, messages: Sequence[Any], why: CompactionBudgetError, held: PendingWrites) -> Generator[
            tuple[Any, SummaryRequest], SummaryResult, CompactionResult]:
        """The last step of a recoverable compaction: the history compacted as with
        ``recoverable=False`` (placeholders and folds that name no id, the recall tool not sent:
        ``.tools`` is the caller's list), noted with what the tool's declaration costs."""
        plain = copy.copy(self)  # (its core options and requests are built again: __getstate__)
        plain.recoverable = False
        plain._options = plain.config.plan_options(recoverable=False)
        result = yield from plain._run_steps(messages, round_room="page", held=held)
        # The copy's format is its own run's (another thread's compaction cannot have moved it);
        # its back-offs are this Compactor's (the copy shares them).
        fmt = plain._format or "chat"
        self._remember_round(result.messages, RecallRound(MIN_RECALL_PAGE_TOKENS if self.recall_reserve else None,
                                                          False, None))
        declared = self._request(fmt).overhead_tokens - plain._request(fmt).overhead_tokens
        note = (f"the recall tool is not sent: its declaration ({declared} tokens) does not fit beside the "
                f"system prompt, tools, task and last user turn ({why}); nothing folded here is recallable")
        return dataclasses.replace(result, tools=list(self.tools or ()), notes=(*result.notes, note))

    def _run_steps(self, messages: Sequence[Any], *, round_room: RoundRoom, attempt: _Attempt | None = None,
                   held: PendingWrites | None = None) -> Generator[
            tuple[Any, SummaryRequest], SummaryResult, CompactionResult]:
        """The state machine of one compaction: under budget, mask, degrade, summarize. Yields
        ``(summarizer, request)`` and is sent the ``SummaryResult``; returns the result.
        ``round_room``: the room kept for a recall round (``recoverable``): that of a page of
        ``recall_max_tokens``, of the smallest page, or none; ``attempt`` hears whether the
        run kept none after all."""
        held = PendingWrites(self.store, promised=self.recoverable) if held is None else held
        run = self._start(messages, round_room=round_room, attempt=attempt, held=held)
        try:
            result = yield from self._compacted(run)
        except CompactionBudgetError:
            if run.exact is None or run.exact_scale <= 1.0:
                raise
            # The floor, estimated at the whole history's exact-to-estimate ratio, missed the
            # budget where its own count may not (an airline dialogue's system prompt and task
            # run closer to their estimate than its tool results): planned again at the
            # estimate itself, every history still checked by its exact count.
            run = self._start(messages, round_room=round_room, attempt=attempt, held=held, scaled=False)
            result = yield from self._compacted(run)
        if notes := run.refuse_inherited(result):
            result = dataclasses.replace(result, notes=(*result.notes, *notes))
        if run.exact is not None:
            # (What the run compared was its exact counts scaled to the plan's estimate.)
            after = run.exact_before if result.strategy_used is None else int(run.exact.count(result.messages))
            result = dataclasses.replace(result, tokens_before=run.exact_before, tokens_after=after)
        # The tools to send are written in this run's format, not in whatever format the
        # Compactor's last compaction read (one Compactor may serve chat and Responses histories,
        # from several threads).
        return self._with_tools(result, run)

    def _compacted(self, run: CompactionRun) -> Generator[tuple[Any, SummaryRequest], SummaryResult, CompactionResult]:
        """The steps of ``_run_steps`` once the run has started."""
        run.start_notes = tuple(run.notes)
        if run.exact is not None and run.exact_before <= run.exact_limit:
            return run.unchanged(f"under budget: {run.exact_before} <= {run.exact_limit} tokens (exact count)")
        if run.exact is None and run.before <= run.effective:
            return run.unchanged(f"under budget: {run.before} <= {run.effective} tokens")
        if self.strategy == "mask" or (self.strategy == "hybrid" and run.tail_messages is None
                                       and int(run.plan["tokens_after_mask"]) <= run.effective):
            r = self._masked(run)
            if r is not None:
                return r
            if self.strategy == "mask":
                # Returned over the budget (masking never folds): said by how much, as where
                # masking ran and fell short.
                run.notes.append(f"nothing to mask: {run.before} tokens, over the budget of {run.effective}")
                return run.unchanged("nothing to mask")
        if self._adaptive_tail and run.tail_messages is None \
                and (fold_tail := int(run.effective * FOLD_TAIL_SHARE)) < run.tail:
            # Masking alone does not reach the budget: the run folds, with a fold's tail (what
            # masking protected until here is the depth-scaled tail).
            run.tail = fold_tail
            run.plan = self._plan(run, run.msgs, self.min_tail, costs=list(run.plan["costs"]), checked=True)
        if liftable(run.plan["reason"]):
            notes = list(run.notes)
            msgs, plan = self._degraded(run)
            if run.plan["reason"] is not None and run.carried_whole:
                # Not even a degraded tail leaves the previous summary all of its size: half of
                # it, as where its turns can be read again (the steps after a plan that still
                # misses end in a fold without any summary, its rules and all).
                run.carried_whole, run.undegraded = False, None
                run.notes[:], run.degrade_cuts[:] = notes, []
                run.msgs, run.plan = msgs, self._plan(run, msgs, self.min_tail, costs=list(plan["costs"]), checked=True)
                if liftable(run.plan["reason"]):
                    self._degraded(run)
        if run.plan["reason"] is not None:
            reason = str(run.plan["reason"])
            if reason.startswith("budget"):
                ruled = yield from self._rules_only(run)
                if ruled is not None and self._rules_whole(ruled.summary, run):
                    return ruled
                # Every rule whole with less of the tail kept beats a rule clipped (see _bare).
                bare = self._bare(run, whole=True)
                if bare is not None:
                    return bare
                if ruled is not None:
                    return ruled
                bare = self._bare(run)
                if bare is not None:
                    return bare
                raise self._budget_error(run, run.msgs, run.plan)
            if run.before > run.effective:
                # Nothing to fold (too short, or the protected tail covers it) and over the
                # budget: cut inside rather than return the history over it.
                cut = self._cut_in_place(run)
                if cut is not None:
                    return cut
            if self.strategy == "hybrid":
                r = self._masked(run)
                # (Masking that stays over the budget is the mask strategy's to return, not hybrid's.)
                if r is not None and (r.strategy_used is None or r.tokens_after <= run.effective):
                    return r
            if run.before > run.effective:
                # Nothing cut brings it under: what must stay (the floor, or a head the caller
                # protected) misses the budget, and is said by how much, as where a fold does
                # not fit (a recoverable compaction then tries without the recall tool).
                kw = self._estimate_kw(run.fmt)
                floor = floor_tokens(run.msgs, kw)
                if floor > run.effective:
                    raise budget_error(run.msgs, budget=run.effective, reason=reason, needed=run.before, kw=kw)
                raise CompactionBudgetError(
                    f"{reason}: {run.before - run.effective} tokens over the budget of {run.effective}, and the "
                    f"messages outside the protected head, the pinned ones, the task and the last user turn cannot "
                    f"be cut under it "
                    f"(the system prompt, tools, task and last user turn alone take {floor})",
                    tokens=run.before, budget=run.effective)
            return run.unchanged(reason)
        # Even an empty summary would free too little: do not call the summarizer at all.
        if (why := self._worth_it(run, int(run.plan["fixed_tokens"]))) is not None:
            return run.unchanged(why)
        notes = list(run.notes)
        try:
            return (yield from self._summarized(run))
        except CompactionBudgetError:
            # The summary came out over at every size its plan allowed (a few tokens, where the
            # estimate of the whole history and of its parts differ): the last step before
            # raising still fits where the floor does.
            run.notes[:] = [*notes, "the summary did not fit at any size it was asked for"]
            bare = self._bare(run, whole=True) or self._bare(run)
            if bare is None:
                raise
            return bare

    def _degraded(self, run: CompactionRun) -> tuple[list[Any], dict[str, Any]]:
        """The run's history and plan after the degrading steps, each noted (see
        ``contextfold.degrade``); the first pair kept as ``undegraded``, and returned."""
        undegraded = run.undegraded = (run.msgs, run.plan)
        if (pin := turn_pin(run.msgs, run.plan)) is not None:
            run.pins = (pin,)
            run.plan = self._plan(run, run.msgs, self.min_tail, costs=list(run.plan["costs"]), checked=True)
            run.notes.append(f"degraded: kept the last user turn (message {pin}) verbatim where the fold is: "
                             "the agent's rounds after it are folded, and a summary this small cannot hold it")
        run.msgs, run.plan = degrade(
            run.msgs, run.plan, functools.partial(self._plan, run), min_tail=self.min_tail, budget=run.effective,
            summary_tokens=run.summary_tokens, store=run.held, provider=self.provider, model=self.model,
            notes=run.notes, recoverable=self.recoverable, cuts=run.degrade_cuts)
        return undegraded

    def _start(self, messages: Sequence[Any], *, held: PendingWrites | None = None, round_room: RoundRoom = "page",
               attempt: _Attempt | None = None, scaled: bool = True) -> CompactionRun:
        """The history copied (and repaired), the budget aimed at, the sizes, the first plan.
        ``scaled``: with ``exact``, the budget is planned at the history's exact-to-estimate
        ratio (else at the estimate itself). ``held``: where the run stores (``CompactionRun.store``;
        None: a store of its own, held)."""
        _require_history(messages)
        msgs = list(messages)
        fmt = self.wire_format or detect_wire_format(msgs, self.provider, tools=self.tools)
        budget = self.budget
        notes: list[str] = []
        if self._tail_tokens is not None and budget is not None and self._tail_tokens >= budget:
            # (A tail that covers the history is a way to keep it all: what does not fit is cut
            # in the middle, recoverable. Said, as a size the caller chose and did not get.)
            notes.append(f"tail_tokens={self._tail_tokens:,} is not under the budget of {budget:,}: the tail keeps "
                         "what the budget holds beside the head")
        if self.pinned is not None and not callable(self.pinned):
            n = len(msgs)
            past = sorted(i for i in self.pinned if not -n <= i < n)
            if past:
                notes.append(f"pinned {', '.join(map(str, past))}: no such message in a history of {n} (ignored)")
        if self.repair:
            msgs = self._repaired(msgs, fmt, notes)
        correction = self.session.correction if self.session.last_usage is not None and not self.exact else 1.0
        effective = budget
        exact: _core.ExactLedger | None = None
        if self.exact:
            if fmt != "chat":
                raise ValueError(f"exact=True counts chat.completions histories; this one is written for {fmt}")
            # (One ledger a compaction: its checks share counts by content, and compactions that
            # run at once share nothing.)
            exact = _core.ExactLedger(model=cast(str, self.model), tools=self._request_tools(fmt),
                                      response_format=self.response_format)
        if correction > 1.0:
            # Real usage ran above the estimate: aim lower so the real count meets the budget.
            effective = int(budget / correction)
            notes.append(f"budget scaled by the session's real/estimate ratio {correction:.3f}: {effective} estimated tokens")
        # The recall round this run keeps room for: its page and whether the room is kept.
        page: int | None = None
        kept = False
        if self.recoverable and self.recall_reserve and round_room != "none":
            # Room for one recall round (the call and its answer) after the compaction, its page
            # sized by what the budget leaves beside the floor (a fixed cost: the page comes out
            # of the summary's and the tail's share, not out of the system prompt's).
            room = effective - floor_tokens(msgs, self._estimate_kw(fmt)) if round_room == "page" else 0
            page, reserve = self._recall_reserve(fmt, room, smallest=round_room == "smallest")
            if round_room == "page" and reserve > MAX_ROUND_SHARE * max(0, room):
                # A round that would take most of the room is not worth what it takes from the
                # summary: keep none, and say so (an answer then goes over by its size).
                round_room = "none"
                if attempt is not None:
                    attempt.round_skipped = True
                page = MIN_RECALL_PAGE_TOKENS
                notes.append(f"no room kept for a recall round: one ({reserve} tokens) would take more than "
                             f"{MAX_ROUND_SHARE:.0%} of the {max(0, room)} tokens the budget leaves beside the system "
                             "prompt, tools, task and last user turn; an answer goes over the budget by its size")
            else:
                effective = max(1, effective - reserve)
                kept = True
        elif self.recoverable:
            # (No room kept: an answer is bounded by the smallest page; without the reserve, by
            # ``recall_max_tokens`` in the caller's room beyond the budget.)
            page = MIN_RECALL_PAGE_TOKENS if self.recall_reserve else None
        exact_before, exact_limit, scale = 0, effective, 1.0
        if exact is not None:
            # Planned in estimated tokens: the budget scaled by this history's exact-to-estimate
            # ratio, each history checked counted exactly against the budget itself.
            exact_before = int(exact.count(msgs))
            estimated = int(_core.estimate(msgs, **self._estimate_kw(fmt)))
            scale = exact_before / max(1, estimated) if scaled else 1.0
            if int(effective / scale) != effective:
                notes.append(f"budget aimed at {max(1, int(effective / scale))} estimated tokens: this history counts "
                             f"{exact_before} tokens exactly where it is estimated at {estimated} (exact=True)")
            effective = max(1, int(effective / scale))
        tail, summary_tokens, block = self._sizes(effective)
        self._format = fmt
        options = self._options
        if block != options.cache_block_tokens:
            options = options.replace(cache_block_tokens=block)
        run = CompactionRun(msgs=msgs, fmt=fmt, budget=budget, effective=effective, tail=tail,
                            summary_tokens=summary_tokens, priced=self._request(fmt), options=options, notes=notes,
                            recall_page=page, round_kept=kept, exact=exact, exact_before=exact_before,
                            exact_limit=exact_limit, exact_scale=scale,
                            store=PendingWrites(self.store, promised=self.recoverable) if held is None else held)
        run.plan = self._plan(run, msgs, self.min_tail)
        run.before = int(run.plan["tokens_before"])
        # How deep the fold is: the history, with a previous summary counted as the messages it
        # stands for where they are read again in its place (an agent loop's later compactions
        # fold a little of a history many budgets long: their summary covers all of it).
        behind = self._sources.behind(run.plan, msgs, run.original) \
            if isinstance(self.summarizer, ExtractiveSummarizer) else 0
        depth = run.before + max(0, behind - int(run.plan["costs"][run.plan["previous_at"]])) if behind else run.before
        floor = DEEP_TAIL_SHARE if not behind else LOOP_TAIL_SHARE
        # A previous digest no one can read the turns behind is their only home: a new Compactor
        # in a new process with nothing shared kept 407 of the held-out loops' 608 facts with half
        # of it as its floor, 430 with all of it. (Not a model's summary: a model that merges
        # grows its summary each round, and a floor of all of it kept every round's growth:
        # successive tau-bench runs with a scripted merging model, last / first 1.75x -> 2.07x;
        # docs/history/evaluation-rounds.md.)
        run.carried_whole = run.plan["previous_at"] is not None and not behind \
            and isinstance(self.summarizer, ExtractiveSummarizer)
        again = run.carried_whole
        if self._adaptive_tail and (deep := self._deep_tail(depth, effective, floor)) < run.tail:
            run.tail, again = deep, True
        if again:
            # (Planned again from the first plan's prices: only the tail's target moved.)
            run.plan = self._plan(run, msgs, self.min_tail, costs=list(run.plan["costs"]), checked=True)
        run.pending_tail = len(msgs) - int(run.plan["pending_from"])
        run.recover_only = self.recoverable and self.recall_reserve and round_room != "none"
        self._aim_at_messages(run)
        return run

    def _aim_at_messages(self, run: CompactionRun) -> None:
        """With ``trigger=("messages", n)`` reached, a fold whose output is short in messages
        too: the tail keeps the last ``keep=("messages", k)`` messages (else at most n // 2,
        fewer where its token target holds fewer), and the run aims at the tokens of the head,
        that tail and the summary's share. A history under the token budget was returned as it
        came, so the gate fired on every later call and the history was never shortened
        (LangChain's ``SummarizationMiddleware`` folds at n messages to its ``keep``)."""
        if self._trigger is None or self._trigger[0] != "messages" or self.strategy == "mask":
            return
        n, limit = len(run.msgs), int(self._trigger[1])
        if n < limit:
            return
        plan = run.plan
        costs = [int(c) for c in plan["costs"]]
        head_end = int(plan["head_end"])
        sized = self._keep_messages
        k = max(1, min(n - head_end, sized if sized is not None else max(self.min_tail, limit // 2)))
        last_k = sum(costs[n - k:])
        tail = last_k if sized is not None else min(run.tail, last_k)
        # The summary's share, at most half of what it folds: a history under the token budget
        # has no room to fill, and a summary the size of its span would shorten nothing.
        summary = min(run.summary_tokens, max(1, sum(costs[head_end:n - k]) // 2))
        aim = int(plan["overhead_tokens"]) + sum(costs[:head_end]) + tail + summary
        run.tail_messages = k
        run.tail = tail
        run.effective = min(run.effective, aim)
        if run.exact is not None:
            # (Checked by its exact count: the aim at the history's exact-to-estimate ratio.)
            run.exact_limit = min(run.exact_limit, int(run.effective * run.exact_scale))
        run.notes.append(f"trigger=('messages', {limit}) reached at {n} messages: the fold keeps a tail of at most "
                         f"{k} messages, aiming at {run.effective:,} tokens")
        # The tail is the last messages as they came: the room is sized to hold them whole, and
        # a tool output of theirs is not pruned to give the summary more.
        run.options = run.options.replace(tool_result_max_tokens=(1 << 32) - 1)
        run.plan = self._plan(run, run.msgs, self.min_tail, costs=costs, checked=True)

    def _plan(self, run: CompactionRun, ms: list[Any], min_tail: int, summary_tokens: int | None = None,
              result_max: int | None = None, args_max: int | None = None, *, moved: bool = False,
              costs: list[int] | None = None, reprice: Sequence[int] = (), checked: bool = False) -> dict[str, Any]:
        """The core's plan of ``ms`` (the degrading steps ask again with a smaller tail floor,
        harder masking or a smaller summary); the originals its placeholders name are stored.
        ``moved``: a plan for the tail fill, which moves the tail of the first plan: the fold is
        decided by then, so no mask edits are sought, and the input's own problems are those the
        first plan found (the history checked again would find the same). ``costs``: a plan's
        prices of ``ms`` (tokens per message) before the messages at ``reprice`` changed; only
        those are priced again. ``checked``: the input's problems are those ``run.plan`` found
        (the same history planned again with another tail)."""
        opts = run.options
        if min_tail != opts.min_tail or result_max is not None or args_max is not None:
            opts = opts.replace(
                min_tail=min_tail,
                tool_result_max_tokens=opts.tool_result_max_tokens if result_max is None else result_max,
                arguments_max_chars=opts.arguments_max_chars if args_max is None else args_max)
        p: dict[str, Any] = _core.compaction_plan(  # type: ignore[assignment]
            ms, run.priced, opts, budget_tokens=run.effective, tail_tokens=run.tail,
            summary_tokens=run.summary_tokens if summary_tokens is None else summary_tokens,
            pinned=sorted({*self._pinned_indices(ms), *run.pins}), trusted_summaries=list(self.session.summary_hashes),
            masks=not moved, check_input=not (moved or checked), costs=costs, reprice=list(reprice), cache=run.read,
            carried_whole=run.carried_whole)
        if moved or checked:
            p["input_failures"] = run.plan["input_failures"]
        for fold_id, text in p.get("folds", ()):
            keep_text(run.held, fold_id, text, promised=self.recoverable)
        return p

    def _worth_it(self, run: CompactionRun, after: int) -> str | None:
        """Why a compaction down to ``after`` tokens frees too little to be made (None: it is
        worth it); the gate backs off after a gain below ``min_free_share``."""
        before = run.before
        freed = before - after
        if freed < self.clear_at_least:
            return (f"compaction skipped: it would free only {freed} tokens, "
                    f"less than clear_at_least={self.clear_at_least}")
        if run.tail_messages is not None:
            # (A ("messages", n) trigger asks for fewer messages, not for tokens; its gate knows
            # no back-off, and a skipped fold was run again on every later call.)
            return None
        if freed < self.min_free_share * before:
            if self._window_full(before):
                run.notes.append(f"frees only {freed} tokens, applied anyway: the window is full")
                return None
            # Back off: the gate stays closed until the history has grown by that share.
            below = before + int(self.min_free_share * self._safe_trigger(run.budget))
            remember(self._backoffs, conversation_key(run.original), below)
            return (f"compaction skipped: it would free only {freed} of {before} tokens "
                    f"(less than min_free_share={self.min_free_share}); should_compact stays False "
                    f"until the history reaches {below} tokens")
        return None

    def _cut_in_place(self, run: CompactionRun) -> CompactionResult | None:
        """A history with nothing to fold but over the budget, with the middle of its largest
        messages cut until it fits (``_cut_found``), when the cuts free enough to be worth making
        (``_worth_it``: else the history as it was, saying why); None where the system prompt,
        tools, task and last user turn alone miss the budget or the cuts cannot make it fit."""
        found = self._cut_found(run, run.msgs, why="nothing to fold, over the budget")
        if found is None:
            return None
        if (skip := self._worth_it(run, found.result.tokens_after)) is not None:
            return run.unchanged(skip)
        return self._cut_taken(run, found, after=run.notes)

    def _cut_found(self, run: CompactionRun, msgs: list[Any], *, why: str) -> _FoundCut | None:
        """``msgs`` with the middle of its largest messages cut until it fits the budget
        (``degrade.cut_in_place``; ``why`` opens each cut's note), checked; None where the
        system prompt, tools, task and last user turn alone miss the budget or the cuts cannot
        make it fit. Nothing of the run changes: the caller may refuse the cut, and takes it with
        ``_cut_taken`` (its notes kept apart until then)."""
        if floor_tokens(msgs, self._estimate_kw(run.fmt)) > run.effective:
            return None
        said: list[str] = []
        done = cut_in_place(msgs, head_end=int(run.plan["head_end"]), budget=run.effective,
                            check=lambda out: run.verified(out, [], run.effective), store=run.held,
                            provider=self.provider, model=self.model, recoverable=self.recoverable, notes=said,
                            pinned=self._pinned_indices(msgs), why=why)
        if done is None:
            return None
        out, tokens, made = done
        # What the cuts freed beyond the budget goes back, the newest cut first (a cut aims at
        # what is over; the marker of a message cut whole, and the estimate's drift, can make
        # a second cut that frees more than was left).
        edits: list[Any] = [(*edit, saved) for edit, saved in made]

        def with_kept(kept: list[Any]) -> tuple[list[Any], int, list[Any]]:
            built = apply_edits(msgs, kept) if kept else list(msgs)
            return (built, *run.verified(built, [], run.effective))
        restored = restore_tail(msgs, list(edits), with_kept, tokens=tokens, budget=run.effective, store=run.held,
                                provider=self.provider, model=self.model, notes=said, why="the cuts left room",
                                where="", recoverable=self.recoverable, arguments=True)
        if restored is not None:
            out, tokens, _, _ = restored
        # The messages still cut (one given back may be cut less, at the same place).
        still = [e for e in edits if out[int(e[0])] is not msgs[int(e[0])]]
        if not still:
            return None
        before = _core.estimate_each([msgs[int(e[0])] for e in still], provider=self.provider, model=self.model)  # type: ignore[arg-type]
        after = _core.estimate_each([out[int(e[0])] for e in still], provider=self.provider, model=self.model)  # type: ignore[arg-type]
        pruned = tuple(Pruned(int(e[0]), cut_kind(e[1]), e[1][1] if len(e[1]) > 1 and isinstance(e[1][1], int) else 0,
                              max(0, int(b - a)))
                       for e, b, a in zip(still, before, after, strict=True))
        return _FoundCut(CompactionResult(
            messages=out, summary=None, tokens_before=run.before, tokens_after=tokens, removed=(), pruned=pruned,
            strategy_used="mask", fallback_used=False, reason=None, budget=run.budget), tuple(said))

    def _cut_taken(self, run: CompactionRun, found: _FoundCut, *, after: Sequence[str]) -> CompactionResult:
        """The result of ``found`` (``_cut_found``), taken: the run's notes are ``after`` and the
        cuts', and the session is re-anchored at the first message it cut."""
        run.notes[:] = [*after, *found.said]
        self._after_compaction(run, min(p.index for p in found.result.pruned))
        return dataclasses.replace(found.result, notes=tuple(run.notes))

    def _masked(self, run: CompactionRun) -> CompactionResult | None:
        """The history with the plan's mask edits applied, checked; None when there is nothing
        to mask, or (hybrid) when masking alone misses the budget and a summary can do better."""
        plan, msgs = run.plan, run.msgs
        edits = plan["mask_edits"]
        if not edits:
            return None
        if (why := self._worth_it(run, int(plan["tokens_after_mask"]))) is not None:
            return run.unchanged(why)
        out = apply_edits(msgs, edits)
        tokens, failures = run.verified(out, [], None)
        if failures:
            raise CompactionError("masking produced a history a provider would reject: "
                                  + "; ".join(d for _, _, d in failures), tuple(failures))
        first_changed = min(e[0] for e in edits)
        if tokens > run.effective:
            if self.strategy == "hybrid" and not plan["reason"]:
                return None  # the summary path does better
            run.notes.append(f"masking alone reached {tokens} tokens, over the budget of {run.effective}")
        else:
            # Every old output over its threshold is masked at once; what that frees beyond the
            # budget goes back, the newest output first (the last with its middle cut, its marker
            # naming the recall tool only when the model is offered it): a SWE
            # run's 2,998-token output alone freed what its budget asked, and masking three left
            # 33% of the budget unused.
            def with_kept(kept: list[Any]) -> tuple[list[Any], int, list[Any]]:
                built = apply_edits(msgs, kept) if kept else list(msgs)
                return (built, *run.verified(built, [], run.effective))
            # Give back no more than clear_at_least allows: the check above was against masking
            # everything, and the history returned must itself free that much (Anthropic's
            # clear_at_least clears at least that many tokens each time).
            cap = min(run.effective, run.before - self.clear_at_least) if self.clear_at_least else run.effective
            restored = restore_tail(msgs, list(edits), with_kept, tokens=tokens, budget=cap,
                                    store=run.held, provider=self.provider, model=self.model, notes=run.notes,
                                    why="masking left room", where="", recoverable=self.recoverable)
            if restored is not None:
                out, tokens, edits, _ = restored
        if run.before - tokens < self.clear_at_least:  # what the returned history frees
            return run.unchanged(f"compaction skipped: it would free only {run.before - tokens} tokens, "
                                 f"less than clear_at_least={self.clear_at_least}")
        self._after_compaction(run, first_changed)
        if len(out) == len(run.original):
            self._sources.note_copies(out, run.original, range(len(out)))
        return CompactionResult(
            messages=out, summary=None, tokens_before=run.before, tokens_after=tokens, removed=(),
            pruned=tuple(Pruned(i, k, s, saved) for i, _, _, k, s, saved in edits), strategy_used="mask",
            fallback_used=False, reason=None, budget=run.budget, notes=tuple(run.notes))

    def _span(self, run: CompactionRun, plan: Mapping[str, Any], msgs: Sequence[Any]) -> tuple[list[Any], str | None]:
        """The messages a summary of ``plan``'s fold reads and the previous summary it merges:
        for the extractive digest, the messages behind a previous summary it wrote in that
        summary's place where it remembers them (``fold_sources``), so a later compaction reads
        the turns themselves, not its own digest of them again."""
        if not isinstance(self.summarizer, ExtractiveSummarizer):
            return [msgs[i] for i in plan["folded"]], plan["previous_summary"]
        span, previous, _ = self._sources.span(plan, msgs, run.fmt, run.original)
        return span, previous

    def _rules_whole(self, text: str | None, run: CompactionRun) -> bool:
        """Whether ``text`` (a summary of the plan's fold) holds every standing rule of the fold
        and of the summary folded with it whole."""
        return _holds_every_rule(text, [run.msgs[i] for i in run.plan["folded"]], run.plan["previous_summary"])

    def _bare(self, run: CompactionRun, *, whole: bool = False) -> CompactionResult | None:
        """No summary fits: the head, the last user turn and what follows, and a summary of the
        fold's standing rules alone where one fits, else a marker
        (``contextfold.degrade.bare_history``); None when not even that fits. With ``whole``,
        only a summary holding every rule of its fold whole is taken, and the tails are tried
        down to the last user turn alone for one: the user's "never" outranks the reply or the
        finished tool round after their last turn, which the summary's marker names."""
        kw = self._estimate_kw(run.fmt)
        plan, msgs = run.plan, run.msgs
        if run.pins and run.undegraded is not None:
            # The last user turn heads every tail here: the messages its pin kept beside it (an
            # earlier turn, for the roles' alternation) are not the caller's.
            plan = dict(plan, kept=run.undegraded[1]["kept"])
        previous = plan["previous_summary"]

        def rules(folded: list[int], room: int) -> tuple[str, str] | None:
            span = [msgs[i] for i in folded]
            text = self._rules_text(span, previous, room)
            if text is None or (whole and not _holds_every_rule(text, span, previous)):
                return None
            fold_line = self._fold_span(span, run.held) if self.recoverable else ""
            return text, f"{OPEN}\n{neutralize_markers(text)}{fold_line}\n{CLOSE}"
        bare = bare_history(msgs, plan, fmt=run.fmt, check=lambda o, s: run.verified(o, s, run.effective),
                            like=lambda m: like_history(m, msgs), notes=run.notes, budget=run.effective,
                            estimate_kw=kw, rules=rules, rules_only=whole,
                            fold_clause=functools.partial(self._fold_clause, store=run.held) if self.recoverable else None,
                            recover_only=run.recover_only, pinned=self._pinned_indices(msgs),
                            store=run.held if self.recoverable else None)
        if bare is None:
            return None
        out, tokens, folded, text = bare
        self._after_compaction(run, int(plan["head_end"]))
        digest = None
        if text is not None:
            digest = _core.summary_hash(neutralize_markers(text))
            self.session.summary_hashes = (*self.session.summary_hashes, digest)[-MAX_SUMMARY_HASHES:]
        return CompactionResult(
            messages=out, summary=text, tokens_before=run.before, tokens_after=tokens, summary_hash=digest,
            removed=folded, pruned=tuple(Pruned(i, k, s, saved) for i, _, _, k, s, saved in plan["tail_edits"]),
            strategy_used="summarize", fallback_used=text is not None and not isinstance(
                self.summarizer, ExtractiveSummarizer),
            reason=None, budget=run.budget, notes=tuple(run.notes))

    def _budget_error(self, run: CompactionRun, msgs: list[Any], plan: dict[str, Any]) -> CompactionBudgetError:
        """The error of a plan that leaves no room for a summary, measured on ``msgs``."""
        needed = int(plan["fixed_tokens"]) + min(_core.MIN_SUMMARY_TOKENS, run.summary_tokens)
        return budget_error(msgs, budget=run.effective, reason=str(plan["reason"]), needed=needed,
                            kw=self._estimate_kw(run.fmt), fmt=run.fmt)

    def _estimate_kw(self, fmt: str) -> dict[str, Any]:
        """The keywords ``estimate`` prices a history of ``fmt`` with as it will be sent."""
        return dict(provider=self.provider, model=self.model, tools=self._request_tools(fmt), system=self.system,
                    response_format=self.response_format)

    def _summarized(self, run: CompactionRun) -> Generator[tuple[Any, SummaryRequest], SummaryResult, CompactionResult]:
        """Head + kept + summary + tail: the summary asked for, placed, checked, fitted to the
        budget (``_fitted``), and the room it leaves given back to the tail (``_leftover``)."""
        # The summary's room stays put across compactions: the tail takes what exceeds it.
        stable = stable_room(run.plan, run.msgs, run.effective, run.tail, run.summary_tokens,
                             provider=self.provider, model=self.model)
        if run.undegraded is None and run.tail_messages is None:
            run.msgs, run.plan, run.fill_cut = fill_tail(
                run.msgs, run.plan, functools.partial(self._plan, run, moved=True),
                room_cap=summary_room(run.plan, run.effective, self._summary_cap, stable=stable), budget=run.effective,
                min_tail=self.min_tail, store=run.held, provider=self.provider, model=self.model, notes=run.notes,
                recoverable=self.recoverable)
        plan, msgs = run.plan, run.msgs
        folded_msgs = [msgs[i] for i in plan["folded"]]
        # (The span the summary's fold line names is stored with the fold returned: Draft.keep.)
        fold_line, keep_span = self._fold_line(folded_msgs, run.held) if self.recoverable else ("", keep_nothing)
        room = self._less_fold_line(summary_room(plan, run.effective, self._summary_cap, stable=stable), fold_line)
        # The identifier index is appended to every summary; the extractive digest writes its
        # own (it fills what its other units leave), other summarizers leave it a share.
        own_index = isinstance(self.summarizer, ExtractiveSummarizer)
        span, previous = self._span(run, plan, msgs)
        # A model's summary is held to the user's requests of the fold and of the previous
        # summary: they take their share of the room first, the model is asked for the rest.
        # (The least the model is asked for: half the planned share, or of the cap where that is
        # less. Half the plan whatever the cap, summary_max_tokens=400 asked a model for 761
        # tokens and sent its ~990.)
        floor = min(int(plan["summary_tokens"]), self._summary_cap) // 2
        asked = Requests() if own_index else requests_of(
            span, previous=previous, room=room, provider=self.provider, model=self.model, cache=run.read,
            most=room - index_share(room) - floor)
        if asked.dropped:
            run.notes.append(f"{asked.dropped} of the {asked.total} user requests of the fold and the previous summary "
                             f"did not fit the summary's room ({room} tokens, at most {MAX_REQUESTS_SHARE:.0%} of it for "
                             f"the requests): the oldest but the first two are left out; raise the budget or "
                             f"summary_max_tokens to keep them")
        request = SummaryRequest(
            messages=span,
            provider=self.provider,
            model=self.model,
            previous_summary=previous,
            instructions=self.instructions,
            max_tokens=room if own_index else max(floor,
                                                   room - index_share(room) - asked.tokens),
            read_cache=run.read,
        )
        text, native, fallback = yield from self._summary_text(run, request)
        if not own_index and not native and not fallback:
            # (A model's index heading would be taken for the index: see index_demoted. A
            # fallback digest's own index is the library's.)
            text = index_demoted(text)
        whole_room = False
        if fallback and not own_index and not native and index_at(text) >= 0:
            # The model failed and the extractive digest stood in, written in the model's share:
            # written again for the whole room (it writes the requests, the rules and the index
            # itself). A summarizer that raised kept 391 of the 608 held-out facts where the
            # digest alone keeps 452.
            request = dataclasses.replace(request, max_tokens=room)
            result = yield (self._fallback, request)
            text, whole_room = result.text.strip(), True
        # A model's summary is held to the requests and the fold's standing rules (those it did
        # not state verbatim are appended) and gets the index; the digest wrote its own index in
        # what its room left (one appended here overflowed a room its standing rules filled).
        indexed = text if (own_index and not fallback) or whole_room else with_index(
            with_rules(with_requests(text, asked.section), folded_msgs, previous=request.previous_summary, cache=run.read),
            folded_msgs, provider=self.provider, model=self.model, previous=request.previous_summary, room=room,
            cache=run.read)
        draft = Draft(request, indexed, native, apply_edits(msgs, plan["tail_edits"]) if plan["tail_edits"] else msgs,
                      fold_line, plan["seams"], fallback, room, keep_span)
        self._place(run, draft)
        yield from self._fitted(run, draft)
        tail_edits = yield from self._leftover(run, draft, room, own_index)
        if (why := self._worth_it(run, draft.tokens)) is not None:
            return run.unchanged(why)
        if run.undegraded is not None and not self._rules_whole(draft.text, run):
            # A degraded room clipped a standing rule: the history with less of its tail and
            # every rule whole, where one fits, comes first (see _bare).
            bare = self._bare(run, whole=True)
            if bare is not None:
                return bare
        unfolded = self._unfolded(run, draft)
        if unfolded is not None:
            return unfolded
        draft.keep()
        return self._summarized_result(run, draft, tail_edits)

    def _unfolded(self, run: CompactionRun, draft: Draft) -> CompactionResult | None:
        """The caller's history cut in place instead of folded, where the summary's text alone
        costs at least the messages it folds (tokens): such a fold frees nothing, and what put
        the history under the budget was the cuts in its tail, which then had to pay for the
        summary too. A fold of one short turn is the common case: its digest restates it under
        a header at about twice its size (14 of 297 cut tau-bench dialogues at the naive cut's
        budget), and cutting the tail's tool output to pay for it lost the flight numbers and
        dates the next turn used. Cut in place, every message stays and the largest loses only
        its middle (recoverable). None where the fold is worth its summary, where a messages
        trigger asks for fewer messages, or where the cuts cannot make the history fit."""
        plan = run.plan
        # (A fold that carries a previous summary writes one that fills its room: it reads the
        # turns behind the previous one again, and is larger for what it restores. In agent
        # loops, cutting in place there kept 22 fewer future facts.)
        if run.tail_messages is not None or draft.native or not plan["folded"] or plan["previous_at"] is not None:
            return None
        costs = plan["costs"]
        # (The plan's costs are ints: summed through ``map`` without a generator frame per index.)
        span = sum(map(costs.__getitem__, plan["folded"]))
        summary = self._text_tokens(draft.text)
        if summary < span:
            return None
        given = run.original
        sources = assembled_from(plan, len(given)) if len(run.msgs) == len(given) else []
        if len(sources) != len(draft.out):
            return None
        # What the fold changed of the caller's messages besides the span: its tail's cuts and masks.
        fold_cut = {src: m for m, src in zip(draft.out, sources, strict=True)
                    if src is not None and m is not given[src]}
        # (The cut's notes are those the steps began with, and its own: it returns another
        # history than the one the later steps built.)
        found = self._cut_found(run, given, why=(
            f"a summary of the {len(plan['folded'])} messages the fold would take (~{span} tokens) costs "
            f"~{summary} tokens, so nothing is folded; over the budget"))
        if found is None:
            return None
        # Taken only where it cuts what the fold cut, no deeper: the span then stays verbatim and
        # nothing else gives way. (Cuts of other messages took an agent's commands: over the
        # bundled SWE runs' loops a later digest read their outputs without them.)
        cut = found.result
        if not all(p.index in fold_cut for p in cut.pruned):
            return None
        ours = _core.estimate_each([cut.messages[p.index] for p in cut.pruned], provider=self.provider,  # type: ignore[arg-type]
                                   model=self.model)
        theirs = _core.estimate_each([fold_cut[p.index] for p in cut.pruned], provider=self.provider,  # type: ignore[arg-type]
                                     model=self.model)
        if not all(a >= b for a, b in zip(ours, theirs, strict=True)):
            return None
        return self._cut_taken(run, found, after=run.start_notes)

    def _summarized_result(self, run: CompactionRun, draft: Draft, tail_edits: list[Any]) -> CompactionResult:
        """The result of a summarized compaction; its summary's hash joins the session's (the
        next compaction knows it as the library's own by that hash)."""
        plan = run.plan
        self._after_compaction(run, int(plan["head_end"]))
        # The caller's messages the plan's places name (a degrading step may have planned another
        # history), and the one each message of the output stands for.
        given = run.original if len(run.msgs) == len(run.original) else run.msgs
        sources = assembled_from(plan, len(given))
        aligned = len(sources) == len(draft.out)
        # (Made inert once for the sources and the hash: each pass scans the whole summary twice,
        # ~134 KB on the 10k history.)
        neutral = neutralize_markers(draft.text)
        if isinstance(self.summarizer, ExtractiveSummarizer) and not draft.native:
            # (The summary's message is the first the compaction wrote; the one after it is the
            # first of the tail, which a later history holds after it too: filed as the caller's
            # message, before this compaction's edits (the tail fill may have cut it) or a later
            # one's.)
            at = sources.index(None) if aligned else None
            source = sources[at + 1] if at is not None and at + 1 < len(sources) else None
            after = None if source is None else given[source]
            self._sources.remember(neutral, plan, run.msgs, run.fmt, budget=run.effective,
                                   after=after, given=run.original)
        if not draft.native and aligned and given is run.original:
            self._sources.note_copies(draft.out, run.original, sources)
        digest = _core.summary_hash(neutral)
        self.session.summary_hashes = (*self.session.summary_hashes, digest)[-MAX_SUMMARY_HASHES:]
        return CompactionResult(
            messages=draft.out, summary=draft.text, tokens_before=run.before, tokens_after=draft.tokens,
            summary_hash=digest, removed=tuple(plan["folded"]),
            pruned=tuple(Pruned(i, k, s, saved) for i, _, _, k, s, saved in tail_edits),
            strategy_used="summarize", fallback_used=draft.fallback, reason=None, budget=run.budget,
            kept=tuple(plan["kept"]), notes=tuple(run.notes))

    def _rules_text(self, span: list[Any], previous: str | None, room: int) -> str | None:
        """The extractive digest of ``span`` in ``room`` tokens where the span (or ``previous``)
        states standing rules and some fit: its floor keeps as many whole as fit, the others
        clipped. None otherwise. (The digest takes milliseconds: called directly, not through
        the summarizer protocol, from both steps that write a rules-only summary.)"""
        if not span or not _core.standing_rules(span, previous=previous):
            return None
        text = self._fallback.summarize(SummaryRequest(
            messages=span, provider=self.provider, model=self.model, previous_summary=previous,
            instructions=self.instructions, max_tokens=room)).text.strip()
        return text if RULES_HEADING in text else None

    def _less_fold_line(self, room: int, fold_line: str) -> int:
        """The summary text's room (tokens): ``room`` less the line naming a recoverable fold's
        id, which ends the summary inside its markers. The plan prices the markers, not the line
        (23-36 tokens): given the whole room, every recoverable digest came out over by about
        the line and was written again smaller (task24-trial0 through the proxy: a room of 283,
        14 over, written again to 232)."""
        return max(1, room - self._text_tokens(fold_line)) if fold_line else room

    def _rules_only(self, run: CompactionRun) -> Generator[
            tuple[Any, SummaryRequest], SummaryResult, CompactionResult | None]:
        """After every degrading step, no room is left for a summary's floor (``MIN_SUMMARY_TOKENS``
        or its standing rules whole): before the history goes without a summary
        (``_bare``), a summary of the fold's standing rules alone in the room the degraded plan
        leaves, written by the extractive digest (its floor keeps as many rules whole as fit,
        the others clipped). A marker in that place kept none: the user's "never" and "do not"
        went with the fold. None when the fold states no rule, or no rule fits."""
        plan, msgs = run.plan, run.msgs
        folded = [msgs[i] for i in plan["folded"]]
        fold_line, keep = self._fold_line(folded, run.held) if self.recoverable else ("", lambda: None)
        room = self._less_fold_line(summary_room(plan, run.effective, self._summary_cap), fold_line)
        text = self._rules_text(folded, plan["previous_summary"], room)
        if text is None:
            return None
        keep()
        request = SummaryRequest(messages=folded, provider=self.provider, model=self.model,
                                 previous_summary=plan["previous_summary"], instructions=self.instructions,
                                 max_tokens=room, read_cache=run.read)
        notes = list(run.notes)
        draft = Draft(request, text, (), apply_edits(msgs, plan["tail_edits"]) if plan["tail_edits"] else msgs,
                      fold_line, plan["seams"],
                      not isinstance(self.summarizer, ExtractiveSummarizer))
        self._place(run, draft)
        try:
            yield from self._fitted(run, draft)
        except CompactionError:
            run.notes[:] = notes
            return None
        if RULES_HEADING not in draft.text or self._worth_it(run, draft.tokens) is not None:
            run.notes[:] = notes
            return None
        run.notes.append(f"degraded: the summary holds only the fold's standing rules ({room} tokens left for it, "
                         f"under the {_core.MIN_SUMMARY_TOKENS} a summary gets at least)")
        return self._summarized_result(run, draft, plan["tail_edits"])

    def _summary_text(self, run: CompactionRun, request: SummaryRequest) -> Generator[
            tuple[Any, SummaryRequest], SummaryResult, tuple[str, tuple[Any, ...], bool]]:
        """The summarizer's text (the extractive digest when it returns none), the provider's own
        compaction messages when it sent some that fit the seam, and whether a fallback wrote it."""
        result = yield (self.summarizer, request)
        fallback = bool(result.fallback_used)
        if result.error:
            run.notes.append(f"summarizer fell back to the extractive digest: {result.error}")
        text = (result.text or "").strip()
        # A provider's own compaction (summarize/provider.py), sent verbatim where the summary goes
        # when its role fits the seam (Responses items have none).
        native = tuple(getattr(result, "messages", ()) or ())
        if native and run.fmt != "responses" and run.plan["summary_role"] != native[0].get("role") \
                and not native_merges(run.plan, run.msgs, native, run.fmt):
            native = ()
        if not text:
            result = yield (self._fallback, request)
            fallback = True
            run.notes.append("summarizer returned nothing: extractive digest used")
            text, native = result.text.strip(), ()
        return text, native, fallback

    def _window_full(self, tokens: int) -> bool:
        try:
            return tokens >= self.session.usable_tokens
        except ValueError:
            return False

    def _safe_trigger(self, budget: int) -> int:
        try:
            return self.trigger_tokens
        except ValueError:
            return int(budget / DEFAULT_BUDGET_SHARE)

    def _after_compaction(self, run: CompactionRun, first_changed: int) -> None:
        """Re-anchor the session: its cached costs and usage anchor stop at the first message
        the compaction changed; the next estimate prices the new history from there. The
        conversation's back-off ends."""
        if self._backoffs:
            self._backoffs.pop(conversation_key(run.original), None)
        self.session.invalidate(first_changed)

    def __repr__(self) -> str:
        return (f"Compactor(provider={self.provider!r}, model={self.model!r}, strategy={self.strategy!r}, "
                f"summarizer={self.summarizer!r})")


def _added(total: SummaryUsage | None, more: SummaryUsage | None) -> SummaryUsage | None:
    """The usage of every summarizer call of one compaction (a summary written again at another
    room, a fallback after a refused reply: each was billed)."""
    if more is None:
        return total
    return more if total is None else total + more


#: What summarizers said of their texts in one compaction (``SummaryResult.notes``): by
#: (whether the text is sent as written, the text).
_Said = dict[tuple[bool, str], tuple[str, ...]]


def _said(said: _Said, request: tuple[Any, SummaryRequest], answer: SummaryResult) -> _Said:
    """``said`` with what ``answer``'s summarizer said of its text, by that text: a compaction
    asks for summaries at several rooms, and only the one it sends speaks for the result. (A
    digest's text is sent as written; a model's gets the requests, rules and index appended:
    see ``_with_said``.)"""
    notes = getattr(answer, "notes", ())
    if isinstance(notes, str):
        # (One note given as a string, not a tuple: split, it was a note per character.)
        notes = (notes,)
    elif not isinstance(notes, (tuple, list)):
        # (A summarizer's own type: a bare int raised TypeError out of compact().)
        notes = ()
    if notes and isinstance(answer.text, str):
        exact = isinstance(request[0], ExtractiveSummarizer)
        said[exact, answer.text.strip()] = tuple(str(n) for n in notes)
    return said


def _with_said(result: CompactionResult, said: _Said) -> CompactionResult:
    """``result`` with the notes of the summary it sends (``_said``): the digest's by its whole
    text, a model's where every line of its text stands in the summary sent (the library adds
    lines to it, never changes one but an index heading: ``index_demoted``); the newest first."""
    if not said or not result.summary:
        return result
    summary = result.summary.strip()
    notes = said.get((True, summary))
    if notes is None:
        lines = set(summary.splitlines())
        for (exact, text), said_of in reversed(said.items()):
            own = [] if exact else [ln for ln in index_demoted(text).splitlines() if ln.strip()]
            if own and all(ln in lines for ln in own):
                notes = said_of
                break
    if not notes:
        return result
    return dataclasses.replace(result, notes=(*result.notes, *(n for n in notes if n not in result.notes)))


def _with_usage(result: CompactionResult, usage: SummaryUsage | None) -> CompactionResult:
    return result if usage is None else dataclasses.replace(result, summarizer_usage=usage)
