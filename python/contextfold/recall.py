"""The recall tool: how a model asks for what a recoverable compaction folded away.

The core declares the tool in each wire format (``recall_tool``), reads the model's calls to it
with the same readers as any history (``recall_calls``) and writes the answer in the calling
message's own format; this module pages the stored text and says where the page sits in it.

An answer is one header line and the page::

    [contextfold_recall id=cf0123456789ab: characters 0-8000 of 20000; more: offset=8000]
    <the page, byte-exact>

A fold that held images (a screenshot folded alone, or a tool result's text beside its
screenshots) is never paged as its base64: its text is paged as above up to the first image
(the last text page's header names the image the next offset gives), and an offset inside an
image's characters gives that image, one per answer, as an image where the format's tool result
can carry one (``Compactor.answer``)::

    [contextfold_recall id=cf0123456789ab: image 1 of 1, 1280x800 image/png, characters 0-90000 of 90000; end]

A folded document (a PDF a tool returned or a user sent) is given back the same way, as a
document where the format's tool result can carry one (Anthropic ``document`` blocks, Bedrock
DocumentBlocks, Responses ``input_file``), else in words (its pages and bytes)::

    [contextfold_recall id=cf0123456789ab: document 1 of 1, 3 pages, 1,188 bytes application/pdf, characters 28-1649 of 1649; end]
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import logging
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from contextfold import _core, json_text
from contextfold.content_store import ContentStore, CorruptEntryError
from contextfold.prune import is_langchain_message

log = logging.getLogger("contextfold.recall")

__all__ = ["ANSWER_ENVELOPE", "RECALL_TOOL", "FoldImage", "RecallCall", "answer_message", "declares_recall",
           "fold_images", "image_after", "image_answer", "image_at", "image_due", "image_header", "malformed_text", "names_folded_image",
           "page_header", "page_tokens", "read_calls", "recall_calls", "recall_tool", "sample_call", "span_text",
           "stored_images", "stored_text"]

#: The tool's name in every format.
RECALL_TOOL: str = _core.RECALL_TOOL

#: A page holds at most this many tokens unless the Compactor's budget asks for less.
DEFAULT_PAGE_TOKENS = 2_000

#: The largest page bound the core takes (tokens, a u32); a larger one means "no bound".
PAGE_BOUND_LIMIT = 2**32 - 1

#: The smallest default page (tokens): a tiny budget still pages through in steps of it.
MIN_PAGE_TOKENS = 64

#: Tokens an answer message takes besides its page (the header line, the result's envelope):
#: what the Compactor's ``answer`` and the proxy's rounds keep beside a page when they size it.
ANSWER_ENVELOPE = 60


def page_tokens(budget: int) -> int:
    """The default page of a recall answer for a history compacted to ``budget`` tokens: a
    tenth of it, within [``MIN_PAGE_TOKENS``, ``DEFAULT_PAGE_TOKENS``] (tokens)."""
    return max(MIN_PAGE_TOKENS, min(DEFAULT_PAGE_TOKENS, budget // 10))


def sample_call(format: str, fold_id: str = "cf0123456789ab", offset: int = 999_999) -> dict[str, Any]:
    """A model's call of the recall tool in ``format`` (``"chat"``, ``"responses"``,
    ``"anthropic"``, ``"gemini"``, ``"bedrock"``), as its API writes it: what a recall round's
    call is priced as (the defaults: a fold id and a six-digit offset, the longest call a
    page-through writes)."""
    args = {"id": fold_id, "offset": offset}
    call_id = "call_" + "0" * 24  # the length of OpenAI's and Anthropic's call ids
    if format == "chat":
        return {"role": "assistant", "content": None, "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": RECALL_TOOL, "arguments": json.dumps(args)}}]}
    if format == "responses":
        return {"type": "function_call", "call_id": call_id, "name": RECALL_TOOL, "arguments": json.dumps(args)}
    if format == "anthropic":
        return {"role": "assistant", "content": [{"type": "tool_use", "id": call_id, "name": RECALL_TOOL, "input": args}]}
    if format == "gemini":
        return {"role": "model", "parts": [{"functionCall": {"name": RECALL_TOOL, "args": args}}]}
    if format == "bedrock":
        return {"role": "assistant", "content": [{"toolUse": {"toolUseId": call_id, "name": RECALL_TOOL, "input": args}}]}
    raise ValueError(f"unknown wire format {format!r}")


@dataclass(frozen=True, slots=True)
class RecallCall:
    """One call of the recall tool: the provider's call id, the fold id asked for, the
    character offset to start from and the page bound the model asked for (tokens, or None)."""

    call_id: str
    fold_id: str
    offset: int
    max_tokens: int | None


def recall_tool(format: str) -> dict[str, Any]:
    """The recall tool's declaration for ``format``'s tool list (``"chat"``, ``"responses"``,
    ``"anthropic"``, ``"gemini"``, ``"bedrock"``), as a dict to append to your tools."""
    return json.loads(_core.recall_tool(format=format))  # type: ignore[arg-type,no-any-return]


def declares_recall(tools: Any) -> bool:
    """Whether ``tools`` (a tool list in any format, dicts or SDK objects) already declares the
    recall tool: a caller who appended ``recall_tool(...)`` to their own list must not send it
    twice (providers reject duplicate tool names)."""
    for tool in tools or ():
        d = _plain(tool)
        if not isinstance(d, dict):
            continue
        names = [d.get("name")]
        for key in ("function", "toolSpec"):
            if isinstance(d.get(key), dict):
                names.append(d[key].get("name"))
        for key in ("functionDeclarations", "function_declarations"):
            names.extend(f.get("name") for f in d.get(key) or () if isinstance(f, dict))
        if RECALL_TOOL in names:
            return True
    return False


#: Characters of a value the model wrote that an answer repeats back (an id, a malformed
#: argument): enough to recognise it, never a page of its own.
ECHO_CHARS = 64


def _shown(text: str) -> str:
    """``text`` (a value the model wrote) as an answer repeats it: clipped to ``ECHO_CHARS``
    characters, lone surrogates escaped (a message text must encode as UTF-8)."""
    if len(text) > ECHO_CHARS:
        text = f"{text[:ECHO_CHARS]}… ({len(text)} characters)"
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _int(value: Any, name: str, default: int | None, minimum: int = 0) -> int | None:
    if value is None:
        return default
    # An integer, also as a model may write one: `8000.0`, or the digits in a string. `1.5` or
    # `true` is a call written wrong: answered so, never read as some other page.
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    elif isinstance(value, str) and value.strip().isdecimal():
        with contextlib.suppress(ValueError):  # (past int()'s digit limit: written wrong)
            value = int(value.strip())
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"{RECALL_TOOL}: {name} must be an integer, got {_shown(repr(value))}")
    n = value
    if n < minimum:
        raise ValueError(f"{RECALL_TOOL}: {name} must be >= {minimum}, got {n}")
    # (Past any text's length: the core takes a machine-sized offset.)
    return min(n, sys.maxsize)


def _read_call(call_id: str, arguments: str) -> RecallCall:
    """One call's arguments read; ValueError (naming the call) when they are not an object with a
    string ``id`` and integer ``offset`` / ``max_tokens``."""
    try:
        args = json.loads(arguments) if arguments else {}
    except (json.JSONDecodeError, RecursionError) as e:
        raise ValueError(f"{RECALL_TOOL} call {_shown(repr(call_id))}: arguments are not JSON: {_shown(str(e))}") from None
    except ValueError as e:
        # (JSON Python will not read: a number past int()'s digit limit. Its own text named
        # neither the call nor what to do.)
        raise ValueError(f"{RECALL_TOOL} call {_shown(repr(call_id))}: arguments cannot be read: "
                         f"{_shown(str(e))}") from None
    if not isinstance(args, dict) or not isinstance(args.get("id"), str):
        raise ValueError(f"{RECALL_TOOL} call {_shown(repr(call_id))}: arguments must be an object with a string 'id'")
    offset = _int(args.get("offset"), "offset", 0)
    # (The tool declares max_tokens' minimum as 1: a 0 was read as no bound at all.)
    return RecallCall(call_id, args["id"], offset or 0, _int(args.get("max_tokens"), "max_tokens", None, minimum=1))


def recall_calls(message: Any) -> list[RecallCall]:
    """The recall calls in ``message`` (an assistant message of any format, a Responses
    ``function_call`` item), read by the core's readers. Arguments that are not an object with
    a string ``id`` raise ValueError."""
    return [_read_call(call_id, arguments) for call_id, arguments in _core.recall_calls(message)]


def read_calls(message: Any) -> list[RecallCall | tuple[str, str]]:
    """As ``recall_calls``, a call whose arguments are malformed read as ``(call_id, why)``
    instead of raising: the model wrote them, so the model is answered (``malformed_text``)."""
    out: list[RecallCall | tuple[str, str]] = []
    for call_id, arguments in _core.recall_calls(message):
        try:
            out.append(_read_call(call_id, arguments))
        except ValueError as e:
            out.append((call_id, str(e)))
    return out


def malformed_text(why: str) -> str:
    """The answer to a recall call whose arguments could not be read: what was wrong and the
    shape to call it with, so the model can call again."""
    return (f"[{why}; call {RECALL_TOOL} again with arguments like "
            '{"id": "cf0123456789ab", "offset": 0}]')


def stored_text(store: ContentStore, call: RecallCall) -> tuple[str | None, str | None]:
    """``(the stored original of call's fold, None)``, or ``(None, the answer saying why not)``
    when it cannot be read (no fold id, corrupt, the store down, not found)."""
    try:
        text = store.get(call.fold_id) if _is_id(call.fold_id) else None
    except CorruptEntryError as e:
        # (The model gets an answer it can act on; the caller's log gets the file or key.)
        log.warning("%s", e)
        return None, f"[{RECALL_TOOL} id={_shown(call.fold_id)}: its stored content cannot be read; continue without it]"
    except Exception as e:  # noqa: BLE001 - any store the caller gave: a Redis that is down, a lost mount
        # (Raised, it ended the agent's loop over one page the model asked for; the caller's log
        # gets the error, the model an answer it can act on.)
        log.warning("content store %r failed reading %s: %s: %s", store, call.fold_id, type(e).__name__, e)
        return None, (f"[{RECALL_TOOL} id={_shown(call.fold_id)}: the store holding it cannot be reached now; "
                      "continue without it, or call again later]")
    if text is None:
        return None, (f"[{RECALL_TOOL} id={_shown(call.fold_id)}: not found (never folded here, or expired from "
                      "the store); continue without it]")
    return text, None


def answer_text(store: ContentStore, call: RecallCall, *, max_tokens: int, provider: str, model: str | None,
                text: str | None = None, images: Sequence[FoldImage] = ()) -> str:
    """The answer's text: a header line, then the page of the stored text (at most
    ``max_tokens`` estimated tokens, never less than one character). ``text``: the stored
    original when already read; ``images``: the images it holds (``fold_images``), whose
    characters are never paged: the page stops where the first begins, and the header of the
    page that reaches it names it as what the next offset gives."""
    if text is None:
        text, said = stored_text(store, call)
        if text is None:
            return said or ""
    bound = max(1, min(max_tokens, call.max_tokens or max_tokens, PAGE_BOUND_LIMIT))
    body = text[:images[0].start] if images else text
    page, end, paged = _core.recall_page(body, offset=call.offset, max_tokens=bound, provider=provider,  # type: ignore[arg-type]
                                           model=model)
    note = f" ({images[0].said(1, len(images))})" if images and end >= paged else ""
    total = len(text) if images else paged
    return page_header(call.fold_id, min(call.offset, paged), end, total, note) + page


def page_header(fold_id: str, start: int, end: int, total: int, note: str = "") -> str:
    """The line that opens an answer: which characters of the original the page holds, and
    the ``offset`` of the next page (or ``end``); ``note``: what that offset gives, said after it."""
    more = f"; more: offset={end}{note}" if end < total else "; end"
    return f"[{RECALL_TOOL} id={fold_id}: characters {start}-{end} of {total}{more}]\n"


@dataclass(frozen=True, slots=True)
class FoldImage:
    """One image a stored original holds (``fold_images``): ``kind`` ``"base64"`` (``source``
    its base64 payload), ``"url"`` or ``"file"`` (a file id or storage URI); its media type when
    known, its pixel size when its header says it (width, height in pixels), and the characters
    of the original it spans (``start``, ``end``: a recall offset in them gives it)."""

    kind: str
    source: str
    media_type: str | None
    width: int | None
    height: int | None
    start: int
    end: int
    #: A document's pages, where its bytes say them (kind ``"document"``: its base64 payload).
    pages: int | None = None

    @property
    def noun(self) -> str:
        """``"document"`` for a document (a PDF a tool returned), else ``"image"``."""
        return "document" if self.kind == "document" else "image"

    def said(self, k: int, n: int) -> str:
        """``"image 1 of 2, 1280x800 image/png"`` (``"document 1 of 1, 3 pages, 1,234 bytes
        application/pdf"``): the image or document in words, never its base64 (the ``k``-th of
        ``n``)."""
        what = f"{self.noun} {k} of {n}"
        if self.kind == "document":
            if self.pages:
                what += f", {self.pages:,} page{'s' if self.pages != 1 else ''}"
            what += f", {_decoded_bytes(self.source):,} bytes"
        if self.width and self.height:
            what += f", {self.width}x{self.height}"
        if self.media_type:
            what += f" {self.media_type}"
        if self.kind not in ("base64", "document"):
            what += f" at {_shown(self.source)}"
        return what

    def payload(self) -> tuple[str, str, str | None]:
        """The image as the core's answer writer takes it: ``(kind, source, media type)``."""
        return self.kind, self.source, self.media_type


def _decoded_bytes(b64: str) -> int:
    """The bytes base64 text ``b64`` decodes to (its padding counted off)."""
    return len(b64) * 3 // 4 - (len(b64) - len(b64.rstrip("=")))


def fold_images(text: str, *, known_image: bool = False) -> list[FoldImage]:
    """The images a stored original holds, in order (empty: none; see
    ``contextfold._core.recall_images``). ``known_image``: the fold is known to be an image
    (``names_folded_image``), so a lone URL or file id is one."""
    read = _core.recall_images(text, known_image=known_image)
    return [] if read is None else [FoldImage(*img) for img in read[1]]


def stored_images(stored: str, fold_id: str, history: Sequence[Any] | None = None) -> list[FoldImage]:
    """The images the stored original ``stored`` of fold ``fold_id`` holds (``fold_images``). A
    lone URL or file id is an image's only where ``history`` holds its ``[folded image``
    placeholder (a tool's output can be a bare URL): the history is read for it only then."""
    images = fold_images(stored)
    if not images and history and len(stored) <= 4_096 and not any(c.isspace() for c in stored):
        images = fold_images(stored, known_image=names_folded_image(history, fold_id))
    return images


def names_folded_image(history: Sequence[Any] | None, fold_id: str) -> bool:
    """Whether ``history`` holds the placeholder of an image folded under ``fold_id``
    (``[folded image, ~N tokens; id=...``): what tells a folded image given by URL or file id
    from a tool's output that was a bare URL."""
    if not history or not _is_id(fold_id):
        return False
    said = re.compile(r"\[folded image, ~[\d,]+ tokens; id=" + fold_id)
    for m in history:
        try:
            text = json.dumps(_plain(m), ensure_ascii=False, default=lambda _: "")
        except (TypeError, ValueError):
            continue
        if said.search(text):
            return True
    return False


def image_header(fold_id: str, image: FoldImage, k: int, n: int, total: int, following: FoldImage | None) -> str:
    """The line that opens an answer giving image ``k`` of ``n`` (``image``) of a fold whose
    original is ``total`` characters: the image in words, its characters, and the offset of the
    next image (``following``) or ``end``."""
    more = f"; more: offset={following.start} ({following.said(k + 1, n)})" if following is not None else "; end"
    return f"[{RECALL_TOOL} id={fold_id}: {image.said(k, n)}, characters {image.start}-{image.end} of {total}{more}]"


def image_at(fold: RecallCall, images: Sequence[FoldImage]) -> tuple[FoldImage, int]:
    """The image whose characters hold ``fold.offset`` (past the last: the last), with its
    place among ``images`` counted from 1."""
    k = max(j for j, img in enumerate(images) if img.start <= fold.offset or j == 0)
    return images[k], k + 1


def image_after(fold: RecallCall, images: Sequence[FoldImage]) -> FoldImage | None:
    """The image after the one ``fold.offset`` gives (``image_at``), if any."""
    _, k = image_at(fold, images)
    return images[k] if k < len(images) else None


def image_due(fold: RecallCall, images: Sequence[FoldImage]) -> bool:
    """Whether ``fold``'s offset asks for one of ``images`` (it is past the text before them):
    answered by ``image_answer``, never paged as base64."""
    return bool(images) and fold.offset >= images[0].start


def answer_message(call: Any, call_id: str, text: str) -> Any:
    """The message answering ``call_id`` of ``call`` with ``text``, in the call's own format: for
    a LangChain ``AIMessage`` (a history compacted as LangChain messages), a ``ToolMessage``."""
    if is_langchain_message(call):
        from langchain_core.messages import ToolMessage

        return ToolMessage(content=text, tool_call_id=call_id, name=RECALL_TOOL)
    return json.loads(_core.recall_result(call, call_id=call_id, text=text))


def image_answer(call: Any, fold: RecallCall, text: str, images: Sequence[FoldImage], target: int, *,
                 provider: str, model: str | None) -> Any:
    """The answer to recall ``call`` giving the image whose characters of the stored original
    ``text`` hold ``fold.offset`` (``image_at``), as an image where the call's format can carry
    one in a tool result and its price (tokens, by its pixels as ``estimate`` prices it) fits
    ``target`` (the tokens the answer may take, as a page's); else in words: what it is, and why
    it is not given. The message as plain data in the call's format (Bedrock's image as raw
    bytes); what ``Compactor.answer`` and the proxy's recall rounds both answer with."""
    image, k = image_at(fold, images)
    header = image_header(fold.fold_id, image, k, len(images), len(text), image_after(fold, images))

    def in_words(said: str) -> Any:
        return answer_message(call, fold.call_id, f"{header}\n{said}")

    carried = _core.recall_image_result(call, call_id=fold.call_id, text=header, images=[image.payload()])
    noun = image.noun
    if carried is None:
        # (Which it is: no image at all, or none given by this source; probed with an empty one.)
        text_only = _core.recall_image_result(
            call, call_id=fold.call_id, text=header, images=[("base64", "", "image/png")]) is None
        if text_only:
            why = "carries text only"
        elif noun == "document":
            why = f"takes no {image.media_type or 'such'} document"
        else:
            why = "takes no image given by URL or file id"
        return in_words(f"The {noun} is not given: a tool result in this API {why}.")
    message = json.loads(carried)
    kw: dict[str, Any] = dict(provider=provider, model=model)
    tokens = int(_core.estimate([message], **kw))
    if tokens <= target:
        return with_bytes(message)
    plain = json.loads(_core.recall_result(call, call_id=fold.call_id, text=header))
    price = max(1, tokens - int(_core.estimate([plain], **kw)))
    room = max(0, target - (tokens - price))
    return in_words(f"The {noun} is not given: it needs ~{price:,} tokens where this answer's room holds ~{room:,}.")


def with_bytes(message: Any) -> Any:
    """A Bedrock answer with its images' and documents' base64 (as the core writes them, JSON's
    form) made the raw bytes boto3 takes; any other message as it is."""
    content = message.get("content") if isinstance(message, dict) else None
    for block in content if isinstance(content, list) else ():
        result = block.get("toolResult") if isinstance(block, dict) else None
        for part in result.get("content", ()) if isinstance(result, dict) else ():
            media = (part.get("image") or part.get("document")) if isinstance(part, dict) else None
            source = media.get("source") if isinstance(media, dict) else None
            if isinstance(source, dict) and isinstance(source.get("bytes"), str):
                data = source["bytes"]
                try:
                    source["bytes"] = base64.b64decode(data, validate=True)
                except (binascii.Error, ValueError):
                    source["bytes"] = base64.urlsafe_b64decode(data + "=" * (-len(data) % 4))
    return message


def _is_id(s: str) -> bool:
    return len(s) == 14 and s.startswith("cf") and all(c in "0123456789abcdef" for c in s[2:])


#: The fields of a LangChain message that the model is shown; the others (``additional_kwargs``,
#: ``response_metadata``, ``id``, ``usage_metadata``, ``invalid_tool_calls``) are the framework's
#: bookkeeping, which a recalled span of 8 messages carried as 17% more text to read.
_LANGCHAIN_FIELDS = ("type", "name", "content", "tool_calls", "tool_call_id")


def _langchain_words(obj: Any) -> dict[str, Any] | None:
    """A LangChain message's words as plain data (None for anything else): its type, content,
    calls (name, arguments, id) and the id of the call it answers."""
    if not (hasattr(obj, "additional_kwargs") and hasattr(obj, "response_metadata")):
        return None
    dump = getattr(obj, "model_dump", None)
    if not callable(dump):
        return None
    d = dump()
    if not isinstance(d, dict):
        return None
    out = {k: d[k] for k in _LANGCHAIN_FIELDS if d.get(k) not in (None, [], "")}
    if "content" not in out:
        out["content"] = d.get("content", "")
    if "tool_calls" in out:
        out["tool_calls"] = [{k: c.get(k) for k in ("name", "args", "id")} if isinstance(c, dict) else c
                             for c in out["tool_calls"]]
    return out


def _plain(obj: Any) -> Any:
    """A message as plain JSON data (SDK objects through their own dump; a LangChain message as
    its words, ``_langchain_words``)."""
    if isinstance(obj, dict | list | str | int | float | bool) or obj is None:
        return obj
    if (words := _langchain_words(obj)) is not None:
        return words
    for dump in ("model_dump", "dict", "to_dict"):
        fn = getattr(obj, dump, None)
        if callable(fn):
            return fn()
    return repr(obj)


def span_text(messages: Sequence[Any]) -> str:
    """The folded messages as the recall tool gives them back: a JSON list of the messages as
    the history held them (bytes as base64-free ``repr`` when not JSON)."""
    plain = [_plain(m) for m in messages]
    text = json_text.dumps(plain, ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # A lone surrogate (text cut mid-pair upstream) has no UTF-8 form to hash or store:
        # escaped, the JSON still reads back to the same strings.
        text = json_text.dumps(plain, ensure_ascii=True)
    return text
