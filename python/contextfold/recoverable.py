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
  gives the original text back.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from contextfold import _core
from contextfold import recall as _recall
from contextfold.content_store import ContentStore, default_content_store
from contextfold.prune import is_langchain_message

if TYPE_CHECKING:  # pragma: no cover
    from contextfold.compaction_result import CompactionResult

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


def _answer_message(call: Any, call_id: str, text: str) -> Any:
    """The message answering ``call_id`` of ``call`` with ``text``, in the call's own format: for
    a LangChain ``AIMessage`` (a history compacted as LangChain messages), a ``ToolMessage``."""
    if is_langchain_message(call):
        from langchain_core.messages import ToolMessage

        return ToolMessage(content=text, tool_call_id=call_id, name=_recall.RECALL_TOOL)
    return json.loads(_core.recall_result(call, call_id=call_id, text=text))


class RecoverableFolds:
    """Mixin of ``Compactor``: the store, the recall tool and the repair step."""

    provider: str
    model: str | None
    tools: Any
    wire_format: Any

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
        # The page the last compaction kept room for (tokens), and what a round takes besides it
        # in each wire format (priced once).
        self._recall_page: int | None = None
        self._round_overheads: dict[str, int] = {}
        # Whether the last compaction kept room for a round (its answers then fit the room it
        # left under the budget).
        self._round_kept = False
        # Budget minus the tokens of the last compacted history: what one recall round may take.
        self._last_room: int | None = None

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

    def _recall_reserve(self, fmt: str, room: int, *, smallest: bool = False) -> int:
        """Tokens kept free under the budget for one recall round: its overhead and a page of
        ``recall_max_tokens`` (default: a tenth of ``room``, the tokens the budget leaves beside
        the compaction's floor, within [64, 2,000]); ``smallest``: a page of
        ``MIN_RECALL_PAGE_TOKENS``, where the floor leaves no more."""
        self._recall_page = MIN_RECALL_PAGE_TOKENS if smallest else self._page_tokens(room)
        return self._recall_page + self.round_overhead(fmt)

    def _request_tools(self, fmt: str) -> Any:
        if not self.recoverable or _recall.declares_recall(self.tools):
            return self.tools
        return [*(self.tools or ()), _recall.recall_tool(fmt)]

    def _with_tools(self, result: CompactionResult, fmt: str) -> CompactionResult:
        """``result`` with the tools to send beside its messages in ``fmt`` (recoverable: the
        caller's and the recall tool); the room its history leaves is what an answer may take."""
        if not self.recoverable:
            return result
        self._last_room = result.budget - result.tokens_after
        return dataclasses.replace(result, tools=self._request_tools(fmt))

    # -- folds -------------------------------------------------------------------------------

    def _fold_span(self, folded: list[Any]) -> str:
        """Store the folded messages whole; the line naming their id (and earlier folds' ids
        they held, most recent first) that ends the summary."""
        clause, keep = self._fold_clause(folded)
        keep()
        return f"\n[folded {len(folded)} messages; {clause}]"

    def _fold_clause(self, folded: list[Any]) -> tuple[str, Callable[[], None]]:
        """What names the stored span of ``folded`` (``id=..., contextfold_recall restores them``
        and the earlier folds' ids it held) and the call that stores it: a caller that tries
        several spans stores only the one it keeps."""
        text = _recall.span_text(folded)
        fold_id = _core.fold_id(text)
        earlier = [i for i in _core.fold_ids_in(text) if i != fold_id][-CARRIED_IDS:]
        clause = f"id={fold_id}, {_recall.RECALL_TOOL} restores them"
        if earlier:
            clause += "; earlier folds: " + " ".join(f"id={i}" for i in reversed(earlier))
        return clause, lambda: self.store.put(fold_id, text)

    def recall(self, fold_id: str, /) -> str:
        """The original text folded under ``fold_id`` (a tool output, a call's arguments JSON,
        an image's source, or a folded span's messages as a JSON list). KeyError when the store
        does not hold it (never folded here, evicted or expired)."""
        text = self.store.get(fold_id)
        if text is None:
            raise KeyError(f"no folded content under {fold_id!r} in {self.store!r}")
        return text

    def answer(self, call: Any, /, *, max_tokens: int | None = None) -> Any:
        """The tool-result message to append after the model's recall ``call`` (the assistant
        message that calls ``contextfold_recall``, in the history's format; for Responses the
        ``function_call`` item), written in that format: a chat ``tool`` message, a Responses
        ``function_call_output`` item, an Anthropic / Bedrock user message with one result
        block, a Gemini user content with one ``functionResponse``.

        The answer is one page of the original: at most ``max_tokens`` tokens (default: the page
        the last compaction kept room for, ``recall_max_tokens`` or a tenth of the room beside
        its floor within [64, 2,000], and no more than the room it left under its budget once the
        call is added; where it kept none, 64 tokens; with ``recall_reserve=False``, a tenth of
        the budget within [64, 2,000]; the model's own ``max_tokens`` argument can only lower
        it); the header line says which characters it
        holds and the ``offset`` of the next page. A call the model wrote wrong (arguments that
        are not JSON, no string ``id``, a negative or non-integer ``offset``) is answered with
        what was wrong, so the model can call again. ValueError when ``call`` holds no recall
        call or several (answer a message with one recall call at a time); TypeError /
        ValueError for a ``max_tokens`` that is not an int >= 1."""
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
            return _answer_message(call, call_id, _recall.malformed_text(why))
        calls = [read[0]]
        bound = max_tokens if max_tokens is not None else (
            self._recall_page if self._recall_page is not None else self._page_tokens(self._default_budget()))
        target = bound + _recall.ANSWER_ENVELOPE
        # (Without a round's room kept, the answer goes beyond the budget: the page takes its bound,
        # the caller's room without the reserve, the smallest page where none fitted.)
        if max_tokens is None and self._round_kept and self._last_room is not None:
            call_tokens = int(_core.estimate([call], provider=self.provider, model=self.model))  # type: ignore[arg-type]
            # SEAM_SLACK: two messages priced alone can cost a few tokens less than inside the
            # history (Gemini prices a turn's seam with its neighbour).
            target = max(_recall.ANSWER_ENVELOPE + 16, min(target, self._last_room - call_tokens - SEAM_SLACK))
        # The page is cut by its text's estimate; the message prices it in its own context (a
        # tool result's text may cost more, and not in proportion): search the largest page
        # bound whose message fits the target.
        def attempt(page_bound: int) -> tuple[Any, int]:
            text = _recall.answer_text(self.store, calls[0], max_tokens=page_bound, provider=self.provider,
                                       model=self.model)
            message = _answer_message(call, calls[0].call_id, text)
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

    def _default_budget(self) -> int:
        try:
            return int(getattr(self, "budget"))
        except ValueError:
            return 20 * _recall.DEFAULT_PAGE_TOKENS

    # -- repair ------------------------------------------------------------------------------

    def _repaired(self, msgs: list[Any], fmt: str, notes: list[str]) -> list[Any]:
        from contextfold.repair import repair

        r = repair(msgs, provider=self.provider, wire_format=fmt)
        if r.changes:
            notes.append("repaired the history first: " + "; ".join(r.changes))
        return r.messages
