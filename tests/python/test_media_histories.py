"""Multimodal agent histories as real loops send them: a computer-use loop on the Responses API
(each ``computer_call`` answered by a ``computer_call_output`` screenshot), tools that return a
PDF (an Anthropic ``document`` in a ``tool_result``, a Bedrock ``document`` of raw bytes in a
``toolResult``, a chat ``file`` part, a Responses ``input_file``, Gemini ``inlineData`` beside
its ``functionResponse``), and audio or documents the user sent. Old media is masked and said
by what it was; the request stays one its API takes; the caller's history is never changed."""

from __future__ import annotations

import base64
import copy
import json
import re
import struct
from typing import Any

import pytest

import contextfold as cf
from compaction_shapes import shape_problems
from test_ollama_native import png_base64

PROVIDER = {"chat": "openai", "responses": "openai", "anthropic": "anthropic", "gemini": "gemini",
            "bedrock": "anthropic"}
# 1280x800 screenshots, each of its own bytes (a real one is 100 KB+ of base64).
SHOTS = [png_base64(1280, 800, 100_000 + k) for k in range(6)]
# A three-page PDF of 200 KB.
PDF_BYTES = b"%PDF-1.4\n" + b"1 0 obj<</Type/Page>>endobj\n" * 3 + b"0" * 200_000 + b"\n%%EOF"
PDF = base64.b64encode(PDF_BYTES).decode()


def enc(o: Any) -> str:
    return json.dumps(o, default=lambda b: base64.b64encode(b).decode())


def problems(messages: list[Any], fmt: str) -> list[str]:
    _, failures = cf._core.compaction_verify(messages, cf._core.PricedRequest(format=fmt, provider=PROVIDER[fmt]))
    return shape_problems(messages, fmt) + [d for k, _, d in failures if k != "over_budget"]


def computer_loop(steps: int = 6) -> list[dict[str, Any]]:
    """A Responses computer-use loop: each click answered by the screen it left."""
    h: list[dict[str, Any]] = [{"role": "user", "content": "Book the cheapest flight to Oslo on the site. Never pay."}]
    for k in range(steps):
        h.append({"type": "computer_call", "id": f"cu_{k}", "call_id": f"call_{k}",
                  "action": {"type": "click", "x": 100 + k, "y": 200, "button": "left"},
                  "pending_safety_checks": [], "status": "completed"})
        h.append({"type": "computer_call_output", "call_id": f"call_{k}",
                  "output": {"type": "computer_screenshot", "image_url": "data:image/png;base64," + SHOTS[k]}})
        h.append({"role": "assistant", "content": f"Step {k} done."})
    h.append({"role": "user", "content": "Go on."})
    return h


def sdk_accepts(items: list[Any]) -> None:
    pydantic = pytest.importorskip("pydantic")
    responses = pytest.importorskip("openai.types.responses")
    pydantic.TypeAdapter(list[responses.ResponseInputItemParam]).validate_python(items)


def test_old_computer_screenshots_are_masked_on_the_responses_format():
    h = computer_loop()
    sdk_accepts(h)
    before = copy.deepcopy(h)
    whole = cf.estimate(h, provider="openai")
    out = cf.prune(h, protect_tail_tokens=1_500, min_tail=1, provider="openai")
    assert h == before
    outputs = [m for m in out if m.get("type") == "computer_call_output"]
    assert len(outputs) == 6
    # The newest screen stays; the old ones are a screenshot still (what the API takes as a
    # computer call's output), of a single pixel.
    assert outputs[-1] == before[-3]
    for m in outputs[:-1]:
        assert m["output"]["type"] == "computer_screenshot"
        assert not any(s in m["output"]["image_url"] for s in SHOTS)
    assert cf.estimate(out, provider="openai") < whole // 2
    assert problems(out, "responses") == []
    sdk_accepts(out)
    # (Masking alone keeps the newest screen and, recoverable, the recall tool: half fits.)
    for strategy, share in (("mask", 0.5), ("hybrid", 0.4), ("hybrid", 0.2)):
        for recoverable in (False, True):
            budget = int(whole * share)
            r = cf.Compactor(budget=budget, provider="openai", strategy=strategy,
                             recoverable=recoverable).compact(h)
            assert h == before
            msgs = list(r.messages)
            assert r.tokens_after <= budget, (strategy, recoverable, r.tokens_after, budget)
            # The estimate of what is sent agrees with what the compaction said it left.
            assert cf.estimate(msgs, provider="openai") <= budget
            assert problems(msgs, "responses") == []
            sdk_accepts(msgs)


def pdf_result(fmt: str, k: int) -> dict[str, Any]:
    """Call ``k``'s result: a line of text and the three-page PDF the tool fetched, in ``fmt``."""
    said = f"invoice {k} fetched"
    if fmt == "anthropic":
        return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"c{k}", "content": [
            {"type": "text", "text": said},
            {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": PDF}}]}]}
    if fmt == "bedrock":
        return {"role": "user", "content": [{"toolResult": {"toolUseId": f"c{k}", "content": [
            {"text": said}, {"document": {"format": "pdf", "name": f"invoice{k}", "source": {"bytes": PDF_BYTES}}}]}}]}
    if fmt == "chat":
        return {"role": "tool", "tool_call_id": f"c{k}", "content": [
            {"type": "text", "text": said},
            {"type": "file", "file": {"filename": f"invoice{k}.pdf", "file_data": "data:application/pdf;base64," + PDF}}]}
    if fmt == "responses":
        return {"type": "function_call_output", "call_id": f"c{k}", "output": [
            {"type": "input_text", "text": said},
            {"type": "input_file", "filename": f"invoice{k}.pdf", "file_data": "data:application/pdf;base64," + PDF}]}
    return {"role": "user", "parts": [
        {"functionResponse": {"name": "fetch", "response": {"output": said}}},
        {"inlineData": {"mimeType": "application/pdf", "data": PDF}}]}


def pdf_call(fmt: str, k: int) -> dict[str, Any]:
    if fmt == "anthropic":
        return {"role": "assistant", "content": [{"type": "tool_use", "id": f"c{k}", "name": "fetch", "input": {"invoice": k}}]}
    if fmt == "bedrock":
        return {"role": "assistant", "content": [{"toolUse": {"toolUseId": f"c{k}", "name": "fetch", "input": {"invoice": k}}}]}
    if fmt == "chat":
        return {"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{k}", "type": "function", "function": {"name": "fetch", "arguments": json.dumps({"invoice": k})}}]}
    if fmt == "responses":
        return {"type": "function_call", "call_id": f"c{k}", "name": "fetch", "arguments": json.dumps({"invoice": k})}
    return {"role": "model", "parts": [{"functionCall": {"name": "fetch", "args": {"invoice": k}}}]}


def said(fmt: str, role: str, text: str) -> dict[str, Any]:
    if fmt == "gemini":
        return {"role": "model" if role == "assistant" else role, "parts": [{"text": text}]}
    return {"role": role, "content": [{"text": text}] if fmt == "bedrock" else text}


def invoice_loop(fmt: str, steps: int = 5) -> list[dict[str, Any]]:
    """A tool that fetches a PDF invoice, called ``steps`` times, the model answering each."""
    h = [said(fmt, "user", "Total the invoices of March; never pay one.")]
    for k in range(steps):
        h += [pdf_call(fmt, k), pdf_result(fmt, k), said(fmt, "assistant", f"Invoice {k}: 120 EUR.")]
        if fmt in ("anthropic", "bedrock", "gemini") and k < steps - 1:
            h.append(said(fmt, "user", "Next."))
    h.append(said(fmt, "user", "The total?"))
    return h


@pytest.mark.parametrize("fmt", ["anthropic", "bedrock", "chat", "responses", "gemini"])
def test_old_documents_a_tool_returned_are_masked_and_said_by_their_pages(fmt):
    h = invoice_loop(fmt)
    before = copy.deepcopy(h)
    provider = PROVIDER[fmt]
    whole = cf.estimate(h, provider=provider)
    out = cf.prune(h, protect_tail_tokens=10, min_tail=1, provider=provider)
    assert h == before
    kept = sum(enc(m).count(PDF[:4000]) for m in out)
    assert kept == 0, f"{kept} of 5 PDFs kept"
    assert enc(out).count("[document omitted: 3 pages]") == 5
    assert cf.estimate(out, provider=provider) < whole // 4
    assert problems(out, fmt) == []
    for strategy, share in (("mask", 0.5), ("hybrid", 0.4), ("hybrid", 0.2), ("summarize", 0.4)):
        for recoverable in (False, True):
            budget = int(whole * share)
            r = cf.Compactor(budget=budget, provider=provider, strategy=strategy,
                             recoverable=recoverable).compact(h)
            assert h == before
            if strategy == "mask":
                # (Masking alone keeps the newest results whole: it may end over the budget.)
                assert len(r.pruned) >= 3 and r.tokens_after < whole * 0.6, r
                # Each PDF gone is said by its pages, a recoverable placeholder's too (its fold
                # keeps the PDF's bytes: test_recall_documents.py).
                gone = 5 - sum(enc(m).count(PDF[:4000]) for m in r.messages)
                sent = enc(list(r.messages))
                said = (len(re.findall(r"\[folded [^\]]*document \(3 pages\)[^\]]*, ~[\d,]+ tokens[^\]]*id=cf", sent))
                        if recoverable else sent.count("[document omitted: 3 pages]"))
                assert said == gone, (recoverable, sent[:1_500])
            else:
                assert r.tokens_after <= budget, (strategy, recoverable, r.tokens_after, budget)
            assert problems(list(r.messages), fmt) == []


def wav(seconds: int, rate: int = 8000) -> str:
    """Base64 of a silent mono 16-bit WAV of ``seconds``."""
    data = b"\x00\x00" * (seconds * rate)
    raw = (b"RIFF" + struct.pack("<I", 36 + len(data)) + b"WAVEfmt "
           + struct.pack("<IHHIIHH", 16, 1, 1, rate, rate * 2, 2, 16) + b"data" + struct.pack("<I", len(data)) + data)
    return base64.b64encode(raw).decode()


VOICE = wav(30)


def user_media(fmt: str, k: int) -> dict[str, Any]:
    """A user turn of a question and a voice note (chat, Gemini) or a PDF (the others)."""
    ask = f"And this one ({k})?"
    if fmt == "chat":
        return {"role": "user", "content": [{"type": "text", "text": ask},
                                            {"type": "input_audio", "input_audio": {"data": VOICE, "format": "wav"}}]}
    if fmt == "gemini":
        return {"role": "user", "parts": [{"text": ask}, {"inlineData": {"mimeType": "audio/wav", "data": VOICE}}]}
    if fmt == "anthropic":
        return {"role": "user", "content": [
            {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": PDF}},
            {"type": "text", "text": ask}]}
    if fmt == "bedrock":
        return {"role": "user", "content": [
            {"document": {"format": "pdf", "name": f"contract{k}", "source": {"bytes": PDF_BYTES}}}, {"text": ask}]}
    return {"role": "user", "content": [
        {"type": "input_file", "filename": f"contract{k}.pdf", "file_data": "data:application/pdf;base64," + PDF},
        {"type": "input_text", "text": ask}]}


@pytest.mark.parametrize("fmt", ["chat", "gemini", "anthropic", "bedrock", "responses"])
def test_old_recordings_and_documents_the_user_sent_are_masked_as_old_pictures_are(fmt):
    h = [said(fmt, "user", "Check each contract against our terms; never sign anything."),
         said(fmt, "assistant", "Send them one at a time.")]
    for k in range(5):
        h += [user_media(fmt, k), said(fmt, "assistant", f"Contract {k} matches, but clause {k} differs.")]
    h.append(said(fmt, "user", "Which differ most?"))
    before = copy.deepcopy(h)
    provider = PROVIDER[fmt]
    whole = cf.estimate(h, provider=provider)
    out = cf.prune(h, protect_tail_tokens=10, min_tail=1, provider=provider)
    assert h == before
    payload = (VOICE if fmt in ("chat", "gemini") else PDF)[:4000]
    assert enc(out).count(payload) == 0
    what = "[audio omitted: 30 seconds]" if fmt in ("chat", "gemini") else "[document omitted: 3 pages]"
    assert enc(out).count(what) == 5
    # (The question beside each stays.)
    assert all(f"({k})?" in enc(out) for k in range(5))
    assert cf.estimate(out, provider=provider) < whole // 3
    assert problems(out, fmt) == []
    budget = int(whole * 0.4)
    r = cf.Compactor(budget=budget, provider=provider).compact(h)
    assert h == before
    assert r.tokens_after <= budget
    assert problems(list(r.messages), fmt) == []


def gemini_computer_loop(steps: int = 6, ids: bool = False, media_key: str = "inlineData") -> list[dict[str, Any]]:
    """A Gemini computer-use loop: each action's ``functionResponse`` carries the screen it
    left in its own ``parts`` (Gemini 3's multimodal function responses, as Google's
    computer-use sample sends them)."""
    h: list[dict[str, Any]] = [{"role": "user", "parts": [{"text": "Book the cheapest flight to Oslo. Never pay."}]}]
    for k in range(steps):
        call: dict[str, Any] = {"name": "click_at", "args": {"x": 100 + k, "y": 200}}
        response: dict[str, Any] = {"name": "click_at", "response": {"url": f"https://example.com/step{k}"},
                                    "parts": [{media_key: {"mimeType": "image/png", "data": SHOTS[k]}}]}
        if ids:
            call["id"] = response["id"] = f"fc_{k}"
        h.append({"role": "model", "parts": [{"text": f"Step {k}."}, {"functionCall": call}]})
        h.append({"role": "user", "parts": [{"functionResponse": response}]})
    h.append({"role": "model", "parts": [{"text": "The form is open."}]})
    h.append({"role": "user", "parts": [{"text": "Go on."}]})
    return h


# (pydantic-ai sends its media in snake case inside a camel-case `functionResponse`, with ids.)
@pytest.mark.parametrize("ids,media_key", [(False, "inlineData"), (True, "inlineData"), (True, "inline_data")])
def test_old_screenshots_in_gemini_function_responses_are_masked(ids, media_key):
    types = pytest.importorskip("google.genai.types")
    h = gemini_computer_loop(ids=ids, media_key=media_key)
    before = copy.deepcopy(h)
    whole = cf.estimate(h, provider="gemini")
    out = cf.prune(h, protect_tail_tokens=10, min_tail=1, provider="gemini")
    assert h == before
    assert sum(enc(m).count(SHOTS[0][:4000]) for m in out) == 0, "every old screenshot masked"
    for k in range(6):
        r = out[2 + 2 * k]["parts"][0]["functionResponse"]
        # Still the answer to its call, by name (and id), the screen said by its size.
        assert r["name"] == "click_at" and r.get("id") == (f"fc_{k}" if ids else None)
        assert "parts" not in r or r["parts"] == []
        assert "[image omitted: 1280x800]" in json.dumps(r["response"])
    assert cf.estimate(out, provider="gemini") < whole // 4
    assert problems(out, "gemini") == []
    for m in out:
        types.Content.model_validate(m)
    for strategy, share in (("mask", 0.5), ("hybrid", 0.4), ("hybrid", 0.2)):
        for recoverable in (False, True):
            budget = int(whole * share)
            r = cf.Compactor(budget=budget, provider="gemini", strategy=strategy,
                             recoverable=recoverable).compact(h)
            assert h == before
            assert r.tokens_after <= budget, (strategy, recoverable, r.tokens_after, budget)
            assert problems(list(r.messages), "gemini") == []
            for m in r.messages:
                types.Content.model_validate(m)


@pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
def test_a_pdf_in_a_langchain_block_is_priced_by_its_pages_as_the_same_pdf_in_chat(provider):
    messages = pytest.importorskip("langchain_core.messages")
    ask = {"type": "text", "text": "What does this invoice say?"}
    as_langchain = [messages.HumanMessage(content=[ask, {"type": "file", "base64": PDF, "mime_type": "application/pdf"}])]
    as_chat = [{"role": "user", "content": [ask, {"type": "file", "file": {
        "filename": "invoice.pdf", "file_data": "data:application/pdf;base64," + PDF}}]}]
    assert cf.estimate(as_langchain, provider=provider) == cf.estimate(as_chat, provider=provider)


def screenshot_loop(fmt: str, steps: int = 6) -> list[dict[str, Any]]:
    """A browser tool answering each call with a short line and its screenshot (chat, a
    Responses output list), or a computer call's screenshot (``computer``), or a tool_result
    block (``anthropic``)."""
    if fmt == "computer":
        return computer_loop(steps)
    h: list[dict[str, Any]] = [{"role": "user", "content": "Book the cheapest flight to Oslo. Never pay."}]
    for k in range(steps):
        url = "data:image/png;base64," + SHOTS[k]
        if fmt == "chat":
            h.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": f"c{k}", "type": "function", "function": {"name": "browser", "arguments": json.dumps({"step": k})}}]})
            h.append({"role": "tool", "tool_call_id": f"c{k}", "content": [
                {"type": "text", "text": f"clicked {k}"}, {"type": "image_url", "image_url": {"url": url}}]})
        elif fmt == "responses":
            h.append({"type": "function_call", "call_id": f"c{k}", "name": "browser", "arguments": json.dumps({"step": k})})
            h.append({"type": "function_call_output", "call_id": f"c{k}", "output": [
                {"type": "input_text", "text": f"clicked {k}"}, {"type": "input_image", "image_url": url}]})
        else:
            h.append({"role": "assistant", "content": [{"type": "tool_use", "id": f"c{k}", "name": "browser", "input": {"step": k}}]})
            h.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"c{k}", "content": [
                {"type": "text", "text": f"clicked {k}"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": SHOTS[k]}}]}]})
        h.append({"role": "assistant", "content": f"Step {k} done."})
    h.append({"role": "user", "content": "Go on."})
    return h


@pytest.mark.parametrize("fmt", ["chat", "responses", "computer", "anthropic"])
def test_exclude_tools_and_keep_protect_the_screenshots_a_tool_returned(fmt):
    h = screenshot_loop(fmt)
    provider = "anthropic" if fmt == "anthropic" else "openai"
    whole = cf.estimate(h, provider=provider)

    def shown(messages: Any) -> list[int]:
        # (A screenshot's base64 ends where its string does.)
        return [k for k in range(6) if SHOTS[k] + '"' in enc(list(messages))]

    assert shown(h) == list(range(6))
    # Outputs of an excluded tool are never masked: its screenshots are its output.
    r = cf.Compactor(budget=int(whole * 0.3), provider=provider, strategy="mask",
                     exclude_tools=["browser", "computer"]).compact(h)
    assert shown(r.messages) == list(range(6)), r.pruned
    # The last three calls' results are kept whole.
    r = cf.Compactor(budget=int(whole * 0.3), provider=provider, strategy="mask", keep=3).compact(h)
    assert shown(r.messages) == [3, 4, 5], r.pruned


@pytest.mark.parametrize("recoverable", [False, True])
def test_a_pending_long_gemini_function_response_beside_its_screenshot_is_cut_and_keeps_it(recoverable):
    types = pytest.importorskip("google.genai.types")
    log = "\n".join(f"line {k}: compiled module_{k}.c in {k % 7}.{k % 10}s" for k in range(3000))
    h = gemini_computer_loop()[:-2]
    h[-1]["parts"][0]["functionResponse"]["response"] = {"log": log}
    before = copy.deepcopy(h)
    whole = cf.estimate(h, provider="gemini")
    c = cf.Compactor(budget=whole // 4, provider="gemini", recoverable=recoverable)
    r = c.compact(h)
    assert h == before
    assert r.tokens_after <= whole // 4
    last = r.messages[-1]["parts"][0]["functionResponse"]
    assert last["parts"] == before[-1]["parts"][0]["functionResponse"]["parts"], "the newest screen stays"
    said = json.dumps(last["response"])
    assert "line 0: compiled" in said and "line 2999: compiled" in said and len(said) < len(log) // 2
    assert problems(list(r.messages), "gemini") == []
    for m in r.messages:
        types.Content.model_validate(m)
    if recoverable:
        cut = [n for n in r.notes if "middle" in n and "id=" in n]
        assert c.recall(cut[0].split("id=")[1].split()[0]) == json.dumps({"log": log}, separators=(",", ":"))
