"""The Compactor's recoverable folds and repair: what ``Compactor(recoverable=True, store=...,
repair=True)`` adds, kept apart from the compaction pipeline (``compactor.py``).

- Every placeholder the core writes names the id its removed text is stored under; a folded
  span is stored whole (its messages as JSON) and its id, with the ids of earlier folds it
  held, is named at the end of the summary: an id survives later compactions.
- ``.tools`` of a result is the tool list to send: the caller's tools plus the recall tool,
  priced in the budget. A compaction keeps room for one recall round under the budget (the
  call and an answer of ``recall_max_tokens``), so the history after ``answer`` fits too. By
  default a page is a tenth of the room the budget leaves beside what a compaction never gives
  up (the system prompt, tools, task and last user turn): that floor is a fixed cost, and a
  page sized by the whole budget took most of a tight budget's room from the summary.
- ``answer(call)`` answers the model's recall call in the call's own format; ``recall(id)``
  gives the original text back. The round a compaction kept room for is remembered per
  conversation (``contextfold.conversation_key``): ``answer(call, history=...)`` sizes the
  answer of a Compactor serving many conversations by the one the call belongs to.
"""

from __future__ import annotations

import dataclasses
import json
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from contextfold import _core
from contextfold import recall as _recall
from contextfold.content_store import ContentStore, default_content_store
from contextfold.conversation_key import KEY_MESSAGES, conversation_key, remember
from contextfold.history import detect_wire_format

if TYPE_CHECKING:  # pragma: no cover
    from contextfold.compaction_result import CompactionResult
    from contextfold.compaction_run import CompactionRun

#: The smallest page a recall round is kept room for (tokens): where the history's floor leaves
#: no room for a page of ``recall_max_tokens``, the model can still page through in steps of it.
MIN_RECALL_PAGE_TOKENS = 64

#: The largest share of the room beside the floor (the tokens the budget leaves beside the
#: system prompt, tools, task and last user turn) a recall round is kept: where even the
#: smallest round takes more, none is kept. On the held-out probe sets at the naive cut's
#: budget, facts in view with ``recoverable=True``: 367 of 608 with no such limit, 370 at 0.5,
#: 398 at 0.25, 439 at 0.1 (where SWE runs, whose rooms are thousands of tokens, keep none
#: either: a page is a tenth of the room); an agent loop over them 286, 337, 362, 400.
MAX_ROUND_SHARE = 0.25

#: Tokens kept aside when the answer is fitted to the room exactly (see ``answer``).
SEAM_SLACK = 8

#: At most this many ids of earlier folds are named again at the end of a summary.
CARRIED_IDS = 12


class RecallRound(NamedTuple):
    """The recall round one compaction left its history: the page it kept room for (tokens;
    None: no reserve, a page is sized by the budget), whether it kept the room under the budget
    at all, and the room its history leaves under the budget (None where the recall tool was
    not sent)."""

    page: int | None
    kept: bool
    room: int | None


class RecoverableFolds:
    """Mixin of ``Compactor``: the store, the recall tool and the repair step."""

    provider: str
    model: str | None
    tools: Any
    wire_format: Any
    #: The estimate's keywords for a history of a wire format, as it will be sent (``Compactor``).
    _estimate_kw: Callable[[str], dict[str, Any]]

    def _init_recall(self, recoverable: bool, store: ContentStore | None, recall_max_tokens: int | None,
                     repair: bool, recall_reserve: bool = True) -> None:
        if not isinstance(recoverable, bool) or not isinstance(repair, bool) or not isinstance(recall_reserve, bool):
            raise TypeError("recoverable, recall_reserve and repair must be True or False")
        if store is not None and not isinstance(store, ContentStore):
            raise TypeError(f"store must have put(id, text) and get(id), got {type(store).__name__}")
        if recall_max_tokens is not None and (
                isinstance(recall_max_tokens, bool) or not isinstance(recall_max_tokens, int) or recall_max_tokens < 16):
            raise ValueError(f"recall_max_tokens must be an int >= 16, got {recall_max_tokens!r}")
        self.recoverable = recoverable
        self.recall_reserve = recall_reserve
        # (Without one: the process's own, so an id stays recallable by the next Compactor made.)
        self.store: ContentStore = store if store is not None else default_content_store()
        self.repair = repair
        self._recall_max_tokens = recall_max_tokens
        self._format: str | None = None
        # What a round takes besides its page in each wire format (priced once).
        self._round_overheads: dict[str, int] = {}
        # The round the last compaction left its history, and each conversation's last one (one
        # Compactor may serve many, from threads: each is written whole, once per compaction).
        self._last_round: RecallRound | None = None
        self._rounds: OrderedDict[int, RecallRound] = OrderedDict()

    # -- sizes -------------------------------------------------------------------------------

    def _page_tokens(self, room: int) -> int:
        if self._recall_max_tokens is not None:
            return self._recall_max_tokens
        return _recall.page_tokens(room)

    def round_overhead(self, fmt: str) -> int:
        """Tokens one recall round takes in ``fmt`` besides its page: the model's call (a fold
        id and a six-digit offset) and the answer's envelope and header line, priced by this
        Compactor's estimator, plus ``SEAM_SLACK``."""
        if fmt not in self._round_overheads:
            call = _recall.sample_call(fmt)
            header = _recall.page_header("cf0123456789ab", 999_999, 999_999, 9_999_999)
            answer = json.loads(_core.recall_result(call, call_id=_core.recall_calls(call)[0][0], text=header))
            kw = dict(provider=self.provider, model=self.model)
            self._round_overheads[fmt] = int(_core.estimate([call], **kw)) + int(  # type: ignore[arg-type]
                _core.estimate([answer], **kw)) + SEAM_SLACK  # type: ignore[arg-type]
        return self._round_overheads[fmt]

    def _recall_reserve(self, fmt: str, room: int, *, smallest: bool = False) -> tuple[int, int]:
        """The page of one recall round and the tokens kept free under the budget for it (its
        overhead and the page): a page of ``recall_max_tokens`` (default: a tenth of ``room``,
        the tokens the budget leaves beside the compaction's floor, within [64, 2,000]);
        ``smallest``: of ``MIN_RECALL_PAGE_TOKENS``, where the floor leaves no more."""
        page = MIN_RECALL_PAGE_TOKENS if smallest else self._page_tokens(room)
        return page, page + self.round_overhead(fmt)

    def _request_tools(self, fmt: str) -> Any:
        if not self.recoverable or _recall.declares_recall(self.tools):
            return self.tools
        return [*(self.tools or ()), _recall.recall_tool(fmt)]

    def _with_tools(self, result: CompactionResult, run: CompactionRun) -> CompactionResult:
        """``result`` with the tools to send beside its messages in ``run``'s format
        (recoverable: the caller's and the recall tool); the room its history leaves is what an
        answer may take, remembered for its conversation (``_remember_round``)."""
        if not self.recoverable:
            return result
        self._remember_round(result.messages, RecallRound(run.recall_page, run.round_kept,
                                                          result.budget - result.tokens_after))
        return dataclasses.replace(result, tools=self._request_tools(run.fmt))

    def _remember_round(self, messages: Sequence[Any], round_: RecallRound) -> None:
        """``round_`` as the last compaction's and as the one of the conversation ``messages``
        (a compacted history) is: ``answer(call, history=...)`` finds it by the history's head."""
        self._last_round = round_
        remember(self._rounds, conversation_key(messages), round_)

    # -- folds -------------------------------------------------------------------------------

    def _fold_span(self, folded: list[Any], store: ContentStore) -> str:
        """Store the folded messages whole in ``store`` (a run's: ``CompactionRun.store``); the
        line naming their id (and earlier folds' ids they held, most recent first) that ends the
        summary."""
        line, keep = self._fold_line(folded, store)
        keep()
        return line

    def _fold_line(self, folded: list[Any], store: ContentStore) -> tuple[str, Callable[[], None]]:
        """The line ``_fold_span`` ends the summary with, and the call that stores the span."""
        clause, keep = self._fold_clause(folded, store)
        return f"\n[folded {len(folded)} messages; {clause}]", keep

    def _fold_clause(self, folded: list[Any], store: ContentStore) -> tuple[str, Callable[[], None]]:
        """What names the stored span of ``folded`` (``id=..., contextfold_recall restores them``
        and the earlier folds' ids it held) and the call that stores it in ``store``: a caller
        that tries several spans stores only the one it keeps."""
        text = _recall.span_text(folded)
        fold_id = _core.fold_id(text)
        earlier = [i for i in _core.fold_ids_in(text) if i != fold_id][-CARRIED_IDS:]
        clause = f"id={fold_id}, {_recall.RECALL_TOOL} restores them"
        if earlier:
            clause += "; earlier folds: " + " ".join(f"id={i}" for i in reversed(earlier))
        return clause, lambda: store.put(fold_id, text)

    def recall(self, fold_id: str, /) -> str:
        """The original text folded under ``fold_id`` (a tool output, a call's arguments JSON,
        an image's source, or a folded span's messages as a JSON list). KeyError when the store
        does not hold it (never folded here, evicted or expired); ValueError for a string that
        is no fold id."""
        text = self.store.get(fold_id)
        if text is None:
            raise KeyError(f"no folded content under {fold_id!r} in {self.store!r}")
        return text

    def answer(self, call: Any, /, *, max_tokens: int | None = None, history: Sequence[Any] | None = None) -> Any:
        """The tool-result message to append after the model's recall ``call`` (the assistant
        message that calls ``contextfold_recall``, in the history's format; for Responses the
        ``function_call`` item), written in that format: a chat ``tool`` message, a Responses
        ``function_call_output`` item, an Anthropic / Bedrock user message with one result
        block, a Gemini user content with one ``functionResponse``.

        The answer is one page of the original: at most ``max_tokens`` tokens (default: the page
        the compaction kept room for, ``recall_max_tokens`` or a tenth of the room beside its
        floor within [64, 2,000], and no more than the room its history leaves under the budget
        once the call is added; where it kept none, 64 tokens; with ``recall_reserve=False``, a
        tenth of the budget within [64, 2,000]; the model's own ``max_tokens`` argument can only
        lower it); the header line says which characters it holds and the ``offset`` of the
        next page.

        ``history``: the messages the answer will follow, the call last (appended if it is not;
        where the last message is a turn that calls recall several times, pass each call alone
        as ``call``: the answers share the room equally).
        The compaction is then that of this conversation (a Compactor serving many remembers
        the last 256), and the room is what this history leaves under the budget (tokens), or
        under the trigger when one was given (the gate lets the history grow to it), so turns
        appended since count too; a conversation it never compacted gets a tenth of that room. Without it: the last compaction's, whichever conversation that was (one
        conversation per Compactor).

        A fold that held images is never paged as their base64: its text (a tool result's, beside
        its screenshots) is paged up to the first image, the header of the page that reaches it
        naming the image the next offset gives; an offset inside an image's characters gives that
        image, one per answer, as an image in Anthropic, Bedrock (raw bytes), Responses and
        Gemini (``functionResponse.parts``) when its price (tokens, by its pixels as
        ``estimate`` prices it) fits the room a page would have; else, and always in OpenAI chat
        (a ``tool`` message holds text alone), a short text saying what the image is (its size
        and type) and why it is not given (``needs ~N tokens where this answer's room holds
        ~M``). A lone URL or file id is known to be an image by its ``[folded image``
        placeholder in ``history``. ``recall(id)`` still returns the stored original.

        A folded document (a PDF a tool returned or a user sent; its bytes are kept with the
        fold) is answered likewise: as a document in Anthropic (a PDF), Bedrock (a DocumentBlock
        of raw bytes) and Responses (``input_file``) when its price (tokens, by its pages) fits;
        else, and always in OpenAI chat and Gemini, a short text of its pages, bytes and type and
        why it is not given.

        A call the model wrote wrong (arguments that are not JSON, no string ``id``, a negative
        or non-integer ``offset``: ``1.5``, ``true``) is answered with what was wrong, so the
        model can call again; an integer written ``8000.0`` or ``"8000"`` is read as 8000.
        ValueError when ``call`` holds no recall call or several (answer a message with one
        recall call at a time); TypeError / ValueError for a ``max_tokens`` that is not an int
        >= 1."""
        if max_tokens is not None and (isinstance(max_tokens, bool) or not isinstance(max_tokens, int)):
            raise TypeError(f"max_tokens must be an int or None, got {type(max_tokens).__name__}")
        if max_tokens is not None and max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {max_tokens}")
        if max_tokens is not None:
            max_tokens = min(max_tokens, _recall.PAGE_BOUND_LIMIT)
        read = _recall.read_calls(call)
        if not read:
            raise ValueError(f"the message holds no {_recall.RECALL_TOOL} call")
        if len(read) > 1:
            raise ValueError(f"the message holds {len(read)} {_recall.RECALL_TOOL} calls; answer one call per message")
        if isinstance(read[0], tuple):
            call_id, why = read[0]
            return _recall.answer_message(call, call_id, _recall.malformed_text(why))
        calls = [read[0]]
        round_, room, share = self._round_of(call, read[0].call_id, history)
        bound = max_tokens if max_tokens is not None else (
            round_.page if round_ is not None and round_.page is not None else self._page_tokens(
                self._default_budget() if round_ is not None or room is None else room // share))
        target = bound + _recall.ANSWER_ENVELOPE
        # (Without a round's room kept, the answer goes beyond the budget: the page takes its bound,
        # the caller's room without the reserve, the smallest page where none fitted.)
        if max_tokens is None and room is not None and (round_ is None or round_.kept):
            # SEAM_SLACK: two messages priced alone can cost a few tokens less than inside the
            # history (Gemini prices a turn's seam with its neighbour).
            target = max(_recall.ANSWER_ENVELOPE + 16, min(target, (room - SEAM_SLACK) // share))
        stored, said = _recall.stored_text(self.store, calls[0])
        if stored is None:
            # (Read once: a store that is down is logged once per answer.)
            return _recall.answer_message(call, calls[0].call_id, said or "")
        images = _recall.stored_images(stored, calls[0].fold_id, history)
        if _recall.image_due(calls[0], images):
            if calls[0].max_tokens is not None:
                target = min(target, calls[0].max_tokens + _recall.ANSWER_ENVELOPE)
            return _recall.image_answer(call, calls[0], stored, images, target, provider=self.provider,
                                        model=self.model)
        # The page is cut by its text's estimate; the message prices it in its own context (a
        # tool result's text may cost more, and not in proportion): search the largest page
        # bound whose message fits the target.
        def attempt(page_bound: int) -> tuple[Any, int]:
            text = _recall.answer_text(self.store, calls[0], max_tokens=page_bound, provider=self.provider,
                                       model=self.model, text=stored, images=images)
            message = _recall.answer_message(call, calls[0].call_id, text)
            return message, int(_core.estimate([message], provider=self.provider, model=self.model))  # type: ignore[arg-type]

        message, tokens = attempt(bound)
        if tokens > target:
            lo, hi = 1, bound - 1
            message, _ = attempt(lo)
            while lo < hi:
                mid = (lo + hi + 1) // 2
                m, t = attempt(mid)
                if t <= target:
                    lo, message = mid, m
                else:
                    hi = mid - 1
        return message

    def _round_of(self, call: Any, call_id: str, history: Sequence[Any] | None) -> tuple[
            RecallRound | None, int | None, int]:
        """The round ``call`` (its recall call ``call_id``) is answered in, the room (tokens) the
        answers of its turn may take, and how many answers share that room: without ``history``,
        the last compaction's round and the room it left less the call, for one answer; with it,
        that conversation's round (None: never compacted here) and what the history leaves under
        the budget, the call appended unless the history ends with it or with a turn holding
        it among other recall calls (each answer then gets an equal share)."""
        if history is None:
            last = self._last_round
            if last is None or last.room is None:
                return last, None, 1
            call_tokens = int(_core.estimate([call], provider=self.provider, model=self.model))  # type: ignore[arg-type]
            return last, last.room - call_tokens, 1
        if isinstance(history, (str, bytes)) or not isinstance(history, Sequence):
            raise TypeError(f"history must be a list of messages, got {type(history).__name__}")
        sent = list(history)
        share = 1
        if not sent or (sent[-1] is not call and sent[-1] != call):
            turn = _recall.read_calls(sent[-1]) if sent else []
            if any(not isinstance(r, tuple) and r.call_id == call_id for r in turn):
                # A turn that calls recall in parallel: its answers all follow it.
                share = len(turn)
            else:
                sent.append(call)
        # (A compacted history shorter than the key's messages was filed under all it had.)
        round_ = next((r for k in range(min(KEY_MESSAGES, len(sent)), 0, -1)
                       if (r := self._rounds.get(conversation_key(sent[:k]))) is not None), None)
        if round_ is not None and round_.room is None:
            return round_, None, share
        fmt = self.wire_format or detect_wire_format(sent, self.provider, tools=self.tools)
        return round_, self._answer_ceiling() - int(_core.estimate(sent, **self._estimate_kw(fmt))), share

    def _default_budget(self) -> int:
        try:
            return int(getattr(self, "budget"))
        except ValueError:
            return 20 * _recall.DEFAULT_PAGE_TOKENS

    def _answer_ceiling(self) -> int:
        """What a history with its recall answers may reach (tokens): just under a trigger the
        caller set (a gated loop lets the history grow to it, and an answer below it is read
        before the next compaction folds it), else the budget. Held to the budget in a gated
        loop, every answer between two compactions was the smallest page (69 characters three
        turns after one)."""
        budget = self._default_budget()
        trigger = getattr(self, "_trigger", None)
        if trigger is not None and trigger[0] != "messages":
            try:
                return max(budget, int(getattr(self, "trigger_tokens")) - 1)
            except ValueError:
                pass  # (a fraction of a window not known)
        return budget

    # -- repair ------------------------------------------------------------------------------

    def _repaired(self, msgs: list[Any], fmt: str, notes: list[str]) -> list[Any]:
        from contextfold.repair import repair

        r = repair(msgs, provider=self.provider, wire_format=fmt)
        if r.changes:
            notes.append("repaired the history first: " + "; ".join(r.changes))
        return r.messages
