"""pydantic-ai integration: a history processor that compacts the message history before each
model request (``pip install pydantic-ai-slim``)::

    Agent(model, history_processors=[history_processor(trigger=100_000)])   # pydantic-ai 1.x
    Agent(model, capabilities=[ProcessHistory(history_processor(trigger=100_000))])  # 2.x

pydantic-ai's messages are ``ModelRequest`` / ``ModelResponse`` objects made of parts. The
processor reads them as the OpenAI chat messages they stand for (one per part of a request, one
per response: ``to_openai_messages``) and, at the trigger, has the Compactor compact those: old
tool output masked, the middle folded into a summary that fills the room the budget leaves, the
task and the recent turns verbatim, each tool call with its return, the previous summary read
where the Compactor put it (never because a text opens with the marker), a model's summary held
to the user's requests, the standing rules and the identifier index. The compacted messages are
written back as pydantic-ai messages: a message the compaction left whole is the same object, an
edited one a copy of its own kind with the edited text, and the summary a ``UserPromptPart``
(or a ``TextPart`` of a response, where the Compactor gave it the assistant's role), the parts
of consecutive requests in one request. The compaction is reused on the next steps (the same
objects are sent). The caller's list is never altered; pydantic-ai itself keeps what a history
processor returns as the run's history.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Sequence
from typing import Any

from contextfold.compactor import CompactionResult, Compactor
from contextfold.errors import CompactionError
from contextfold.integrations.folding import not_compacted, refuse_recoverable, require_budget

try:
    from pydantic_ai.messages import (
        BinaryContent,
        ImageUrl,
        ModelMessage,
        ModelRequest,
        ModelResponse,
        NativeToolCallPart,
        NativeToolReturnPart,
        RetryPromptPart,
        SystemPromptPart,
        TextPart,
        ThinkingPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )
except ImportError as e:  # pragma: no cover - exercised only without pydantic-ai
    raise ImportError("contextfold.integrations.pydantic_ai needs pydantic-ai: pip install pydantic-ai-slim") from e

__all__ = ["ContextFoldHistoryProcessor", "history_processor", "to_openai_messages"]

log = logging.getLogger("contextfold.pydantic_ai")


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        return "\n".join(c if isinstance(c, str) else f"[{type(c).__name__}]" for c in content)
    return str(content)


def _is_image(c: Any) -> bool:
    return isinstance(c, ImageUrl) or (isinstance(c, BinaryContent) and c.is_image)


def _image_url(c: Any) -> str:
    return str(c.url) if isinstance(c, ImageUrl) else str(c.data_uri)


def _block(c: Any) -> dict[str, Any]:
    """One item of a user prompt's content as an OpenAI chat content part: text, an image as
    ``image_url``, other media as their type's name."""
    if isinstance(c, str):
        return {"type": "text", "text": c}
    if _is_image(c):
        return {"type": "image_url", "image_url": {"url": _image_url(c)}}
    return {"type": "text", "text": f"[{type(c).__name__}]"}


def _user_content(content: Any) -> Any:
    """A user prompt's content as OpenAI chat content: its images as ``image_url`` parts (priced
    by their pixels, as pydantic-ai's OpenAI model sends them), other media as their type's
    name. Read as the name ``[BinaryContent]`` before, twelve 1024x768 screenshots were priced
    259 tokens where the request held about 9,400, and the history never reached its trigger."""
    if isinstance(content, str) or not isinstance(content, Sequence) or not any(_is_image(c) for c in content):
        return _text(content)
    return [_block(c) for c in content]


def _native_parts(response: ModelResponse) -> list[dict[str, Any]]:
    """A response's calls of the provider's own tools and their returns (web search, code
    execution: ``NativeToolCallPart`` / ``NativeToolReturnPart``), each a content part priced by
    its JSON: the provider reads them back on the next request. They were not read at all:
    five web searches of ten results were priced nothing. (No ``text`` key: the write-back
    reads a response's text from its text parts alone.)"""
    out: list[dict[str, Any]] = []
    for p in response.parts:
        if isinstance(p, NativeToolCallPart):
            out.append({"type": "native_tool_call", "name": p.tool_name, "arguments": p.args_as_json_str()})
        elif isinstance(p, NativeToolReturnPart):
            out.append({"type": "native_tool_return", "name": p.tool_name, "content": p.model_response_str()})
    return out


def _return_content(part: ToolReturnPart) -> Any:
    """A tool return as a tool message's content: its text, then the images it returned as
    ``image_url`` parts (pydantic-ai sends them to the model beside the text). Its text alone
    was read before: a screenshot a tool returned was priced nothing."""
    text = part.model_response_str()
    content = part.content
    items = content if isinstance(content, Sequence) and not isinstance(content, (str, bytes)) else [content]
    images = [c for c in items if _is_image(c)]
    if not images:
        return text
    return [{"type": "text", "text": text}, *map(_block, images)]


def _content_back(original: Sequence[Any], edited: list[Any]) -> list[Any]:
    """A user prompt's content list written back from ``edited`` (its ``_user_content`` after a
    compaction): each block the compaction left as it was is the original item (an image, a
    document), in order; an edited block is its text."""
    blocks = [_block(o) for o in original]
    at = 0
    out: list[Any] = []
    for b in edited:
        k = next((i for i in range(at, len(blocks)) if blocks[i] == b), None)
        if k is not None:
            out.append(original[k])
            at = k + 1
        elif isinstance(b, dict) and b.get("type") == "image_url":
            out.append(ImageUrl(url=str((b.get("image_url") or {}).get("url", ""))))
        elif isinstance(b, dict):
            out.append(str(b.get("text", "")))
    return out


def to_openai_messages(messages: Sequence[ModelMessage]) -> list[dict[str, Any]]:
    """pydantic-ai messages as the OpenAI chat messages they stand for (what is priced and
    summarized); parts of other kinds are read as text."""
    out: list[dict[str, Any]] = []
    for msg in messages:
        if isinstance(msg, ModelRequest):
            for p in msg.parts:
                if isinstance(p, SystemPromptPart):
                    out.append({"role": "system", "content": p.content})
                elif isinstance(p, UserPromptPart):
                    out.append({"role": "user", "content": _user_content(p.content)})
                elif isinstance(p, ToolReturnPart):
                    out.append({"role": "tool", "tool_call_id": p.tool_call_id, "content": _return_content(p)})
                elif isinstance(p, RetryPromptPart) and p.tool_name:
                    out.append({"role": "tool", "tool_call_id": p.tool_call_id, "content": p.model_response()})
                else:
                    out.append({"role": "user", "content": _text(getattr(p, "content", ""))})
        elif isinstance(msg, ModelResponse):
            text = "".join(p.content for p in msg.parts if isinstance(p, TextPart))
            calls = [{"id": p.tool_call_id, "type": "function",
                      "function": {"name": p.tool_name, "arguments": p.args_as_json_str()}}
                     for p in msg.parts if isinstance(p, ToolCallPart)]
            d: dict[str, Any] = {"role": "assistant", "content": text or None}
            native = _native_parts(msg)
            if native:
                d["content"] = [*([{"type": "text", "text": text}] if text else []), *native]
            if calls:
                d["tool_calls"] = calls
            out.append(d)
    return out


class ContextFoldHistoryProcessor:
    """The processor (see the module docs). ``compactor`` gives the trigger, budget, pricing
    model and summarizer; ``compactions`` counts the compactions made, ``last`` is the last one
    (its ``notes``, ``summary``, ``fallback_used``; None before the first)."""

    def __init__(self, compactor: Compactor) -> None:
        refuse_recoverable(compactor, "the pydantic-ai history processor")
        require_budget(compactor, "the pydantic-ai history processor")
        self.compactor = compactor
        self.compactions = 0
        self.last: CompactionResult | None = None
        self._lock = threading.Lock()
        self._last: tuple[list[ModelMessage], list[ModelMessage]] | None = None

    def _continue(self, sent: list[ModelMessage]) -> list[ModelMessage]:
        with self._lock:
            if self._last is not None:
                source, out = self._last
                n = len(source)
                if len(sent) >= n and all(a is b or a == b for a, b in zip(sent, source)):
                    return out + sent[n:]
        return sent

    def __call__(self, messages: list[ModelMessage]) -> list[ModelMessage]:
        """The history to send for ``messages``."""
        sent = list(messages)
        effective = self._continue(sent)
        c = self.compactor
        if len(effective) < 3 or not isinstance(effective[0], ModelRequest):
            return effective
        dicts = to_openai_messages(effective)
        if not c.should_compact(dicts):
            return effective
        made = self._fold(effective)
        if made is None:
            return effective
        folded, result = made
        with self._lock:
            self._last = (sent, folded)
            self.last = result
            self.compactions += 1
        return folded

    def _fold(self, history: list[ModelMessage]) -> tuple[list[ModelMessage], CompactionResult] | None:
        """``history`` compacted by the Compactor and written back as pydantic-ai messages, with
        the Compactor's result; None
        where it changed nothing or could not fit the budget (logged: the history is sent as
        it is)."""
        dicts, origin = _flatten(history)
        try:
            result = self.compactor.compact(dicts)
        except CompactionError as e:
            not_compacted(e, "the pydantic-ai history processor")
            return None
        if not result.changed:
            return None
        rebuilt = _rebuild(history, dicts, origin, result)
        return None if rebuilt is None else (rebuilt, result)


def _flatten(history: Sequence[ModelMessage]) -> tuple[list[dict[str, Any]], list[tuple[int, int]]]:
    """The OpenAI chat messages of ``history`` and where each came from: (message index, part
    index), the part index -1 for a response (one message each)."""
    dicts: list[dict[str, Any]] = []
    origin: list[tuple[int, int]] = []
    for at, message in enumerate(history):
        written = to_openai_messages([message])
        dicts += written
        if isinstance(message, ModelRequest):
            origin += [(at, part) for part in range(len(written))]  # (one per part)
        else:
            origin += [(at, -1)] * len(written)
    return dicts, origin


def _text_of(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return "" if content is None else str(content)


def _same_slot(copy: dict[str, Any], source: dict[str, Any]) -> bool:
    """Whether ``copy`` (a message of a compaction's output) is an edit of ``source``: the same
    role and the same tool call ids."""
    return copy.get("role") == source.get("role") and copy.get("tool_call_id") == source.get("tool_call_id") \
        and [c.get("id") for c in copy.get("tool_calls") or ()] == [c.get("id") for c in source.get("tool_calls") or ()]


def _aligned(dicts: list[dict[str, Any]], result: CompactionResult) -> list[tuple[int, dict[str, Any] | None]] | None:
    """Each message of ``result`` as (index of the message of ``dicts`` it stands for, its edit
    or None where it is that message unchanged); the summary message of its own (or the marker
    line the last step writes where no summary fits) as (-1, it); a
    message the last step joined to the one before it (a marker line between two turns of one
    role) as (its index, None) after that one, which carries both texts. None where the output
    cannot be read so (the history is then sent whole)."""
    removed = set(result.removed)
    kept = [i for i in range(len(dicts)) if i not in removed]
    summary = result.summary or ""
    extra = len(result.messages) - len(kept)  # 1: the summary is a message of its own; -1: a join
    if extra not in (-1, 0, 1):
        return None
    out: list[tuple[int, dict[str, Any] | None]] = []
    j = 0
    for message in result.messages:
        source = dicts[kept[j]] if j < len(kept) else None
        if source is not None and message is source:
            out.append((kept[j], None))
            j += 1
        elif extra > 0 and (source is None or not _same_slot(message, source) or (
                summary and summary in _text_of(message) and summary not in _text_of(source))):
            # The summary's message, or the last step's marker line where no summary fitted.
            out.append((-1, message))
            extra = 0
        elif source is not None and _same_slot(message, source):
            out.append((kept[j], message))
            j += 1
            joined = dicts[kept[j]] if extra < 0 and j < len(kept) else None
            if joined is not None and _text_of(joined) and _text_of(joined) in _text_of(message):
                out.append((-2, joined))  # (its text is in the message before: dropped here)
                j += 1
                extra = 0
        else:
            return None
    return out if j == len(kept) and extra == 0 else None


def _edited_part(part: Any, edit: dict[str, Any]) -> Any:
    """``part`` of a request carrying the text of ``edit`` (its message in a compaction's output);
    a user prompt with images, its content list (the images kept are the same objects)."""
    content = edit.get("content")
    if isinstance(part, UserPromptPart) and isinstance(content, list) and not isinstance(part.content, str):
        return dataclasses.replace(part, content=_content_back(list(part.content), content))
    return dataclasses.replace(part, content=_text_of(edit))


def _edited_response(response: ModelResponse, edit: dict[str, Any]) -> ModelResponse:
    """``response`` carrying ``edit``'s text (in its first text part, the others dropped) and its
    calls' arguments; its other parts (thinking, built-in tools) as they were."""
    text = _text_of(edit)
    arguments = {c.get("id"): c.get("function", {}).get("arguments") for c in edit.get("tool_calls") or ()}
    parts: list[Any] = []
    wrote = False
    for p in response.parts:
        if isinstance(p, TextPart):
            if not wrote and text:
                parts.append(dataclasses.replace(p, content=text))
            wrote = True
        elif isinstance(p, ToolCallPart) and arguments.get(p.tool_call_id) is not None:
            parts.append(dataclasses.replace(p, args=arguments[p.tool_call_id]))
        else:
            parts.append(p)
    if not wrote and text:
        # (A summary merged into a response that had no text: after its thinking, which a
        # thinking model's last response must open with, before its calls.)
        lead = next((k for k, p in enumerate(parts) if not isinstance(p, ThinkingPart)), len(parts))
        parts.insert(lead, TextPart(text))
    return dataclasses.replace(response, parts=parts)


def _rebuild(history: Sequence[ModelMessage], dicts: list[dict[str, Any]], origin: list[tuple[int, int]],
             result: CompactionResult) -> list[ModelMessage] | None:
    """``result`` (a compaction of ``dicts``, ``history`` flattened) as pydantic-ai messages: a
    message left whole is the same object; the parts of consecutive requests go in one request."""
    aligned = _aligned(dicts, result)
    if aligned is None:
        log.warning("the compacted history could not be written back as pydantic-ai messages: sent as it is")
        return None
    out: list[ModelMessage] = []
    parts: list[tuple[int, int, Any, bool]] = []  # the request being gathered: (message, part, part, unchanged)

    def flush() -> None:
        if not parts:
            return
        first = parts[0][0]
        sources = {m for m, _, _, _ in parts if m >= 0}
        whole = len(sources) == 1 and first >= 0 and all(same for *_, same in parts) \
            and [p for _, p, _, _ in parts] == list(range(len(history[first].parts)))
        if whole:
            out.append(history[first])
        else:
            base = next((history[m] for m, _, _, _ in parts if m >= 0), None)
            written = [part for _, _, part, _ in parts]
            out.append(dataclasses.replace(base, parts=written) if isinstance(base, ModelRequest)
                       else ModelRequest(parts=written))
        parts.clear()

    for index, edit in aligned:
        if index == -2:
            continue  # a message joined to the one before it, which carries its text
        if index < 0:
            assert edit is not None
            if edit.get("role") == "assistant":
                flush()
                out.append(ModelResponse(parts=[TextPart(_text_of(edit))]))
            else:
                parts.append((-1, -1, UserPromptPart(_text_of(edit)), False))
            continue
        at, part = origin[index]
        message = history[at]
        if part < 0:
            flush()
            assert isinstance(message, ModelResponse)
            out.append(message if edit is None else _edited_response(message, edit))
        else:
            source = message.parts[part]
            parts.append((at, part, source if edit is None else _edited_part(source, edit), edit is None))
    flush()
    return out


def history_processor(
    *,
    trigger: Any = None,
    budget: int | None = None,
    model: str | None = None,
    context_window: int | None = None,
    summarizer: Any = None,
    instructions: str | None = None,
) -> ContextFoldHistoryProcessor:
    """A processor for ``Agent(history_processors=[...])``: compacts at ``trigger`` (tokens, a
    fraction of the window, ``("messages", n)``) down to ``budget`` (default half the trigger),
    prices with ``model``'s estimator, summarizes with ``summarizer`` (default: the extractive
    digest; an ``LLMSummarizer`` for a model-written summary)."""
    return ContextFoldHistoryProcessor(Compactor(
        model=model, trigger=trigger, budget=budget, context_window=context_window, summarizer=summarizer,
        instructions=instructions))
