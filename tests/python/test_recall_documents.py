"""A folded document (a PDF a tool returned, or one a user sent) is recoverable: its bytes are
kept with the fold, so ``recall(id)`` gives the original back exactly, and ``answer`` gives the
document back as one where the format's tool result can carry it (an Anthropic ``tool_result``
``document`` block, a Bedrock ``toolResult`` DocumentBlock of raw bytes, a Responses
``function_call_output`` list with ``input_file``), elsewhere (chat, Gemini) a short text
saying what it is (pages, bytes) and why it is not given. Before, the parsed part held no
payload: the store kept the result's text alone, and the PDF was lost for good."""

from __future__ import annotations

import base64
import json
import re
from typing import Any

import pytest

import contextfold as cf
from compaction_shapes import PROVIDER
from wire_shapes import check_converse_message
from test_recall import recall_call
from test_recall_images import _call, _said, _text, _text_of, within_budget
from test_repair import accepted

from contextfold.content_store import MemoryContentStore


def tiny_pdf(pages: int, tag: str) -> bytes:
    """A real PDF of ``pages`` pages, each a line of text naming ``tag`` (with a correct xref
    table: a reader opens it), ~600 bytes a page."""
    objs = [b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [" + b" ".join(b"%d 0 R" % (4 + 2 * k) for k in range(pages))
            + b"] /Count %d >>" % pages,
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    for k in range(pages):
        text = f"BT /F1 18 Tf 72 720 Td (Report {tag}, page {k + 1}: revenue {1000 + k} EUR) Tj ET".encode()
        objs.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %d 0 R "
                    b"/Resources << /Font << /F1 3 0 R >> >> >>" % (5 + 2 * k))
        objs.append(b"<< /Length %d >>\nstream\n" % len(text) + text + b"\nendstream")
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for n, body in enumerate(objs, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % n + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, xref)
    return bytes(out)


#: One-page reports, one a step (each differs by its tag): one fits a 2,000-token answer at
#: Anthropic's ~1,600 tokens a page (as `media_tokens` prices a page).
PAGES = 1
PDFS = [tiny_pdf(PAGES, f"Q{k}") for k in range(8)]
B64 = [base64.b64encode(p).decode() for p in PDFS]
#: The tool's log beside each report (~300 tokens): old output the budget folds with it.
LINE = "\n".join(f"fetched part {n} of the quarterly report: 200 OK, {900 + n} bytes" for n in range(20))


def _document(fmt: str, k: int) -> dict[str, Any]:
    data = B64[k]
    return {"chat": {"type": "file", "file": {"filename": f"q{k}.pdf", "file_data": "data:application/pdf;base64," + data}},
            "responses": {"type": "input_file", "filename": f"q{k}.pdf", "file_data": "data:application/pdf;base64," + data},
            "anthropic": {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": data}},
            "gemini": {"inlineData": {"mimeType": "application/pdf", "data": data}},
            "bedrock": {"document": {"format": "pdf", "name": f"q{k}", "source": {"bytes": PDFS[k]}}}}[fmt]


def _result_with_pdf(fmt: str, k: int) -> list[dict[str, Any]]:
    """The tool's result holding its text and the PDF where the format's result can hold one;
    else (chat, Gemini) the text result and a user turn (Gemini: the same turn) handing the PDF
    over."""
    if fmt == "anthropic":
        return [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{k}", "content": [
            {"type": "text", "text": LINE}, _document(fmt, k)]}]}]
    if fmt == "bedrock":
        return [{"role": "user", "content": [{"toolResult": {"toolUseId": f"tu_{k}", "content": [
            {"text": LINE}, _document(fmt, k)]}}]}]
    if fmt == "responses":
        return [{"type": "function_call_output", "call_id": f"call_{k}", "output": [
            {"type": "input_text", "text": LINE}, _document(fmt, k)]}]
    if fmt == "chat":
        return [{"role": "tool", "tool_call_id": f"call_{k}", "content": LINE},
                {"role": "user", "content": [_text(fmt, f"Report {k} attached."), _document(fmt, k)]}]
    # (Gemini: the function's response and the PDF in one user turn, as two would not alternate.)
    return [{"role": "user", "parts": [{"functionResponse": {"name": "computer", "response": {"output": LINE}}},
                                       {"text": f"Report {k} attached."}, _document(fmt, k)]}]


def reports(fmt: str) -> list[dict[str, Any]]:
    h = [_said(fmt, "user", "Compare the quarterly reports.")]
    for k in range(len(PDFS)):
        h += [_call(fmt, k), *_result_with_pdf(fmt, k)]
        if fmt in ("chat", "responses") or k == len(PDFS) - 1:
            # (Elsewhere the next call follows the result: turns alternate.)
            h.append(_said(fmt, "assistant", f"Report {k} read."))
    h.append(_said(fmt, "user", "Which quarter had the most revenue?"))
    return h


FOLDED = re.compile(r"\[folded (tool output and 1 document|document)[^\]]*?id=(cf[0-9a-f]{12})")
FORMATS = ["anthropic", "bedrock", "responses", "chat", "gemini"]
CARRIES = {"anthropic", "bedrock", "responses"}
#: The answer's room (tokens) a test compacts for: one page of a PDF and the header fit in it
#: (Anthropic and Bedrock price a page ~1,600 tokens, OpenAI ~100), and it stays under the 25%
#: of the budget a recall round may keep.
ROOM = {"anthropic": 2_000, "bedrock": 2_000, "responses": 400, "chat": 400, "gemini": 400}


def compacted(fmt: str, recall_max_tokens: int | None) -> tuple[cf.Compactor, Any, str, int]:
    """``reports(fmt)`` compacted recoverably to 3/4 of its size, so old PDFs are folded: the
    Compactor, its result, the first folded PDF's fold id and the step it was."""
    h = reports(fmt)
    c = cf.Compactor(budget=cf.estimate(h, provider=PROVIDER[fmt]) * 3 // 4, provider=PROVIDER[fmt], wire_format=fmt,
                     strategy="mask", recoverable=True, store=MemoryContentStore(),
                     recall_max_tokens=recall_max_tokens)
    r = c.compact(h)
    sent = json.dumps(r.messages, default=lambda b: base64.b64encode(b).decode())
    folded = FOLDED.findall(sent)
    assert folded, sent[:2_000]
    fold_id = folded[0][1]
    stored = c.recall(fold_id)
    k = next((k for k, d in enumerate(B64) if d in stored), None)
    assert k is not None, f"recall({fold_id}) holds no PDF: {stored[:300]!r}"
    return c, r, fold_id, k


def _documents(fmt: str, answer: dict[str, Any]) -> list[bytes]:
    """The documents an answer carries, as bytes, read as each API reads its tool result."""
    if fmt == "anthropic":
        (block,) = answer["content"]
        content = block["content"] if isinstance(block["content"], list) else []
        return [base64.b64decode(b["source"]["data"]) for b in content if b["type"] == "document"]
    if fmt == "bedrock":
        (block,) = answer["content"]
        return [b["document"]["source"]["bytes"] for b in block["toolResult"]["content"] if "document" in b]
    if fmt == "responses":
        output = answer["output"] if isinstance(answer["output"], list) else []
        return [base64.b64decode(i["file_data"].removeprefix("data:application/pdf;base64,"))
                for i in output if i["type"] == "input_file"]
    return []


def sdk_accepts(fmt: str, answer: dict[str, Any]) -> None:
    """The answer validated by the installed SDK's own types (Bedrock: botocore's model of the
    Converse request, where botocore is installed)."""
    from pydantic import TypeAdapter

    if fmt == "chat":
        from openai.types.chat import ChatCompletionToolMessageParam
        TypeAdapter(ChatCompletionToolMessageParam).validate_python(answer)
    elif fmt == "responses":
        from openai.types.responses.response_input_file_content_param import ResponseInputFileContentParam
        from openai.types.responses.response_input_item_param import FunctionCallOutput
        TypeAdapter(FunctionCallOutput).validate_python(answer)
        TypeAdapter(ResponseInputFileContentParam).validate_python(answer["output"][1])
        assert set(answer["output"][1]) <= set(ResponseInputFileContentParam.__annotations__)
    elif fmt == "anthropic":
        from anthropic.types import DocumentBlockParam, MessageParam, ToolResultBlockParam
        TypeAdapter(MessageParam).validate_python(answer)
        (block,) = answer["content"]
        TypeAdapter(ToolResultBlockParam).validate_python(block)
        TypeAdapter(DocumentBlockParam).validate_python(block["content"][1])
    elif fmt == "gemini":
        from google.genai import types
        types.Content.model_validate(answer)
    else:
        (block,) = answer["content"]
        doc = block["toolResult"]["content"][1]["document"]
        assert doc["format"] == "pdf" and isinstance(doc["source"]["bytes"], bytes)
        assert re.fullmatch(r"[A-Za-z0-9\-\(\)\[\]]+( [A-Za-z0-9\-\(\)\[\]]+)*", doc["name"])
        check_converse_message(answer)


@pytest.mark.parametrize("fmt", FORMATS)
def test_recall_gives_a_folded_pdf_back_byte_exact(fmt):
    c, r, fold_id, k = compacted(fmt, recall_max_tokens=ROOM[fmt])
    stored = c.recall(fold_id)
    url = "data:application/pdf;base64," + B64[k]
    if fmt in CARRIES:
        # Folded with its result's text: the text, then the PDF under its line.
        assert stored == f"{LINE}\n[document, application/pdf, base64]\n{B64[k]}" or stored == (
            f"{LINE}\n[document, application/pdf, base64]\n{url}"), stored[:200]
    else:
        # Folded alone (the user turn's file): its payload as the part sent it.
        assert stored in (url, B64[k]), stored[:200]
    pdf = base64.b64decode(stored.rsplit("\n", 1)[-1].removeprefix("data:application/pdf;base64,"))
    assert pdf == PDFS[k]


@pytest.mark.parametrize("fmt", FORMATS)
def test_answer_gives_a_folded_pdf_back_as_a_document_where_the_format_carries_one(fmt):
    c, r, fold_id, k = compacted(fmt, recall_max_tokens=ROOM[fmt])
    stored = c.recall(fold_id)
    start = stored.find("\n[document,") + 1 if "\n[document," in stored else 0
    call = recall_call(fmt, fold_id, start, 1)
    answer = c.answer(call, history=[*r.messages, call])
    after = [*r.messages, call, answer]
    assert accepted(after, fmt, None) == []
    sdk_accepts(fmt, answer)
    within_budget(c, r, fmt, after)
    said = _text_of(fmt, answer)
    assert f"id={fold_id}: document 1 of 1, {PAGES} page{'s' if PAGES > 1 else ''}, {len(PDFS[k]):,} bytes application/pdf" in said, said[:400]
    if fmt in CARRIES:
        assert _documents(fmt, answer) == [PDFS[k]], "the PDF, byte-exact"
    else:
        assert B64[k][:64] not in said and len(said) < 700, said[:700]
        why = "carries text only" if fmt == "chat" else "takes no application/pdf document"
        assert f"The document is not given: a tool result in this API {why}." in said


@pytest.mark.parametrize("fmt", sorted(CARRIES))
def test_a_pdf_the_answers_room_cannot_hold_is_said_with_its_price(fmt):
    # (Room for a page's header and a few words: no PDF page fits.)
    c, r, fold_id, k = compacted(fmt, recall_max_tokens=20)
    stored = c.recall(fold_id)
    call = recall_call(fmt, fold_id, stored.find("\n[document,") + 1, 1)
    answer = c.answer(call, history=[*r.messages, call])
    after = [*r.messages, call, answer]
    assert accepted(after, fmt, None) == []
    said = _text_of(fmt, answer)
    assert _documents(fmt, answer) == [] and B64[k][:64] not in said
    m = re.search(r"The document is not given: it needs ~([\d,]+) tokens where this answer's room holds ~([\d,]+)", said)
    assert m, said[:700]
    need, room = (int(g.replace(",", "")) for g in m.groups())
    assert need > room and need >= 100 * PAGES, (need, room)


@pytest.mark.parametrize("api", ["anthropic", "chat"])
def test_the_proxys_recall_round_gives_a_folded_pdf_back_as_a_document_not_its_base64(api):
    # contextfold serve --recall answers with the same writer as Compactor.answer.
    pytest.importorskip("starlette", reason="contextfold serve needs its extra: pip install '.[proxy]'")
    from contextfold.serve.recall_loop import RecallRoute, recall_round

    stored = f"{LINE}\n[document, application/pdf, base64]\n{B64[0]}"
    store = MemoryContentStore()
    fold = cf._core.fold_id(stored)
    store.put(fold, stored)
    offset = stored.index("\n[document,") + 1
    args = {"id": fold, "offset": offset}
    if api == "anthropic":
        response: dict[str, Any] = {"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "contextfold_recall", "input": args}]}
    else:
        response = {"choices": [{"index": 0, "message": {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "contextfold_recall",
                                                              "arguments": json.dumps(args)}}]}}]}
    provider = "anthropic" if api == "anthropic" else "openai"
    got = recall_round(api, provider, response, store, RecallRoute(history_end=0, page_tokens=4_000, room=20_000,
                                                                   model=None), rounds=0)
    assert got is not None and got.paged
    answer = got.messages[-1]
    if api == "anthropic":
        assert _documents("anthropic", answer) == [PDFS[0]]
        sdk_accepts("anthropic", answer)
    else:
        assert f"document 1 of 1, 1 page, {len(PDFS[0]):,} bytes application/pdf" in answer["content"]
        assert "carries text only" in answer["content"] and B64[0][:64] not in answer["content"]
