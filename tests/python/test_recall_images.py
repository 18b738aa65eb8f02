"""A recall of a folded image gives the image back as an image, in the formats whose tool
results can carry one (Anthropic ``tool_result`` blocks, Bedrock ``toolResult`` content,
Responses ``function_call_output`` lists, Gemini ``functionResponse.parts``), and in chat a short
text saying what it was; never its base64 as text. Before, ``answer`` paged the stored source:
a model that recalled a screenshot got pages of base64 characters."""

from __future__ import annotations

import base64
import json
import re
from typing import Any

import pytest

import contextfold as cf
from compaction_shapes import FORMATS, PROVIDER
from wire_shapes import check_converse_message
from test_ollama_native import png_base64
from test_recall import recall_call
from test_repair import accepted

from contextfold.content_store import MemoryContentStore

#: A 1280x800 screenshot (a real PNG header, padded to ~6 KB): each step's differs by its padding.
SHOTS = [png_base64(1280, 800, 4_000 + k) for k in range(12)]
FOLDED = re.compile(r"\[folded image, ~([\d,]+) tokens; id=(cf[0-9a-f]{12})")


def _image(fmt: str, data: str) -> dict[str, Any]:
    url = "data:image/png;base64," + data
    return {"chat": {"type": "image_url", "image_url": {"url": url}},
            "responses": {"type": "input_image", "image_url": url},
            "anthropic": {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}},
            "gemini": {"inlineData": {"mimeType": "image/png", "data": data}},
            "bedrock": {"image": {"format": "png", "source": {"bytes": base64.b64decode(data)}}}}[fmt]


def _text(fmt: str, text: str) -> dict[str, Any]:
    return {"chat": {"type": "text", "text": text}, "responses": {"type": "input_text", "text": text},
            "anthropic": {"type": "text", "text": text}}.get(fmt, {"text": text})


def _said(fmt: str, role: str, text: str) -> dict[str, Any]:
    if fmt == "gemini":
        return {"role": "model" if role == "assistant" else "user", "parts": [{"text": text}]}
    if fmt in ("chat", "responses"):
        return {"role": role, "content": text}
    return {"role": role, "content": [_text(fmt, text)]}


def _call(fmt: str, k: int) -> dict[str, Any]:
    args = {"action": "left_click", "coordinate": [100 + k, 200]}
    if fmt == "chat":
        return {"role": "assistant", "content": None, "tool_calls": [
            {"id": f"call_{k}", "type": "function", "function": {"name": "computer", "arguments": json.dumps(args)}}]}
    if fmt == "responses":
        return {"type": "function_call", "call_id": f"call_{k}", "name": "computer", "arguments": json.dumps(args)}
    if fmt == "anthropic":
        return {"role": "assistant", "content": [{"type": "tool_use", "id": f"toolu_{k}", "name": "computer", "input": args}]}
    if fmt == "gemini":
        return {"role": "model", "parts": [{"functionCall": {"name": "computer", "args": args}}]}
    return {"role": "assistant", "content": [{"toolUse": {"toolUseId": f"tu_{k}", "name": "computer", "input": args}}]}


def _result(fmt: str, k: int) -> dict[str, Any]:
    text = f"clicked at ({100 + k}, 200)"
    if fmt == "chat":
        return {"role": "tool", "tool_call_id": f"call_{k}", "content": text}
    if fmt == "responses":
        return {"type": "function_call_output", "call_id": f"call_{k}", "output": text}
    if fmt == "anthropic":
        return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{k}", "content": text}]}
    if fmt == "gemini":
        return {"role": "user", "parts": [{"functionResponse": {"name": "computer", "response": {"output": text}}}]}
    return {"role": "user", "content": [{"toolResult": {"toolUseId": f"tu_{k}", "content": [{"text": text}]}}]}


def computer_use(fmt: str) -> list[dict[str, Any]]:
    """A computer-use loop in ``fmt``: each step a click, its result, the model's look and the
    screenshot taken after it (a user turn of its caption and the image)."""
    h = [_said(fmt, "user", "Book the cheapest flight to Lisbon on the open site.")]
    for k, shot in enumerate(SHOTS):
        h += [_call(fmt, k), _result(fmt, k), _said(fmt, "assistant", f"Step {k}: let me look at the screen."),
              {"role": "user", ("parts" if fmt == "gemini" else "content"): [
                  _text(fmt, f"Screenshot after step {k}."), _image(fmt, shot)]}]
    h += [_said(fmt, "assistant", "The results page is open."), _said(fmt, "user", "Which flight is cheapest?")]
    return h


def compacted(fmt: str, *, recall_max_tokens: int | None) -> tuple[cf.Compactor, Any, str, str]:
    """``computer_use(fmt)`` compacted recoverably so that old screenshots are folded images: the
    Compactor, its result, the first folded image's id and the screenshot it was."""
    h = computer_use(fmt)
    whole = cf.estimate(h, provider=PROVIDER[fmt])
    c = cf.Compactor(budget=whole * 3 // 4, provider=PROVIDER[fmt], wire_format=fmt, strategy="mask",
                     recoverable=True, store=MemoryContentStore(), recall_max_tokens=recall_max_tokens)
    r = c.compact(h)
    assert not any("recall tool is not sent" in n for n in r.notes), r.notes
    sent = json.dumps(r.messages, default=lambda b: base64.b64encode(b).decode())
    folded = FOLDED.findall(sent)
    assert folded, sent[:2_000]
    fold_id = folded[0][1]
    shot = next(s for s in SHOTS if s.endswith(c.recall(fold_id)[-40:]))
    return c, r, fold_id, shot


def _images(fmt: str, answer: dict[str, Any]) -> list[str]:
    """The images an answer carries, as base64, read as each API reads its tool result."""
    if fmt == "anthropic":
        (block,) = answer["content"]
        content = block["content"] if isinstance(block["content"], list) else []
        return [b["source"]["data"] for b in content if b["type"] == "image"]
    if fmt == "bedrock":
        (block,) = answer["content"]
        return [base64.b64encode(b["image"]["source"]["bytes"]).decode()
                for b in block["toolResult"]["content"] if "image" in b]
    if fmt == "responses":
        output = answer["output"] if isinstance(answer["output"], list) else []
        return [i["image_url"].removeprefix("data:image/png;base64,") for i in output if i["type"] == "input_image"]
    if fmt == "gemini":
        (part,) = answer["parts"]
        return [p["inlineData"]["data"] for p in part["functionResponse"].get("parts", ())]
    return []


def _text_of(fmt: str, answer: dict[str, Any]) -> str:
    return json.dumps(answer, default=lambda b: base64.b64encode(b).decode())


def sdk_accepts(fmt: str, answer: dict[str, Any]) -> None:
    """The answer validated by the installed SDK's own types (Bedrock: by botocore's model of
    the Converse request, where botocore is installed)."""
    from pydantic import TypeAdapter

    if fmt == "chat":
        from openai.types.chat import ChatCompletionToolMessageParam
        TypeAdapter(ChatCompletionToolMessageParam).validate_python(answer)
    elif fmt == "responses":
        from openai.types.responses.response_input_item_param import FunctionCallOutput
        from openai.types.responses.response_input_image_content_param import ResponseInputImageContentParam
        from openai.types.responses.response_input_text_content_param import ResponseInputTextContentParam
        TypeAdapter(FunctionCallOutput).validate_python(answer)
        text, image = answer["output"]
        TypeAdapter(ResponseInputTextContentParam).validate_python(text)
        TypeAdapter(ResponseInputImageContentParam).validate_python(image)
    elif fmt == "anthropic":
        from anthropic.types import ImageBlockParam, MessageParam, ToolResultBlockParam
        TypeAdapter(MessageParam).validate_python(answer)
        (block,) = answer["content"]
        TypeAdapter(ToolResultBlockParam).validate_python(block)
        TypeAdapter(ImageBlockParam).validate_python(block["content"][1])
    elif fmt == "gemini":
        from google.genai import types
        content = types.Content.model_validate(answer)
        blob = content.parts[0].function_response.parts[0].inline_data  # type: ignore[index,union-attr]
        assert blob.mime_type == "image/png" and blob.data  # type: ignore[union-attr]
    else:
        # The Converse API's ImageBlock: a format of four and the bytes themselves (boto3 takes
        # raw bytes; it base64-encodes them for the wire).
        (block,) = answer["content"]
        for part in block["toolResult"]["content"]:
            if "image" in part:
                assert part["image"]["format"] in ("png", "jpeg", "gif", "webp")
                assert isinstance(part["image"]["source"]["bytes"], bytes)
        check_converse_message(answer)


def within_budget(c: cf.Compactor, r: Any, fmt: str, after: list[Any]) -> None:
    tokens = cf._core.compaction_verify(after, cf._core.PricedRequest(
        format=fmt, provider=PROVIDER[fmt], tools=r.tools))[0]
    assert tokens <= r.budget, (tokens, r.budget)


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_recalled_screenshot_comes_back_as_an_image_where_the_format_carries_one(fmt):
    c, r, fold_id, shot = compacted(fmt, recall_max_tokens=2_000)
    assert c.recall(fold_id) in (shot, "data:image/png;base64," + shot), "recall(id) stays the stored original"
    call = recall_call(fmt, fold_id, 0, 1)
    answer = c.answer(call, history=[*r.messages, call])
    after = [*r.messages, call, answer]
    assert accepted(after, fmt, None) == []
    sdk_accepts(fmt, answer)
    within_budget(c, r, fmt, after)
    said = _text_of(fmt, answer)
    assert f"id={fold_id}: image 1 of 1, 1280x800 image/png" in said, said[:300]
    if fmt == "chat":
        assert answer["role"] == "tool" and isinstance(answer["content"], str)
        assert shot[:64] not in said and len(answer["content"]) < 400, answer["content"]
        assert "carries text only" in answer["content"]
    else:
        assert _images(fmt, answer) == [shot], "the screenshot, byte-exact"
        # Priced by its pixels: the answer costs about what the folded image's placeholder said.
        price = int(FOLDED.search(json.dumps(r.messages, default=str)).group(1).replace(",", ""))  # type: ignore[union-attr]
        assert cf.estimate([answer], provider=PROVIDER[fmt]) < price + 120


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_screenshot_the_answers_room_cannot_hold_is_said_with_its_price(fmt):
    # The default page (a tenth of the room beside the floor) holds no 1280x800 screenshot.
    c, r, fold_id, shot = compacted(fmt, recall_max_tokens=None)
    call = recall_call(fmt, fold_id, 0, 1)
    answer = c.answer(call, history=[*r.messages, call])
    after = [*r.messages, call, answer]
    assert accepted(after, fmt, None) == []
    within_budget(c, r, fmt, after)
    said = _text_of(fmt, answer)
    assert shot[:64] not in said and len(said) < 700, said[:700]
    assert "1280x800" in said
    if fmt != "chat":
        m = re.search(r"needs ~([\d,]+) tokens where this answer's room holds ~([\d,]+)", said)
        assert m, said
        need, room = (int(g.replace(",", "")) for g in m.groups())
        assert need > room


# -- a tool result's text beside its screenshot, folded together ---------------------------------

LOG = "\n".join(f"step {k}: clicked element #{k} and waited {k % 5}00 ms" for k in range(400))


def _result_with_shot(fmt: str, k: int) -> dict[str, Any]:
    data = SHOTS[k]
    if fmt == "anthropic":
        return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{k}", "content": [
            {"type": "text", "text": LOG}, _image(fmt, data)]}]}
    if fmt == "bedrock":
        return {"role": "user", "content": [{"toolResult": {"toolUseId": f"tu_{k}", "content": [
            {"text": LOG}, _image(fmt, data)]}}]}
    return {"type": "function_call_output", "call_id": f"call_{k}", "output": [
        {"type": "input_text", "text": LOG}, _image(fmt, data)]}


@pytest.mark.parametrize("fmt", ["anthropic", "bedrock", "responses"])
def test_a_results_text_is_paged_and_its_screenshot_given_as_an_image_after_it(fmt):
    h = [_said(fmt, "user", "Book the cheapest flight to Lisbon on the open site.")]
    for k in range(4):
        h += [_call(fmt, k), _result_with_shot(fmt, k)]
        if fmt == "responses" or k == 3:
            h.append(_said(fmt, "assistant", f"Step {k} done."))
    h.append(_said(fmt, "user", "Which flight is cheapest?"))
    whole = cf.estimate(h, provider=PROVIDER[fmt])
    c = cf.Compactor(budget=whole // 3, provider=PROVIDER[fmt], wire_format=fmt, strategy="mask",
                     recoverable=True, store=MemoryContentStore(), recall_max_tokens=2_000)
    r = c.compact(h)
    sent = json.dumps(r.messages, default=lambda b: base64.b64encode(b).decode())
    m = re.search(r"\[folded tool output and 1 image of computer, [^\]]*id=(cf[0-9a-f]{12})", sent)
    assert m, sent[:1_500]
    fold_id = m.group(1)
    stored = c.recall(fold_id)
    shot = next(s for s in SHOTS if stored.endswith(s))
    history, offset, pages, n = list(r.messages), 0, [], 0
    while True:
        call = recall_call(fmt, fold_id, offset, n)
        answer = c.answer(call, history=[*history, call])
        after = [*history, call, answer]
        assert accepted(after, fmt, None) == []
        within_budget(c, r, fmt, after)
        said = _text_of(fmt, answer)
        assert shot[:64] not in said or _images(fmt, answer) == [shot]
        header = re.search(r"\[contextfold_recall id=\w+: ([^\]]*)\]", said)
        assert header, said[:300]
        more = re.search(r"more: offset=(\d+)", header.group(1))
        assert f" of {len(stored)};" in header.group(1), "offsets are those of recall(id)'s text"
        if _images(fmt, answer):
            assert _images(fmt, answer) == [shot] and header.group(1).startswith("image 1 of 1, 1280x800")
            sdk_accepts(fmt, answer)
        else:
            pages.append(said)
        if not more:
            break
        offset, n = int(more.group(1)), n + 1
        assert n < 20
    assert _images(fmt, answer) == [shot], "the last answer gives the screenshot"
    # The text pages hold the log, never a character of the image's lines.
    assert all("[image, base64]" not in p for p in pages)
    assert "image 1 of 1, 1280x800 image/png" in pages[-1], "the last text page names what follows"


# -- an image given by where it is: a URL, an S3 URI ---------------------------------------------


@pytest.mark.parametrize("fmt", ["anthropic", "bedrock", "gemini"])
def test_a_recalled_url_image_is_given_by_its_url_where_its_placeholder_says_it_was_an_image(fmt):
    from test_recall import _screenshot_turn

    where = "s3://shots/step{}.png" if fmt == "bedrock" else "https://example.com/step{}.png"
    h: list[dict[str, Any]] = []
    for k in range(12):
        h += [_screenshot_turn(fmt, k, where.format(k)), _said(fmt, "assistant", "I see it: the header moved.")]
    h.append(_said(fmt, "user", "What changed overall?"))
    c = cf.Compactor(budget=cf.estimate(h, provider=PROVIDER[fmt]) * 3 // 4, provider=PROVIDER[fmt], wire_format=fmt,
                     strategy="mask", recoverable=True, store=MemoryContentStore(), recall_max_tokens=2_000)
    r = c.compact(h)
    fold_id = FOLDED.findall(json.dumps(r.messages))[0][1]
    source = c.recall(fold_id)
    assert source == where.format(1)
    call = recall_call(fmt, fold_id, 0, 1)
    answer = c.answer(call, history=[*r.messages, call])
    after = [*r.messages, call, answer]
    assert accepted(after, fmt, None) == []
    within_budget(c, r, fmt, after)
    if fmt == "anthropic":
        assert answer["content"][0]["content"][1]["source"] == {"type": "url", "url": source}
        sdk_accepts(fmt, answer)
    elif fmt == "bedrock":
        image = answer["content"][0]["toolResult"]["content"][1]["image"]
        assert image == {"format": "png", "source": {"s3Location": {"uri": source}}}
    else:
        # (A function response's file data needs a media type a recall does not know.)
        assert "takes no image given by URL or file id" in _text_of(fmt, answer)
    # Without the history, a lone URL is not known to be an image (a tool's output can be one):
    # it is paged as the short text it is.
    assert source in _text_of(fmt, c.answer(call)) and "image 1 of 1" not in _text_of(fmt, c.answer(call))


@pytest.mark.parametrize("api", ["anthropic", "chat"])
def test_the_proxys_recall_round_gives_a_folded_screenshot_back_as_an_image_not_its_base64(api):
    # contextfold serve --recall answered with pages of the image's base64 (the store's text),
    # where Compactor.answer gives the image itself.
    pytest.importorskip("starlette", reason="contextfold serve needs its extra: pip install '.[proxy]'")
    from contextfold.serve.recall_loop import RecallRoute, recall_round

    shot = png_base64(1280, 800, 20_000)
    store = MemoryContentStore()
    fold = cf._core.fold_id(shot)
    store.put(fold, shot)
    args = json.dumps({"id": fold})
    if api == "anthropic":
        response: dict[str, Any] = {"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "contextfold_recall", "input": {"id": fold}}]}
    else:
        response = {"choices": [{"index": 0, "message": {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "contextfold_recall", "arguments": args}}]}}]}
    provider = "anthropic" if api == "anthropic" else "openai"
    got = recall_round(api, provider, response, store, RecallRoute(history_end=0, page_tokens=2_000, room=20_000,
                                                                   model=None), rounds=0)
    assert got is not None and got.paged
    answer = got.messages[-1]
    if api == "anthropic":
        blocks = answer["content"][0]["content"]
        assert [b["type"] for b in blocks] == ["text", "image"] and blocks[1]["source"]["data"] == shot
    else:
        assert "1280x800" in answer["content"] and "carries text only" in answer["content"]
        assert shot[:200] not in answer["content"] and len(answer["content"]) < 400
