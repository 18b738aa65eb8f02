"""What the proxy does to one request body: price it, fold it the way it was folded last turn,
compact it when it reaches the gate.

A proxy sees the whole history on every turn, so it remembers, per conversation, the last body
it received (bytes), where the history array ends in it, the estimated tokens of what it sent,
the fold applied and the calibration learnt from the usage the responses reported. The next
body of the conversation starts with those same bytes when the client only appended (every SDK
serializes the same history the same way); the proxy then parses only what was appended
(``fast``): O(new messages). Anything else (a first turn, an edited history, a restart, a turn
over the gate) is read whole (``slow``), looking the fold up in the fold cache by the content
hash of the messages it replaces.

A fold replaces the first ``k`` messages of the history with fixed bytes, so the prefix the
upstream sees is byte-identical turn after turn until the next compaction.

With ``--recall``, a request the proxy offers no recall tool (``Pricing.no_recall``: it asks
for several choices, or for a background response; or the client declares the tool itself) is
folded as ``--no-recall`` folds: placeholders that name no id and promise no tool. Those folds
live in a key space of their own (``NO_RECALL_SPACE``), beside the recoverable folds of the same
history: a conversation that alternates gets the fold of each kind again, byte for byte, and
compacts once per kind, not at every switch. The proxy remembers the conversation once per kind
too, so a turn that switches back extends that kind's last body and is read from where it ended.
"""

from __future__ import annotations

import functools
import json
import logging
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, cast

from contextfold import _core
from contextfold.compaction_result import CompactionResult
from contextfold.compaction_run import CompactionRun
from contextfold.compactor import Compactor
from contextfold.content_store import ContentStore, MemoryContentStore, RedisContentStore
from contextfold.errors import CompactionError, InvalidMessageError, UnknownModelError, _InputFaultError
from contextfold.fold_sources import FoldSources
from contextfold.limits import context_window as _context_window
from contextfold.model_info import model_info
from contextfold.recall import declares_recall, page_tokens, recall_tool
from contextfold.serve.apis import Api, Pricing
from contextfold.serve.body import Appended, BodyError, ScannedBody, json_bytes, scan_appended, scan_body
from contextfold.serve.config import ServeConfig
from contextfold.serve.fold_cache import CorruptFoldError, Fold, FoldCache, content_hash
from contextfold.serve.recall_loop import RecallRoute
from contextfold.session import DEFAULT_OUTPUT_RESERVE, DEFAULT_TRIGGER_RATIO, MAX_SUMMARY_HASHES

__all__ = ["Conversation", "Folder", "Outcome"]

log = logging.getLogger("contextfold.serve")

#: Bodies are indexed by their first bytes for the O(new) lookup; a body this short is read
#: whole every turn (it costs microseconds).
HEAD = 512
#: The most bytes a turn may append and still be read on the event loop (``fast``): 10^6 short
#: messages appended (35 MB) held the loop 8.4 s, and every other connection with it (a
#: ``/healthz`` waited 7.8 s). More is read on a worker thread, as a whole body.
FAST_APPEND_MAX = 256 << 10
#: How many unknown model names the proxy logs (once each): the names come from clients.
UNKNOWN_MODELS_LOGGED = 256
#: Weight of the newest usage in the per-conversation real/estimate ratio (as ``Session``).
SMOOTHING = 0.5
#: A usage whose real/estimate ratio falls outside these bounds does not describe the request
#: sent (a replayed or cached answer, a count of another request): it is not learnt from. The
#: estimate's error on the recorded requests stays far inside them (README: p99 within tens of
#: percent).
RATIO_BOUNDS = (0.2, 5.0)
#: Default budget: this share of the trigger (as ``Compactor``).
BUDGET_SHARE = 0.5
#: The fold cache's key space (``content_hash``) of the folds a ``--recall`` proxy makes without
#: recall; a recoverable fold (and any fold of a proxy without ``--recall``) keeps the keys it had.
NO_RECALL_SPACE = b"contextfold:no-recall\x00"


@dataclass(slots=True)
class Conversation:
    """What the proxy remembers of one conversation (its last body; never logged)."""

    api: str
    raw: bytes
    start: int
    end: int
    n: int
    before: dict[str, Any]
    after: dict[str, Any]
    conv_id: str
    overhead: int
    orig_tokens: int
    msg_tokens: int
    fold: Fold | None
    fold_offset: int
    correction: float = 1.0
    usages: int = 0
    sent: int = 0
    # Byte spans of the top-level fields' values in ``raw`` and the offset after its ``{``:
    # where the recall tool goes into ``tools``.
    spans: dict[str, tuple[int, int]] = field(default_factory=dict)
    open: int = 1
    #: The fold cache's key space of the conversation's folds (``Folder._space``). A conversation
    #: has a record per kind: a body asking for the other kind extends that kind's record.
    space: bytes = b""
    #: The compacted form of the client's newest message, sent in place of ``raw[newest_at:end]``
    #: by this turn only (a compaction that cut it to fit beside the summary), else None. It is
    #: kept out of the fold: the next turn extends the client's own message, and the next
    #: compaction reads it whole, as an older message it may mask or fold. ``msg_tokens`` prices
    #: the client's message, ``sent`` the one sent.
    newest: bytes | None = None
    newest_at: int = 0
    #: ``newest`` holds the whole history a bare compaction wrote (``Folder._bare_turn``), sent in
    #: place of the client's (``newest_at`` is the history's first byte) by this turn only; the
    #: conversation's fold stays the one before it. ``bare_recall``: that body carries the
    #: recall tool (its fold marker names a stored id).
    bare: bool = False
    bare_recall: bool = False

    def record_usage(self, real: int) -> None:
        """Calibrate by the real prompt tokens of the request sent last (``sent`` estimated)."""
        if self.sent <= 0 or real <= 0:
            return
        ratio = real / self.sent
        if not RATIO_BOUNDS[0] <= ratio <= RATIO_BOUNDS[1]:
            log.debug("usage of %d tokens for an estimate of %d: not learnt from", real, self.sent)
            return
        self.correction = ratio if self.usages == 0 else SMOOTHING * ratio + (1 - SMOOTHING) * self.correction
        self.usages += 1


def _lead(msgs: list[Any]) -> int:
    """How many of a history's first messages name its conversation in the fold index: the
    first, and the one after it where the first is a system or developer message (chat apps
    send one system prompt in every conversation: keyed by it alone, all of them shared one
    index four folds deep, and a replica missed the folds pushed out of it)."""
    first = msgs[0] if msgs else None
    role = first.get("role") if isinstance(first, dict) else None
    return 2 if len(msgs) > 1 and role in ("system", "developer") else 1


@dataclass(frozen=True, slots=True)
class Outcome:
    """What to forward and what to say about it in the response headers.

    ``tokens_before`` / ``tokens_after``: estimated prompt tokens of the history as received and
    as sent (calibrated); ``strategy``: ``none``, or what made the fold sent (``mask``,
    ``summarize``); ``fold``: ``none``, ``new`` (compacted this turn) or ``reused``;
    ``reason``: why nothing was compacted when it should have been; ``refuse``: answer 413;
    ``recall``: the body carries the proxy's recall tool, and where to answer its calls;
    ``recall_withheld``: why a body sent with a fold by a ``--recall`` proxy carries no recall
    tool and was folded without it (``Pricing.no_recall``, or ``no-room``: the tool's declaration
    did not fit in the budget), else None."""

    body: bytes
    tokens_before: int | None = None
    tokens_after: int | None = None
    strategy: str = "none"
    fold: str = "none"
    folded: int = 0
    reason: str | None = None
    refuse: bool = False
    compacted: bool = False
    conversation: Conversation | None = None
    saved: int = 0
    recall: RecallRoute | None = None
    recall_withheld: str | None = None


@dataclass(slots=True)
class _Gate:
    trigger: int
    budget: int
    window: int | None


@dataclass(slots=True)
class _Records:
    """Conversations by the first ``HEAD`` bytes of their last body; LRU-bounded. A conversation
    whose turns ask for both kinds of fold (``Conversation.space``) has a record of each."""

    max_count: int
    max_bytes: int
    lru: OrderedDict[int, Conversation] = field(default_factory=OrderedDict)
    by_head: dict[tuple[str, bytes], list[Conversation]] = field(default_factory=dict)
    size: int = 0

    def find(self, api: str, raw: bytes, space: bytes | None = None) -> Conversation | None:
        """The record whose body ``raw`` extends furthest, of kind ``space`` (None: either)."""
        candidates = self.by_head.get((api, raw[:HEAD]))
        best: Conversation | None = None
        for rec in candidates or ():
            if ((space is None or rec.space == space) and (best is None or rec.end > best.end)
                    and raw.startswith(memoryview(rec.raw)[: rec.end])):
                best = rec
        return best

    def replace(self, old: Conversation | None, new: Conversation) -> None:
        if old is not None:
            self._drop(old)
        if new.end <= HEAD:
            return  # read whole every turn: nothing to find it by
        self.lru[id(new)] = new
        self.by_head.setdefault((new.api, new.raw[:HEAD]), []).append(new)
        self.size += len(new.raw)
        while self.lru and (len(self.lru) > self.max_count or self.size > self.max_bytes):
            _, victim = self.lru.popitem(last=False)
            self._unindex(victim)

    def _drop(self, rec: Conversation) -> None:
        if self.lru.pop(id(rec), None) is not None:
            self._unindex(rec)

    def _unindex(self, rec: Conversation) -> None:
        self.size -= len(rec.raw)
        key = (rec.api, rec.raw[:HEAD])
        group = self.by_head.get(key)
        if group is not None:
            group[:] = [r for r in group if r is not rec]
            if not group:
                del self.by_head[key]


def _give_sources(sources: FoldSources, fold: Fold, prefix: list[Any], msgs: list[Any]) -> None:
    """Hand a fold's spans and copies (``Fold.spans`` / ``Fold.sources``: places in the client's
    history, whose first ``fold.k`` messages hash to the fold's key) to the Compactor of this
    turn's compaction."""
    def message(entry: Any) -> Any:
        if isinstance(entry, int) and not isinstance(entry, bool):
            return msgs[entry] if 0 <= entry < fold.k else None
        return entry if isinstance(entry, dict) else None
    for key, tokens, entries in fold.spans:
        span = [message(e) for e in entries]
        if span and all(m is not None for m in span):
            sources.file(key, span, tokens)
    if len(fold.sources) == len(prefix):
        sources.note_originals(prefix, [None if i is None else message(i) for i in fold.sources])


def _taken_sources(sources: FoldSources, folded: list[Any], given: list[Any]
                   ) -> tuple[tuple[tuple[int, int, tuple[Any, ...]], ...], tuple[int | None, ...]]:
    """A new fold's ``spans`` and ``sources`` (``Fold``): the Compactor's remembered spans and the
    originals of the ``folded`` messages it sent, as places in ``given`` (the client's messages
    the fold replaces)."""
    at = {id(m): j for j, m in enumerate(given)}

    def entry(m: Any) -> Any:
        j = at.get(id(m))
        return m if j is None else j
    spans = []
    for key, span, tokens in sources.filed():
        entries = tuple(entry(m) for m in span)
        if all(isinstance(e, (int, dict)) for e in entries):
            spans.append((key, tokens, entries))
    return tuple(spans), tuple(at.get(id(sources.unedited(m))) for m in folded)


def _clip(text: str, limit: int = 64) -> str:
    """``text`` as a repr of at most ``limit`` characters of it, for a log line."""
    return repr(text[:limit]) + ("..." if len(text) > limit else "")


@functools.cache
def _recall_tool_bytes(wire_format: str) -> bytes:
    """The recall tool's declaration in ``wire_format``, as the bytes spliced into ``tools``
    (made once: every turn of a recoverable fold sends them)."""
    return json_bytes(recall_tool(wire_format))


def _edited(raw: bytes, edits: list[tuple[int, int, bytes]]) -> bytes:
    """``raw`` with each ``(from, to, put)`` edit (sorted, not overlapping) applied."""
    parts: list[bytes | memoryview] = []
    at = 0
    view = memoryview(raw)
    for start, end, put in edits:
        parts += [view[at:start], put]
        at = end
    parts.append(view[at:])
    return b"".join(parts)


class _Compactor(Compactor):
    """The proxy's Compactor: ``bare`` says its compaction ended in the last degrading step
    (``Compactor._bare``: no summary fits; the head, the last user turn and what follows, and a
    fold marker or the fold's standing rules alone between them), which the proxy sends on its
    turn only (``Folder._bare_turn``). (Every bare history ``_bare`` makes is the one returned.)"""

    def compact(self, messages: Sequence[Any], /) -> CompactionResult:
        # (A list, made before the run: the copy a recoverable compaction runs again without the
        # recall tool shares it.)
        self._bare_made: list[bool] = []
        return super().compact(messages)

    @property
    def bare(self) -> bool:
        return bool(self._bare_made)

    def _bare(self, run: CompactionRun, *, whole: bool = False) -> CompactionResult | None:
        result = super()._bare(run, whole=whole)
        if result is not None:
            self._bare_made.append(True)
        return result


class Folder:
    """Prices, folds and compacts request bodies for the proxy; thread-safe (``fast`` runs on
    the event loop, ``slow`` on worker threads)."""

    def __init__(self, config: ServeConfig, cache: FoldCache) -> None:
        self.config = config
        self.cache = cache
        self._lock = threading.Lock()
        self._records = _Records(config.max_conversations, config.max_cached_bytes)
        self._unknown: set[int] = set()
        self.summarizer = self._summarizer(config.summarizer)
        #: Where recoverable folds keep their originals (``config.recall``): shared through Redis
        #: when the folds are, so another replica or a restarted proxy answers the same ids.
        self.store: ContentStore | None = None
        if config.recall:
            self.store = RedisContentStore(url=config.redis) if config.redis else MemoryContentStore()

    @staticmethod
    def _summarizer(name: str) -> Any:
        if name == "extractive":
            return None  # the Compactor's default
        from contextfold.summarize.llm import LLMSummarizer

        provider, _, model = name.partition(":")
        try:
            return LLMSummarizer(provider, model)
        except Exception as e:  # noqa: BLE001 - a summarizer that cannot be built is a config error
            raise ValueError(f"summarizer {name!r}: {type(e).__name__}: {e}") from e

    @property
    def conversations(self) -> int:
        """Conversations held in memory."""
        return len(self._records.lru)

    # -- the gate ------------------------------------------------------------------------------

    def gate(self, model: str | None) -> _Gate | None:
        """Trigger and budget (estimated tokens) for ``model``; None when nothing says them."""
        cfg = self.config
        window = cfg.context_window
        if window is None and model:
            try:
                window = _context_window(model)
            except UnknownModelError:
                window = None
        trigger: int | None = None
        if isinstance(cfg.trigger, int) and not isinstance(cfg.trigger, bool):
            trigger = cfg.trigger
        elif isinstance(cfg.trigger, float) and window is not None:
            trigger = int(cfg.trigger * window)
        elif window is not None:
            # The Session's gate: 90% of the window or the window less the output reserve.
            trigger = int(min(window * DEFAULT_TRIGGER_RATIO, window - min(DEFAULT_OUTPUT_RESERVE, window // 4)))
        elif cfg.budget is not None:
            trigger = int(cfg.budget / BUDGET_SHARE)
        if trigger is None:
            return None
        budget = cfg.budget if cfg.budget is not None else int(trigger * BUDGET_SHARE)
        return _Gate(trigger, min(budget, trigger), window)

    # -- one request ---------------------------------------------------------------------------

    def fast(self, api: Api, raw: bytes, path_model: str | None) -> Outcome | None:
        """The O(new) path: a body extending the last one seen of its conversation (of the kind
        of fold it asks for), under the gate. None when the body needs ``slow``."""
        if len(raw) <= HEAD:
            return None
        found = self._extending(api, raw, path_model, None)
        if found is not None and (space := self._space(found[2])) != found[0].space:
            # The body asks for the other kind of fold than its conversation's last turn did: it
            # extends that kind's last body, an earlier one (the turns since are read again).
            found = self._extending(api, raw, path_model, space)
        if found is None:
            return None
        rec, appended, pricing = found
        try:
            new = self._each(api, pricing, appended.messages)
            overhead = rec.overhead if appended.after == rec.after else self._overhead(api, pricing, rec.fold)
        except (InvalidMessageError, TypeError, ValueError):
            return None
        gate = self.gate(pricing.model)
        msg_tokens = rec.msg_tokens + sum(new)
        # The same history again (an SDK's retry of the turn that cut its newest message) goes as
        # it went: the client's message whole would land over the budget, often over the gate.
        newest = rec.newest if not new else None
        sent = msg_tokens + overhead - (rec.msg_tokens + rec.overhead - rec.sent if newest is not None else 0)
        if gate is not None and int(sent * rec.correction) >= gate.trigger:
            return None  # a compacting turn: read whole
        spans = {**{k: v for k, v in rec.spans.items() if k in rec.before}, **appended.spans}
        nxt = Conversation(
            api.name, raw, rec.start, appended.end, rec.n + len(new), rec.before, appended.after, rec.conv_id,
            overhead, rec.orig_tokens + sum(new), msg_tokens, rec.fold, rec.fold_offset, rec.correction,
            rec.usages, sent, spans, rec.open, rec.space, newest, rec.newest_at,
            rec.bare and newest is not None, rec.bare_recall)
        with self._lock:
            self._records.replace(rec, nxt)
        return self._outcome(api, nxt, pricing, gate)

    def _extending(self, api: Api, raw: bytes, path_model: str | None, space: bytes | None
                   ) -> tuple[Conversation, Appended, Pricing] | None:
        """The record of kind ``space`` (None: either) that ``raw`` extends furthest, what ``raw``
        appends to it and the pricing of ``raw``; None when there is none, or when the history
        is held upstream."""
        with self._lock:
            rec = self._records.find(api.name, raw, space)
        if rec is None or len(raw) - rec.end > FAST_APPEND_MAX:
            return None
        try:
            appended = scan_appended(raw, rec.end)
        except BodyError:
            return None
        if api.history_key in appended.after:
            return None  # a duplicate history key: ``slow`` says so
        pricing = api.pricing({**rec.before, **appended.after}, path_model)
        if pricing.server_history is not None:
            return None
        return rec, appended, pricing

    def slow(self, api: Api, raw: bytes, path_model: str | None) -> Outcome:
        """The whole body read: fold looked up by content hash, compaction when over the gate."""
        try:
            sb = scan_body(raw, api.history_key)
        except BodyError as e:
            return Outcome(raw, reason=f"body not read: {e}")
        if sb.history is None or not sb.history:
            return Outcome(raw, reason=f"no {api.history_key} array to compact")
        pricing = api.pricing(sb.fields, path_model)
        if pricing.server_history is not None:
            return Outcome(raw, reason=pricing.server_history)
        msgs = sb.history
        n = len(msgs)
        space = self._space(pricing)
        conv_id = content_hash(api.name.encode() + raw[sb.offsets[0]: sb.offsets[_lead(msgs)]], space=space)
        with self._lock:
            prior = self._records.find(api.name, raw, space)
            # A first turn of this kind starts from what the conversation learnt of the provider's
            # billing in its turns of the other kind.
            known = prior if prior is not None else self._records.find(api.name, raw)
        fold = self._find_fold(conv_id, raw, sb, space)
        try:
            each = self._each(api, pricing, msgs)
            overhead = self._overhead(api, pricing, fold)
        except (InvalidMessageError, TypeError, ValueError) as e:
            return Outcome(raw, reason=f"history not priced: {e}")
        k = fold.k if fold is not None else 0
        orig = sum(each)
        msg_tokens = (fold.tokens + sum(each[k:])) if fold is not None else orig
        correction = known.correction if known is not None else 1.0
        usages = known.usages if known is not None else 0
        gate = self.gate(pricing.model)
        rec = Conversation(
            api.name, raw, sb.start, sb.offsets[n], n, sb.before, self._after(sb), conv_id, overhead, orig,
            msg_tokens, fold, sb.offsets[k] if fold is not None else 0, correction, usages, msg_tokens + overhead,
            sb.spans, sb.open, space)
        if gate is None:
            out = self._outcome(api, rec, pricing, None)
            self._keep(prior, rec)
            # (``out.recall`` kept: a recoverable fold found in the cache is sent with the tool, so
            # its calls go through the recall loop; with no gate there is no room for a page, and
            # they get the note that recall is spent.)
            return replace(out, reason=f"no context window known for model {pricing.model!r}: "
                                       "pass --context-window or --trigger")
        if int(rec.sent * correction) < gate.trigger:
            self._keep(prior, rec)
            return self._outcome(api, rec, pricing, gate)
        return self._compact(api, raw, sb, pricing, rec, prior, gate)

    # -- compaction ----------------------------------------------------------------------------

    def _compact(self, api: Api, raw: bytes, sb: ScannedBody, pricing: Pricing, rec: Conversation,
                 prior: Conversation | None, gate: _Gate) -> Outcome:
        msgs = cast("list[Any]", sb.history)
        n = len(msgs)
        fold = rec.fold
        k = fold.k if fold is not None else 0
        prefix: list[Any] = json.loads(b"[" + fold.payload + b"]") if fold is not None else []
        f = len(prefix)
        work = prefix + msgs[k:]
        # The calibrated budget: aim lower when real usage ran above the estimate.
        budget = max(1, int(gate.budget / rec.correction)) if rec.correction > 1.0 else gate.budget
        # The settings are priced in the request's overhead beside the Compactor's history, so
        # they come off its budget (before, an Anthropic body with thinking landed 30 tokens over).
        if pricing.settings_tokens >= budget:
            return self._not_compacted(api, pricing, rec, prior, gate,
                                       f"the request's settings (thinking, tool_choice, ...) alone take "
                                       f"{pricing.settings_tokens:,} tokens of the budget of {budget:,}")
        budget -= pricing.settings_tokens
        cfg = self.config
        try:
            compactor = _Compactor(
                provider=api.provider, model=self._known(pricing.model), context_window=gate.window, budget=budget,
                strategy=cfg.strategy,  # type: ignore[arg-type]
                summarizer=self.summarizer,
                system=pricing.system, tools=pricing.tools, response_format=pricing.response_format,
                wire_format=api.wire_format,  # type: ignore[arg-type]
                recoverable=self._recoverable(pricing), store=self.store,
                # The recall rounds go in the room between the budget and the gate.
                recall_reserve=False)
            # The fold carries this conversation's spans; the process's memory would only hold
            # many clients' messages alive.
            compactor.sources.shared = False
            if fold is not None:
                # The summaries in the fold's prefix are this proxy's own.
                compactor.session.summary_hashes = fold.summaries[-MAX_SUMMARY_HASHES:]
                _give_sources(compactor.sources, fold, prefix, msgs)
            result = compactor.compact(work)
        except (CompactionError, InvalidMessageError, TypeError, ValueError) as e:
            # (A fault the client's history came in with: the library's advice, repair=True, is
            # no option of the proxy, which sends such a history as the client sent it.)
            why = f"{e.fault}; forwarded as the client sent it" if isinstance(e, _InputFaultError) else str(e)
            return self._not_compacted(api, pricing, rec, prior, gate, f"{type(e).__name__}: {why}")
        if not result.changed or result.strategy_used is None:
            return self._not_compacted(api, pricing, rec, prior, gate, result.reason or "nothing to compact")
        # Whether the body carries the recall tool is the result's to say (``result.tools``), not
        # the Compactor's option: a recoverable compaction the tool's declaration tipped over the
        # budget ran again without it, its placeholders and summary naming no id, and priced the
        # history without the tool. Sent with it all the same, an ordinary fold went over the
        # budget by the tool's price (Anthropic's tool-use prompt and the schema, ~615 tokens:
        # 5 of 10 compacting turns of django-13925 at 16% of its size, 3,061 tokens of 2,455).
        recall = compactor.recoverable and declares_recall(result.tools)
        if compactor.bare:
            return self._bare_turn(api, pricing, rec, prior, gate, result, work, f, recall)
        out = result.messages
        i, j = len(out), len(work)
        if result.strategy_used == "mask" and i == j:
            # A masking keeps every message in its place, but a cut with nothing to fold says no
            # message's copies: said here, the fold keeps the place of each message it cut, and
            # the next compaction reads the client's message whole (and finds the turns behind
            # a summary filed beside it).
            compactor.sources.note_copies(out, work, range(i))
        # A newest message the compaction cut to fit (an edited copy of the client's) is sent so
        # by this turn only. Kept in the fold, it stood for the client's message in every later
        # turn: the fold then held the whole history, and the next compaction merged its
        # summary instead of reading the client's turns behind it. Sent as it came, the body
        # went over the budget (2 of the 20 longest SWE runs at 15% of their size, by 2.2-2.6 times).
        newest: bytes | None = None
        if i > 0 and j > f and out[-1] is not work[-1] and compactor.sources.unedited(out[-1]) is work[-1]:
            newest = json_bytes(out[-1])
            i -= 1
            j -= 1
        # The messages the compaction left as they were are the very objects it was given: the
        # longest such suffix is sent from the client's own bytes, the rest becomes the fold.
        while i > 0 and j > f and out[i - 1] is work[j - 1]:
            i -= 1
            j -= 1
        if newest is not None and i == 0 and j == 0 and len(out) > 1:
            # Only the newest message changed, and no fold before it: its first message, as it
            # came, is the fold (a body sent with a fold carries the recall tool a recoverable
            # cut names, and the turns after it are read from the client's bytes all the same).
            i = j = 1
        new_k = k + (j - f)
        if new_k >= n or i == 0:
            return self._not_compacted(api, pricing, rec, prior, gate,
                                       "the compaction changed the newest message (wrote the summary into it, or "
                                       "cut it without saying which message it stands for); the proxy sends the "
                                       "client's newest message as it came")
        payload = b",".join(json_bytes(m) for m in out[:i])
        try:
            tokens = sum(self._each(api, pricing, out[:i]))
            cut = sum(self._each(api, pricing, out[-1:])) if newest is not None else 0
        except (InvalidMessageError, TypeError, ValueError) as e:
            return self._not_compacted(api, pricing, rec, prior, gate, f"fold not priced: {e}")
        offset = sb.offsets[new_k]
        if fold is not None and new_k == k and i == f and fold.recall == recall \
                and all(a is b for a, b in zip(out[:i], prefix, strict=True)):
            # The compaction only cut the newest message: the fold stays as it was.
            new_fold, tokens = fold, fold.tokens
        else:
            spans, sources = _taken_sources(compactor.sources, out[:i], msgs[:new_k])
            key = content_hash(memoryview(raw)[sb.offsets[0]: offset], space=rec.space)
            new_fold = Fold(key, new_k, payload, i, tokens, result.strategy_used,
                            tuple(compactor.session.summary_hashes), spans, sources, recall)
        try:
            self.cache.put(rec.conv_id, new_fold)
        except Exception as e:  # noqa: BLE001 - a cache that cannot store still lets this turn through
            log.warning("fold cache unavailable (%s): the fold is sent but not kept", type(e).__name__)
        each_rest = self._each(api, pricing, msgs[new_k:])
        rec.fold, rec.fold_offset = new_fold, offset
        rec.overhead = self._overhead(api, pricing, new_fold)
        rec.msg_tokens = tokens + sum(each_rest)
        rec.sent = rec.msg_tokens + rec.overhead
        if newest is not None:
            rec.newest, rec.newest_at = newest, sb.offsets[n - 1]
            rec.sent += cut - each_rest[-1]
        self._keep(prior, rec)
        o = self._outcome(api, rec, pricing, gate)
        return replace(o, fold="new", reason=None, compacted=True, saved=(o.tokens_before or 0) - (o.tokens_after or 0))

    def _bare_turn(self, api: Api, pricing: Pricing, rec: Conversation, prior: Conversation | None, gate: _Gate,
                   result: CompactionResult, work: list[Any], f: int, recall: bool) -> Outcome:
        """A turn whose compaction took its last degrading step (no summary fits: the head, the
        last user turn and what follows, a fold marker or the standing rules alone between them):
        the history it wrote goes upstream by this turn only, and the conversation's fold stays
        the one before it (``rec.fold``, None for none).

        Kept as the fold, a bare history stood for the client's turns in every later turn: the
        marker in the place of the previous summary, whose turns the next compaction then no
        longer read (``test_the_proxy_reads_the_turns_behind_its_summaries_again`` failed so).
        Not kept, its newest message cut to fit (the copy noted nowhere) made the proxy forward
        the turn as the client sent it: over the budget, at 2.05-2.5 times it (8 turns of 3 of the
        20 longest SWE runs in chat at a budget of 10% of each run; the airline dialogue of
        ``_compacting_twice_through_the_proxy``, 4 turns at 1.4-1.7 times). The next turn extends
        the client's history priced with the fold before, so it is read whole and compacted
        again, from that fold and the client's own messages."""
        out = result.messages
        try:
            tokens = sum(self._each(api, pricing, out))
            overhead = self._overhead(api, pricing, rec.fold, recall=recall)
        except (InvalidMessageError, TypeError, ValueError) as e:
            return self._not_compacted(api, pricing, rec, prior, gate, f"compaction not priced: {e}")
        # The client's first messages the body does not carry as they came (the header's count):
        # the fold's, and every message before the longest run of the client's own objects that
        # ends the compaction's output.
        i, j = len(out), len(work)
        while i > 0 and j > f and out[i - 1] is work[j - 1]:
            i -= 1
            j -= 1
        folded = (rec.fold.k if rec.fold is not None else 0) + (j - f)
        rec.newest, rec.newest_at = b",".join(json_bytes(m) for m in out), rec.start + 1
        rec.bare, rec.bare_recall = True, recall
        # (``msg_tokens`` and ``overhead`` price the client's history with the fold before: the
        # next turn, over the gate with them, is read whole.)
        rec.sent = tokens + overhead
        self._keep(prior, rec)
        o = self._outcome(api, rec, pricing, gate)
        return replace(o, strategy=result.strategy_used or "summarize", fold="new", folded=folded, reason=None,
                       compacted=True, saved=(o.tokens_before or 0) - (o.tokens_after or 0))

    def _not_compacted(self, api: Api, pricing: Pricing, rec: Conversation, prior: Conversation | None,
                       gate: _Gate, reason: str) -> Outcome:
        self._keep(prior, rec)
        return replace(self._outcome(api, rec, pricing, gate), reason=reason, refuse=self.config.strict)

    # -- helpers -------------------------------------------------------------------------------

    def _find_fold(self, conv_id: str, raw: bytes, sb: ScannedBody, space: bytes) -> Fold | None:
        n = len(sb.offsets) - 1
        try:
            sizes = self.cache.sizes(conv_id)
        except Exception as e:  # noqa: BLE001 - an unreachable cache means no fold, not a failure
            log.warning("fold cache unavailable (%s): history read without its fold", type(e).__name__)
            return None
        view = memoryview(raw)
        for k in sizes:
            if not 0 < k < n:
                continue
            key = content_hash(view[sb.offsets[0]: sb.offsets[k]], space=space)
            try:
                fold = self.cache.get(key)
            except CorruptFoldError as e:
                log.warning("fold cache entry %s unreadable (%s): read as a miss", key, e)
                continue
            except Exception as e:  # noqa: BLE001
                log.warning("fold cache unavailable (%s): history read without its fold", type(e).__name__)
                return None
            if fold is not None and fold.key != key:
                log.warning("fold cache entry %s names another key: read as a miss", key)
                continue
            # A recoverable fold another proxy left in a shared cache promises a tool this one
            # (without ``--recall``) would not send: read as a miss, compacted anew.
            if fold is not None and fold.k == k and not (fold.recall and self.store is None):
                return fold
        return None

    def _known(self, model: str | None) -> str | None:
        """``model`` for the Compactor: None for a name contextfold does not know, which prices
        the same (the provider's default constants). Given the name, the Compactor warned with it
        at every compaction: a client naming a new 100 KB model each request had 100 KB written to
        stderr per request and kept in the warnings registry for good (measured: +40 MB after 400
        requests). Such a name is logged once here, clipped, among at most
        ``UNKNOWN_MODELS_LOGGED`` names."""
        if model is None or model_info(model).family != "unknown":
            return model
        with self._lock:
            # (By hash: the names themselves may be any size.)
            new = hash(model) not in self._unknown and len(self._unknown) < UNKNOWN_MODELS_LOGGED
            if new:
                self._unknown.add(hash(model))
        if new:
            log.warning("unknown model %s: priced with the provider's default constants", _clip(model))
        return None

    def _keep(self, prior: Conversation | None, rec: Conversation) -> None:
        with self._lock:
            self._records.replace(prior, rec)

    @staticmethod
    def _after(sb: ScannedBody) -> dict[str, Any]:
        return {k: v for k, v in sb.fields.items() if k not in sb.before}

    def _recoverable(self, pricing: Pricing) -> bool:
        """Whether a request is folded recoverably and offered the recall tool: this proxy keeps a
        store, the client does not declare the tool itself, and the proxy reads the one turn the
        response holds (``Pricing.no_recall``: with several choices, a recall call in any choice
        but the one read would reach a client that cannot run it)."""
        return self.store is not None and not declares_recall(pricing.tools) and pricing.no_recall is None

    def _space(self, pricing: Pricing) -> bytes:
        """The fold cache's key space of the folds a request is sent with: ``NO_RECALL_SPACE``
        for a request a ``--recall`` proxy folds without recall, else b"" (module docstring)."""
        return NO_RECALL_SPACE if self.store is not None and not self._recoverable(pricing) else b""

    def _offers_recall(self, fold: Fold | None, pricing: Pricing) -> bool:
        """Whether a body sent with ``fold`` gets the proxy's recall tool: the fold is recoverable
        and so is the request (``_recoverable``)."""
        return fold is not None and fold.recall and self._recoverable(pricing)

    def _sent(self, api: Api, rec: Conversation, pricing: Pricing, gate: _Gate | None
              ) -> tuple[bytes, RecallRoute | None]:
        """The body to send for ``rec``: its fold spliced in place of the messages it replaces
        (and the newest message as the compaction cut it, or the whole history a bare compaction
        wrote, on that turn: ``Conversation.newest``) and, when the fold is recoverable, the
        recall tool added to ``tools``; with the latter, where the sent body's history ends and
        how much an answered recall round may take."""
        raw, fold = rec.raw, rec.fold
        # Edits of ``raw``, in order: (from, to, bytes put there).
        edits: list[tuple[int, int, bytes]] = []
        if fold is not None and not rec.bare:
            edits.append((rec.start + 1, rec.fold_offset, fold.payload + b","))
        if rec.newest is not None:
            edits.append((rec.newest_at, rec.end, rec.newest))
        if not edits:
            return raw, None
        if not (rec.bare_recall if rec.bare else self._offers_recall(fold, pricing)):
            return _edited(raw, edits), None
        tool = _recall_tool_bytes(api.wire_format)
        span = rec.spans.get("tools")
        value = rec.after["tools"] if "tools" in rec.after else rec.before.get("tools")
        if span is None:
            edits.append((rec.open, rec.open, b'"tools":[' + tool + b"],"))
        elif isinstance(value, list):
            # The array's ``]`` is its span's last byte.
            edits.append((span[1] - 1, span[1] - 1, (b"," if value else b"") + tool))
        else:  # null: the field is there with no tools
            edits.append((span[0], span[1], b"[" + tool + b"]"))
        edits.sort(key=lambda e: e[0])
        shift = sum(len(put) - (to - at) for at, to, put in edits if to <= rec.end)
        room = 0 if gate is None else max(0, gate.trigger - int(rec.sent * rec.correction))
        budget = gate.budget if gate is not None else rec.sent
        return _edited(raw, edits), RecallRoute(rec.end + shift, page_tokens(budget), room, pricing.model)

    @staticmethod
    def _each(api: Api, pricing: Pricing, messages: list[Any]) -> list[int]:
        if not messages:
            return []
        return _core.estimate_each(messages, provider=api.provider, model=pricing.model)  # type: ignore[arg-type]

    def _overhead(self, api: Api, pricing: Pricing, fold: Fold | None, *, recall: bool | None = None) -> int:
        """The tokens a request takes beyond its messages (its settings too, as
        `contextfold.estimate_request` prices them); with the recall tool when a body sent with
        ``fold`` carries it (``recall``, when given, says whether the body carries it)."""
        tools = pricing.tools
        if self._offers_recall(fold, pricing) if recall is None else recall:
            tools = [*(tools or ()), recall_tool(api.wire_format)]
        return _core.request_overhead(
            provider=api.provider, model=pricing.model, tools=tools,  # type: ignore[arg-type]
            system=pricing.system, response_format=pricing.response_format) + pricing.settings_tokens

    def _outcome(self, api: Api, rec: Conversation, pricing: Pricing, gate: _Gate | None) -> Outcome:
        body, recall = self._sent(api, rec, pricing, gate)
        before = int((rec.orig_tokens + rec.overhead) * rec.correction)
        after = int(rec.sent * rec.correction)
        fold = rec.fold
        withheld = pricing.no_recall if (fold is not None or rec.bare) and self.store is not None else None
        if withheld is None and recall is None and (fold is not None or rec.bare) and self._recoverable(pricing):
            # A request offered recall whose fold names no id: the tool's declaration did not fit
            # in the budget beside the head and the last user turn, and was left out (``_compact``).
            withheld = "no-room"
        return Outcome(body, before, after, fold.strategy if fold else "none", "reused" if fold else "none",
                       fold.k if fold else 0, conversation=rec, recall=recall, recall_withheld=withheld)
