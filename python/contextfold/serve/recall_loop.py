"""The proxy's recall loop: it answers the model's ``contextfold_recall`` calls itself.

With ``ServeConfig.recall`` the proxy folds recoverably: every placeholder and folded span names
an id whose original sits in the proxy's content store, and every body sent with such a fold
carries the recall tool. The client never declared that tool and cannot answer it, so the proxy
reads each response before it goes back: when the model's turn calls the recall tool, the proxy
appends that turn and one answer per call (a page of the original, in the API's own message
shape) to the body it sent, asks the upstream again, and returns the first response that does
not call it (or the last, after ``recall_rounds`` rounds). The client sees one response to the
request it sent; the recall rounds stay between the proxy and the upstream. Once its rounds or
the room under the gate are spent, a further call is answered with a note saying so (the model
then answers from what it has); a model that calls again after the note gets its turn returned
as it is.

A streamed response is relayed as it comes until the event that starts a tool call; from there
the proxy holds its events to the end of the turn (``StreamRelay``). A turn that calls no recall
then has its held events sent unchanged: the client got the very bytes the upstream sent, the
tool calls' events only later. A turn that calls recall has its held events dropped, and the
next round's events follow the text already sent, renumbered to continue it (Anthropic's content
block indices, the Responses API's output indices and sequence numbers), so the SDK reads one
turn. A JSON response is read whole.

A JSON response reports the request's rounds in its headers (``RecallRequest.report``); a
stream's headers leave before its rounds are known, so it reports them at its end
(``StreamRelay.finish``): an SSE comment line in the OpenAI and Anthropic streams, and in a
Gemini stream, whose SDK (google-genai) raises on any line but ``data:`` JSON, a ``contextfold``
member of its last chunk (google-genai drops members it does not know; on an error chunk it
raises with the whole chunk, report included, as the error's details). A request whose later
round fails reports the rounds run before, on the error response or at the end of the stream
its error event ends (``StreamRelay.fail``).

The model's turn is appended as the API returned it (reasoning and thinking blocks, thought
signatures included, which the providers require back unchanged) less any call of the client's
own tools in it: the proxy cannot answer those, and the model makes them again once it has read
what it recalled.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

from contextfold import _core
from contextfold.content_store import ContentStore
from contextfold.recall import (ANSWER_ENVELOPE, RECALL_TOOL, MIN_PAGE_TOKENS, answer_text, image_answer, image_due,
                                malformed_text, read_calls, stored_images, stored_text)
from contextfold.serve.body import json_bytes
from contextfold.serve.sse import SEPARATORS, comment, payload, split_events, with_payload

__all__ = ["RecallRequest", "RecallRoute", "RecallRound", "StreamRelay", "extended", "recall_round", "response_of",
           "stream_response"]

#: The member of a Gemini stream's finishing chunk that carries the request's report.
REPORT_MEMBER = "contextfold"


@dataclass(frozen=True, slots=True)
class RecallRound:
    """One answered round: the ``messages`` to append (the model's turn, then its answers), their
    estimated ``tokens``, and whether the answers are pages (``paged``) or the note that recall is
    spent for this request."""

    messages: list[Any]
    tokens: int
    paged: bool


def spent_note(rounds: int) -> str:
    """The answer to a recall call once the request's rounds or room are spent."""
    return (f"[{RECALL_TOOL}: no more recall in this request (its room under the context budget or its {rounds} "
            "rounds are spent); answer from what you have]")


@dataclass(frozen=True, slots=True)
class RecallRoute:
    """What a body sent with the recall tool needs to answer its calls: ``history_end`` the byte
    offset in the sent body just after its last message (where a round's messages go); a page's
    bound (``page_tokens``); ``room`` the tokens answered rounds may still add before the request
    reaches the proxy's gate; the ``model`` pages are priced for."""

    history_end: int
    page_tokens: int
    room: int
    model: str | None


# -- the response as one JSON object -------------------------------------------------------------


def _chat_stream(events: list[dict[str, Any]]) -> dict[str, Any]:
    content: list[str] = []
    reasoning: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    for ev in events:
        for choice in ev.get("choices") or ():
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            if isinstance(delta.get("content"), str):
                content.append(delta["content"])
            if isinstance(delta.get("reasoning_content"), str):
                reasoning.append(delta["reasoning_content"])
            for tc in delta.get("tool_calls") or ():
                slot = calls.setdefault(int(tc.get("index", 0)), {"id": "", "type": "function",
                                                                  "function": {"name": "", "arguments": ""}})
                if tc.get("id"):
                    slot["id"] = tc["id"]
                fn = tc.get("function") or {}
                slot["function"]["name"] += fn.get("name") or ""
                slot["function"]["arguments"] += fn.get("arguments") or ""
    message: dict[str, Any] = {"role": "assistant", "content": "".join(content) or None}
    if reasoning:
        message["reasoning_content"] = "".join(reasoning)
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    return {"choices": [{"index": 0, "message": message}]}


def _anthropic_stream(events: list[dict[str, Any]]) -> dict[str, Any]:
    blocks: dict[int, dict[str, Any]] = {}
    partial: dict[int, list[str]] = {}
    for ev in events:
        kind = ev.get("type")
        if kind == "content_block_start":
            blocks[int(ev.get("index", 0))] = dict(ev.get("content_block") or {})
        elif kind == "content_block_delta":
            i = int(ev.get("index", 0))
            block, delta = blocks.setdefault(i, {}), ev.get("delta") or {}
            dt = delta.get("type")
            if dt == "text_delta":
                block["text"] = block.get("text", "") + delta.get("text", "")
            elif dt == "input_json_delta":
                partial.setdefault(i, []).append(delta.get("partial_json", ""))
            elif dt == "thinking_delta":
                block["thinking"] = block.get("thinking", "") + delta.get("thinking", "")
            elif dt == "signature_delta":
                block["signature"] = block.get("signature", "") + delta.get("signature", "")
    for i, parts in partial.items():
        text = "".join(parts)
        try:
            blocks[i]["input"] = json.loads(text) if text else {}
        except ValueError:
            blocks[i]["input"] = {}
    return {"role": "assistant", "content": [blocks[i] for i in sorted(blocks)]}


def _gemini_stream(events: list[dict[str, Any]]) -> dict[str, Any]:
    parts: list[Any] = []
    for ev in events:
        for cand in (ev.get("candidates") or ())[:1]:
            parts.extend((cand.get("content") or {}).get("parts") or ())
    return {"candidates": [{"content": {"role": "model", "parts": parts}}]}


def response_of(api: str, data: bytes) -> Any:
    """A JSON response ``data`` of API ``api``, or None when it cannot be read. Gemini's
    ``:streamGenerateContent`` without ``alt=sse`` answers with a JSON array of its stream's
    chunks: read as the one response they make up."""
    try:
        response = json.loads(data)
    except ValueError:
        return None
    if api == "gemini" and isinstance(response, list):
        return _gemini_stream([c for c in response if isinstance(c, dict)])
    return response


def stream_response(api: str, events: list[dict[str, Any]]) -> Any:
    """A streamed response (its events' JSON objects, ``sse.payloads``) as the one JSON object a
    non-streamed call of API ``api`` returns, or None when it cannot be rebuilt."""
    if api == "chat":
        return _chat_stream(events)
    if api == "responses":
        done = [e for e in events if e.get("type") == "response.completed"]
        return done[-1].get("response") if done else None
    if api == "anthropic":
        return _anthropic_stream(events)
    return _gemini_stream(events)


# -- one round -----------------------------------------------------------------------------------


def _is_recall_call(api: str, entry: Any) -> bool:
    if api == "chat":
        return isinstance(entry, dict) and (entry.get("function") or {}).get("name") == RECALL_TOOL
    if api == "anthropic":
        return isinstance(entry, dict) and entry.get("type") == "tool_use" and entry.get("name") == RECALL_TOOL
    if api == "gemini":
        return isinstance(entry, dict) and (entry.get("functionCall") or {}).get("name") == RECALL_TOOL
    return isinstance(entry, dict) and entry.get("type") == "function_call" and entry.get("name") == RECALL_TOOL


def _is_other_call(api: str, entry: Any) -> bool:
    if not isinstance(entry, dict) or _is_recall_call(api, entry):
        return False
    if api == "anthropic":
        return entry.get("type") == "tool_use"
    if api == "gemini":
        return "functionCall" in entry
    return entry.get("type") == "function_call"


def _turn(api: str, response: Any) -> list[Any]:
    """The model's turn as history entries (the client's own calls left out), or [] when it
    holds no recall call."""
    if not isinstance(response, dict):
        return []
    # The first choice / candidate is the turn: a body that carries the recall tool asks for one
    # (the Folder offers the tool to no request for several, ``Pricing.no_recall``).
    if api == "chat":
        choices = response.get("choices") or []
        msg = (choices[0] or {}).get("message") if choices and isinstance(choices[0], dict) else None
        if not isinstance(msg, dict):
            return []
        calls = [c for c in msg.get("tool_calls") or () if _is_recall_call(api, c)]
        if not calls:
            return []
        # Only the fields a request's assistant message takes (a response adds refusal, annotations...);
        # reasoning_content too, which DeepSeek's thinking mode wants back within a tool-calling turn.
        turn: dict[str, Any] = {"role": "assistant", "content": msg.get("content")}
        if isinstance(msg.get("reasoning_content"), str):
            turn["reasoning_content"] = msg["reasoning_content"]
        turn["tool_calls"] = [{"id": c.get("id"), "type": "function",
                               "function": {"name": RECALL_TOOL, "arguments": c["function"].get("arguments", "")}}
                              for c in calls]
        return [turn]
    if api == "responses":
        items = [i for i in response.get("output") or () if isinstance(i, dict)]
        if not any(_is_recall_call(api, i) for i in items):
            return []
        # The items after a reasoning item that goes back go as the API returned them, ids
        # included: the API pairs a reasoning item with the item after it by that item's id (a
        # message flattened to its text after one was refused, "Item 'rs_...' of type
        # 'reasoning' was provided without its required following item", recorded in
        # ../shared/data/replay, where a turn with its message item whole passed). The others
        # stand alone (`_responses_input`). A reasoning item whose next item is a call to the
        # client's own tool (left out) is left out with it.
        out: list[Any] = []
        carried = False
        for k, i in enumerate(items):
            if _is_other_call(api, i):
                continue
            if i.get("type") == "reasoning":
                nxt = items[k + 1] if k + 1 < len(items) else None
                carried = bool(i.get("encrypted_content")) and nxt is not None and not _is_other_call(api, nxt)
                if not carried:
                    continue
            if carried:
                out.append(i)
            elif (r := _responses_input(i)) is not None:
                out.append(r)
        return out
    if api == "anthropic":
        blocks = response.get("content")
        if not isinstance(blocks, list) or not any(_is_recall_call(api, b) for b in blocks):
            return []
        return [{"role": "assistant", "content": [b for b in blocks if not _is_other_call(api, b)]}]
    cands = response.get("candidates") or []
    content = (cands[0] or {}).get("content") if cands and isinstance(cands[0], dict) else None
    parts = content.get("parts") if isinstance(content, dict) else None
    if not isinstance(parts, list) or not any(_is_recall_call(api, p) for p in parts):
        return []
    return [{"role": "model", "parts": [p for p in parts if not _is_other_call(api, p)]}]


def _responses_input(item: dict[str, Any]) -> Any:
    """A Responses output item as an input item that stands alone (no reasoning item before it
    goes back), whether the upstream stored the response or not (``store: false``): a
    reasoning item only with its
    ``encrypted_content`` (by id alone it is found only when stored), a function call by its
    ``call_id`` (with the output item's id it would need its reasoning item beside it), a
    message as its text."""
    kind = item.get("type")
    if kind == "reasoning":
        return item if item.get("encrypted_content") else None
    if kind == "function_call":
        return {"type": "function_call", "call_id": item.get("call_id"), "name": item.get("name"),
                "arguments": item.get("arguments", "")}
    if kind == "message":
        text = "".join(p.get("text", "") for p in item.get("content") or () if isinstance(p, dict))
        return {"role": "assistant", "content": text} if text else None
    return item


def recall_round(api: str, provider: str, response: Any, store: ContentStore, route: RecallRoute, *,
                 rounds: int, spent: bool = False) -> RecallRound | None:
    """The round answering the model's recall calls in ``response``: its turn, then one answer
    per call, a page of what the store holds under the id asked for, sized to ``route``'s page
    and room; the note that recall is spent instead (``spent_note(rounds)``) when ``spent`` or
    when the room holds no page. None when the turn calls no recall."""
    turn = _turn(api, response)
    if not turn:
        return None
    callers = [e for e in turn if _is_recall_call(api, e)] if api == "responses" else turn
    reads = [(c, r) for c in callers for r in read_calls(c)]
    if not reads:
        return None
    turn_tokens = int(_core.estimate(turn, provider=provider, model=route.model))  # type: ignore[arg-type]
    page = min(route.page_tokens, (route.room - turn_tokens) // len(reads) - ANSWER_ENVELOPE)
    paged = not spent and page >= MIN_PAGE_TOKENS
    answers: list[Any] = []
    for caller, read in reads:
        if isinstance(read, tuple):
            call_id, text = read[0], malformed_text(read[1])
        elif not paged:
            call_id, text = read.call_id, spent_note(rounds)
        else:
            stored, said = stored_text(store, read)
            images = [] if stored is None else stored_images(stored, read.fold_id)
            if stored is not None and image_due(read, images):
                # A folded screenshot (or PDF) comes back as an image (a document) where the API's
                # tool result carries one (in words where not), never as pages of its base64.
                answers.append(image_answer(caller, read, stored, images, page + ANSWER_ENVELOPE,
                                            provider=provider, model=route.model))
                continue
            call_id, text = read.call_id, (said or "") if stored is None else answer_text(
                store, read, max_tokens=page, provider=provider, model=route.model, text=stored, images=images)
        answers.append(json.loads(_core.recall_result(caller, call_id=call_id, text=text)))
    if api == "anthropic":
        # All results of one assistant turn go in the one user message that follows it.
        answers = [{"role": "user", "content": [b for a in answers for b in a["content"]]}]
    elif api == "gemini":
        answers = [{"role": "user", "parts": [p for a in answers for p in a["parts"]]}]
    messages = turn + answers
    return RecallRound(messages, int(_core.estimate(messages, provider=provider, model=route.model)),  # type: ignore[arg-type]
                       paged)


@dataclass(slots=True)
class RecallRequest:
    """One request's rounds: the ``body`` sent last, where its history ends and its room
    (``route``), the rounds answered with pages, and whether the model was told recall is spent
    (``told``: its next turn goes back as it is)."""

    body: bytes
    route: RecallRoute
    rounds: int = 0
    told: bool = False
    #: The estimated tokens the answered rounds appended to the request (the model's recall turns
    #: and their answers, the note included): what they took of the room under the gate.
    tokens: int = 0

    def answered(self, got: RecallRound) -> None:
        """Append ``got``'s messages to the body for the next round."""
        self.body, end = extended(self.body, self.route.history_end, got.messages)
        self.route = replace(self.route, history_end=end, room=self.route.room - got.tokens)
        self.tokens += got.tokens
        if got.paged:
            self.rounds += 1
        else:
            self.told = True

    def report(self) -> dict[str, int]:
        """What the request's rounds spent, as a JSON response's ``x-contextfold-<name>`` headers
        and a stream's last words name it: ``recall-rounds`` (answered with pages),
        ``recall-tokens`` (``tokens``), ``recall-spent`` (1: the model was told recall is spent)."""
        return {"recall-rounds": self.rounds, "recall-tokens": self.tokens, "recall-spent": int(self.told)}


def extended(body: bytes, end: int, messages: list[Any]) -> tuple[bytes, int]:
    """``body`` with ``messages`` appended to its history, which ends at byte ``end``; and the
    offset where the extended history ends."""
    added = b"".join(b"," + json_bytes(m) for m in messages)
    return body[:end] + added + body[end:], end + len(added)


# -- streams -------------------------------------------------------------------------------------

def _starts_call(api: str, ev: Any) -> bool:
    """Whether a stream event (its JSON) starts a tool call (of any tool): from there a turn is
    held."""
    if not isinstance(ev, dict):
        return False
    if api == "chat":
        return any(isinstance(c, dict) and (c.get("delta") or {}).get("tool_calls") for c in ev.get("choices") or ())
    if api == "responses":
        kind = ev.get("type")
        if kind == "response.output_item.added":
            return (ev.get("item") or {}).get("type") == "function_call"
        # (A stream whose items were not announced: its final response holds the calls.)
        return kind in ("response.completed", "response.incomplete") and any(
            isinstance(i, dict) and i.get("type") == "function_call" for i in (ev.get("response") or {}).get("output") or ())
    if api == "anthropic":
        return ev.get("type") == "content_block_start" and (ev.get("content_block") or {}).get("type") == "tool_use"
    return any(isinstance(p, dict) and "functionCall" in p for c in (ev.get("candidates") or ())[:1]
               for p in (c.get("content") or {}).get("parts") or ())


def _may_end(api: str, ev: Any) -> bool:
    """Whether a Gemini stream event (its JSON) may be the stream's last: it finishes the turn (a
    candidate's ``finishReason``) or carries no part of it (usage alone, prompt feedback, an
    error). Held until the next event or the stream's end, where the last carries the report
    (``StreamRelay.finish``). Gemini sends these last, and the client has nothing to show of
    them, so holding them delays nothing it could use; a chunk of the turn's parts goes out at
    once."""
    if api != "gemini" or not isinstance(ev, dict):
        return False
    candidates = [c for c in ev.get("candidates") or () if isinstance(c, dict)]
    return any(c.get("finishReason") for c in candidates) or not any(
        isinstance(c.get("content"), dict) and c["content"].get("parts") for c in candidates)


@dataclass(slots=True)
class StreamRelay:
    """What a streamed request's rounds send the client: each round's events up to the one that
    starts a tool call go out at once, the rest are held until the round ends (``end``). From the
    second round on, events are renumbered to continue what was sent: Anthropic's
    ``message_start`` is dropped and block indices shifted; the Responses API's
    ``response.created`` / ``in_progress`` are dropped, output indices and sequence numbers
    shifted, and the final response lists the items sent before. Each event's JSON is read once
    (``feed``) and serves both the relay and the round's response (``response``). The stream
    ends with the request's report (``finish``), or with an error event and the report
    (``fail``); a Gemini chunk that may be the stream's last is held to carry it."""

    api: str
    rounds: int = 0
    #: Of the rounds before this one: content blocks / output items sent, the next sequence number,
    #: and (Responses) the items sent.
    blocks: int = 0
    items: int = 0
    seq: int = 0
    sent_items: list[Any] = field(default_factory=list)
    #: This round: every event as the upstream sent it and its JSON, the held ones (rewritten),
    #: counts sent.
    raw: list[bytes] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    held: list[bytes] = field(default_factory=list)
    round_blocks: int = 0
    round_items: int = 0
    last_seq: int = -1
    #: This round's numbered events dropped (the Responses API's ``response.created`` /
    #: ``in_progress`` after the first round): the ones after them move down as many numbers.
    round_dropped: int = 0
    #: A Gemini chunk that may be the stream's last, held until the next event (which sends it
    #: first) or the stream's end (``_may_end``).
    finishing: bytes = b""
    #: The last bytes sent the client: whether the report starts a line, or an event, of its own.
    tail: bytes = b""

    def feed(self, event: bytes) -> bytes:
        """The bytes to send the client now for one upstream ``event`` (b"" when it is held or
        dropped)."""
        self.raw.append(event)
        ev = payload(event)
        if isinstance(ev, dict):
            self.events.append(ev)
        out = event if self.rounds == 0 else self._rewritten(event, ev)
        # A chunk held as the turn's last was not: it goes out before this one.
        before, self.finishing = self.finishing, b""
        if self.held or _starts_call(self.api, ev):
            if out:
                self.held.append(out)
            return self._sent(before)
        if _may_end(self.api, ev):
            self.finishing = out
            return self._sent(before)
        if isinstance(ev, dict) and out:
            kind = ev.get("type")
            if kind == "content_block_start":
                self.round_blocks += 1
            elif kind == "response.output_item.added":
                self.round_items += 1
            if isinstance(ev.get("sequence_number"), int):
                self.last_seq = ev["sequence_number"] + (self._seq_shift() if self.rounds else 0)
        return self._sent(before + out)

    def _seq_shift(self) -> int:
        """What a later round's sequence numbers move by: past the numbers already sent, less
        the events of this round dropped so far (the SDK reads a gap as events lost)."""
        return self.seq - self.round_dropped

    def _sent(self, out: bytes) -> bytes:
        if out:
            self.tail = (self.tail + out)[-4:]
        return out

    def _rewritten(self, event: bytes, ev: Any) -> bytes:
        if not isinstance(ev, dict) or self.api in ("chat", "gemini"):
            return event
        kind = ev.get("type")
        if self.api == "anthropic":
            if kind == "message_start":
                return b""
            if isinstance(ev.get("index"), int):
                return with_payload(event, {**ev, "index": ev["index"] + self.blocks})
            return event
        if kind in ("response.created", "response.in_progress"):
            if isinstance(ev.get("sequence_number"), int):
                self.round_dropped += 1
            return b""
        new = dict(ev)
        if isinstance(new.get("output_index"), int):
            new["output_index"] += self.items
        if isinstance(new.get("sequence_number"), int):
            new["sequence_number"] += self._seq_shift()
        if isinstance(new.get("response"), dict) and isinstance(new["response"].get("output"), list):
            new["response"] = {**new["response"], "output": [*self.sent_items, *new["response"]["output"]]}
        return with_payload(event, new) if new != ev else event

    def round_data(self) -> bytes:
        """This round's events as the upstream sent them."""
        return b"".join(self.raw)

    def response(self) -> Any:
        """This round's response as one JSON object (``stream_response``)."""
        return stream_response(self.api, self.events)

    def end(self, recalled: bool, response: Any = None) -> bytes:
        """End the round: the held bytes to send when the turn called no recall (``recalled``
        False); else only a chunk held as the turn's last (no part of the call), and the next
        round continues what was sent (``response``: this round's response as one object, whose
        first items were sent)."""
        held = b"".join(self.held)
        finishing, self.finishing = self.finishing, b""
        if recalled:
            self.blocks += self.round_blocks
            if self.api == "responses" and isinstance(response, dict):
                output = [i for i in response.get("output") or () if isinstance(i, dict)]
                self.sent_items += output[: self.round_items]
            self.items += self.round_items
            self.seq = self.last_seq + 1
            self.rounds += 1
        self.raw, self.events, self.held = [], [], []
        self.round_blocks = self.round_items = self.round_dropped = 0
        return self._sent(finishing if recalled else finishing + held)

    def finish(self, report: dict[str, int]) -> bytes:
        """End the stream after a round that called no recall: its held bytes, then ``report``
        (``RecallRequest.report``, ``_reported``)."""
        return self._reported(self.end(False), report)

    def fail(self, error: bytes, report: dict[str, int]) -> bytes:
        """End the stream with ``error``, the API's stream error event (``Api.stream_error``),
        when a round failed (the upstream answered it with an error status, or broke its stream
        off), then ``report`` (the rounds run before, ``_reported``). A Gemini chunk held as the
        turn's last goes out first; the held events of a turn cut off before its end are dropped
        (what they start never came whole)."""
        finishing = self.finishing
        self.finishing, self.raw, self.events, self.held = b"", [], [], []
        return self._reported(self._sent(finishing + error), report)

    def _reported(self, last: bytes, report: dict[str, int]) -> bytes:
        """``last``, the stream's last bytes (counted in ``tail``), with ``report``. In the OpenAI
        and Anthropic streams an SSE comment line after them: ``: contextfold recall-rounds=2
        recall-tokens=1834 recall-spent=0``. In a Gemini stream a ``contextfold`` member of its last chunk, whatever
        it is (a held one, ``_may_end``: the one that finishes the turn, usage alone, an error;
        or the last of a held tool call); a stream whose last chunk already went out (a chunk of
        the turn's parts: the upstream cut the turn short) gets a chunk of its own holding only
        the report, which google-genai reads as a response with no candidates."""
        if self.api == "gemini":
            events, rest = split_events(last)
            if rest.strip():
                events.append(rest)  # the upstream's last event, sent without its blank line
            data = payload(events[-1]) if events else None
            if isinstance(data, dict):
                return b"".join(events[:-1]) + with_payload(events[-1], {**data, REPORT_MEMBER: report})
            # (After an event sent without its blank line, the report's chunk starts with one: a
            # parser skips an empty line that ends no event.)
            gap = b"" if not self.tail or self.tail.endswith(SEPARATORS) else b"\n\n"
            return last + gap + with_payload(b"", {REPORT_MEMBER: report})
        # (An upstream's last event sent without its line break: the comment starts a line.)
        line = b"\n" if self.tail[-1:] not in (b"", b"\n", b"\r") else b""
        text = " ".join(f"{k}={v}" for k, v in report.items())
        return last + line + comment(f"{REPORT_MEMBER} {text}")
