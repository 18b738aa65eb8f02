"""A tool result whose long text sits beside images: a chat ``tool`` message of parts, a
Responses ``function_call_output`` whose output is a list, Ollama's string ``content`` beside
its native ``images``, an Anthropic ``tool_result`` or Bedrock ``toolResult`` of blocks; and a
browser agent's observation, a user turn of the page's text beside its screenshot. Old, the whole result is masked (its images said by their size); in
the kept tail, its text is cut in the middle and its images stay. Before, the text beside an
image was never masked nor cut: a long pending result with a screenshot raised
``CompactionBudgetError`` where the system prompt, task and last user turn fit."""

from __future__ import annotations

import base64
import copy
import json
from typing import Any

import pytest

import contextfold as cf
from compaction_shapes import shape_problems
from test_ollama_native import png_base64

LOG = "\n".join(f"line {k}: compiled module_{k}.c in {k % 7}.{k % 10}s" for k in range(3000))
SHOT = png_base64(1280, 800, 200)
FORMATS = ["chat", "responses", "ollama", "anthropic", "bedrock"]
PROVIDER = {"chat": "openai", "responses": "openai", "ollama": "ollama", "anthropic": "anthropic",
            "bedrock": "anthropic", "gemini": "gemini"}


def result(fmt: str, k: int, text: str) -> dict[str, Any]:
    """Call ``k``'s result: ``text`` and a 1280x800 screenshot, in ``fmt``."""
    if fmt == "chat":
        return {"role": "tool", "tool_call_id": f"c{k}", "content": [
            {"type": "text", "text": text},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64," + SHOT}}]}
    if fmt == "responses":
        return {"type": "function_call_output", "call_id": f"c{k}", "output": [
            {"type": "input_text", "text": text},
            {"type": "input_image", "image_url": "data:image/png;base64," + SHOT}]}
    if fmt == "anthropic":
        return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"c{k}", "content": [
            {"type": "text", "text": text},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": SHOT}}]}]}
    if fmt == "bedrock":
        return {"role": "user", "content": [{"toolResult": {"toolUseId": f"c{k}", "content": [
            {"text": text}, {"image": {"format": "png", "source": {"bytes": base64.b64decode(SHOT)}}}]}}]}
    return {"role": "tool", "tool_name": "build", "content": text, "images": [SHOT]}


def call(fmt: str, k: int) -> dict[str, Any]:
    if fmt == "chat":
        return {"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{k}", "type": "function", "function": {"name": "build", "arguments": json.dumps({"step": k})}}]}
    if fmt == "responses":
        return {"type": "function_call", "call_id": f"c{k}", "name": "build", "arguments": json.dumps({"step": k})}
    if fmt == "anthropic":
        return {"role": "assistant", "content": [{"type": "tool_use", "id": f"c{k}", "name": "build", "input": {"step": k}}]}
    if fmt == "bedrock":
        return {"role": "assistant", "content": [{"toolUse": {"toolUseId": f"c{k}", "name": "build", "input": {"step": k}}}]}
    return {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "build", "arguments": {"step": k}}}]}


def history(fmt: str, *, long_at: int, pending: bool = False) -> list[dict[str, Any]]:
    """Four build steps, each answered with text and a screenshot; the text of step ``long_at``
    is a 3,000-line log. ``pending``: the history ends on the last step's result."""
    def said(role: str, text: str) -> dict[str, Any]:
        return {"role": role, "content": [{"text": text}] if fmt == "bedrock" else text}

    h: list[dict[str, Any]] = [said("user", "Build the project; never delete files.")]
    for k in range(4):
        h += [call(fmt, k), result(fmt, k, LOG if k == long_at else f"step {k} built")]
        # (Anthropic and Bedrock alternate turns: the next call follows the result.)
        if k == 3 or fmt not in ("anthropic", "bedrock"):
            h.append(said("assistant", f"Step {k} done."))
    if pending:
        h.pop()
    else:
        h.append(said("user", "Status?"))
    return h


def shows(m: dict[str, Any], shot: str = SHOT) -> bool:
    """Whether message ``m`` still holds the screenshot (as base64, or Bedrock's bytes)."""
    return shot in json.dumps(m, default=lambda b: base64.b64encode(b).decode())


def problems(messages: list[Any], fmt: str) -> list[str]:
    if fmt == "ollama":
        return []
    _, failures = cf._core.compaction_verify(messages, cf._core.PricedRequest(format=fmt, provider=PROVIDER[fmt]))
    return shape_problems(messages, fmt) + [d for k, _, d in failures if k != "over_budget"]


def text_of(m: dict[str, Any]) -> str:
    """The text of a result message (its result block's, in the formats of blocks)."""
    body = m.get("content", m.get("output"))
    if isinstance(body, str):
        return body
    if fmt_of(m) in ("anthropic", "bedrock"):
        block = body[0]
        body = block["content"] if "content" in block else block["toolResult"]["content"]
        if isinstance(body, str):
            return body
    return "\n".join(p.get("text", "") for p in body)


def fmt_of(m: dict[str, Any]) -> str:
    body = m.get("content")
    if isinstance(body, list) and body and ("toolResult" in body[0] or body[0].get("type") == "tool_result"):
        return "anthropic"
    return ""


@pytest.mark.parametrize("fmt", FORMATS)
def test_an_old_long_result_beside_a_screenshot_is_masked_whole(fmt):
    h = history(fmt, long_at=0)
    before = copy.deepcopy(h)
    out = cf.prune(h, protect_tail_tokens=2_000, min_tail=1, provider=PROVIDER[fmt])
    assert h == before
    m = out[2]
    text = text_of(m)
    assert text.startswith("[output pruned to save context: build returned"), text[:200]
    assert text.endswith("[image omitted: 1280x800]")
    assert not shows(m), "the screenshot went with the result it was part of"
    if fmt == "ollama":
        assert m["images"] == [] and isinstance(m["content"], str)
    assert cf.estimate(out, provider=PROVIDER[fmt]) < cf.estimate(h, provider=PROVIDER[fmt]) // 3
    assert problems(out, fmt) == []
    step1 = out[4] if fmt in ("anthropic", "bedrock") else out[5]
    assert not shows(step1)
    if fmt in ("anthropic", "bedrock"):
        # A result block's images sit inside it, where no edit of one image reaches: the
        # block is masked whole, its screenshot said.
        assert text_of(step1).startswith("[output pruned") and "1280x800" in text_of(step1)
    else:
        # A short text beside its screenshot keeps its words: the image alone is masked.
        assert "step 1 built" in text_of(step1)


@pytest.mark.parametrize("recoverable", [False, True])
@pytest.mark.parametrize("fmt", FORMATS)
def test_a_pending_long_result_beside_a_screenshot_is_cut_and_keeps_its_image(fmt, recoverable):
    h = history(fmt, long_at=3, pending=True)
    before = copy.deepcopy(h)
    whole = cf.estimate(h, provider=PROVIDER[fmt])
    c = cf.Compactor(budget=whole // 4, provider=PROVIDER[fmt], recoverable=recoverable)
    r = c.compact(h)
    assert h == before
    assert r.tokens_after <= whole // 4
    last = r.messages[-1]
    assert shows(last), "the newest screenshot stays"
    text = text_of(last)
    assert text.startswith("line 0: compiled") and text.rstrip().endswith("line 2999: compiled module_2999.c in 3.9s")
    assert len(text) < len(LOG) // 2
    cut = [n for n in r.notes if "middle" in n and "id=" in n]
    assert cut, r.notes
    assert problems(list(r.messages), fmt) == []
    if recoverable:
        fold = cut[0].split("id=")[1].split()[0]
        assert c.recall(fold) == LOG


@pytest.mark.parametrize("fmt", FORMATS)
def test_recall_of_a_masked_result_gives_back_its_text_and_its_screenshot(fmt):
    h = history(fmt, long_at=0)
    # (A budget the masked history fits with no room for the log's middle cut.)
    c = cf.Compactor(budget=cf.estimate(h, provider=PROVIDER[fmt]) // 12, provider=PROVIDER[fmt],
                     strategy="mask", recoverable=True)
    r = c.compact(h)
    text = text_of(r.messages[2])
    assert text.startswith("[folded tool output and 1 image of build, ~"), text
    assert not shows(r.messages[2])
    fold = text.split("id=")[1].split(",")[0]
    back = c.recall(fold)
    # (A data URL comes back as the URL it was.)
    source = "data:image/png;base64," + SHOT if fmt in ("chat", "responses") else SHOT
    assert back == LOG + "\n[image, base64]\n" + source
    assert problems(list(r.messages), fmt) == []


@pytest.mark.parametrize("source", ["url", "small png"])
def test_old_screenshots_a_tool_returned_alone_are_masked_whatever_their_bytes(source):
    # A computer-use tool's result is its screenshot alone. A URL (or a small PNG of a large
    # picture) is fewer bytes than its placeholder, but hundreds of tokens: kept by a bytes test.
    if source == "url":
        image = {"type": "url", "url": "https://example.com/shots/step.png"}
    else:
        image = {"type": "base64", "media_type": "image/png", "data": png_base64(1092, 1092, 0)}
    h: list[dict[str, Any]] = [{"role": "user", "content": "Book the cheapest flight on the site."}]
    for k in range(5):
        h.append({"role": "assistant", "content": [{"type": "tool_use", "id": f"t{k}", "name": "computer",
                                                     "input": {"action": "screenshot"}}]})
        h.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{k}",
                                               "content": [{"type": "image", "source": image}]}]})
    h.append({"role": "assistant", "content": "The form is open."})
    h.append({"role": "user", "content": "Go on."})
    out = cf.prune(h, protect_tail_tokens=10, min_tail=1, provider="anthropic")
    masked = [m for m in out if m["role"] == "user" and "[output pruned" in json.dumps(m)]
    assert len(masked) == 5, [json.dumps(m)[:120] for m in out]
    assert problems(out, "anthropic") == []


# -- a browser agent's observations: the page's text beside its screenshot, as a user turn ------

PAGE = "\n".join(f"[{k}]<a href='/item/{k}'>Item {k} of the catalogue, price ${k * 3}.99</a>" for k in range(600))
OBS_FORMATS = ["chat", "responses", "anthropic", "bedrock", "gemini", "ollama"]


def observation(fmt: str, text: str) -> dict[str, Any]:
    """A user turn of ``text`` and a 1280x800 screenshot, in ``fmt``."""
    url = "data:image/png;base64," + SHOT
    if fmt == "chat":
        return {"role": "user", "content": [{"type": "text", "text": text}, {"type": "image_url", "image_url": {"url": url}}]}
    if fmt == "responses":
        return {"role": "user", "content": [{"type": "input_text", "text": text}, {"type": "input_image", "image_url": url}]}
    if fmt == "anthropic":
        return {"role": "user", "content": [{"type": "text", "text": text}, {"type": "image", "source": {
            "type": "base64", "media_type": "image/png", "data": SHOT}}]}
    if fmt == "bedrock":
        return {"role": "user", "content": [{"text": text}, {"image": {"format": "png", "source": {"bytes": base64.b64decode(SHOT)}}}]}
    if fmt == "gemini":
        return {"role": "user", "parts": [{"text": text}, {"inlineData": {"mimeType": "image/png", "data": SHOT}}]}
    return {"role": "user", "content": text, "images": [SHOT]}


def browsing(fmt: str) -> list[dict[str, Any]]:
    """A browser agent with no tool calls: each action answered by the page's text and a
    screenshot; the newest page is short."""
    def said(role: str, text: str) -> dict[str, Any]:
        if fmt == "gemini":
            return {"role": "model" if role == "assistant" else role, "parts": [{"text": text}]}
        return {"role": role, "content": [{"text": text}] if fmt == "bedrock" else text}

    h = [said("user", "Find the cheapest item and add it to the cart.")]
    for k in range(6):
        h += [said("assistant", f"Action: scroll(page={k})"),
              observation(fmt, f"Observation {k}:\n" + (PAGE if k < 5 else "a short page"))]
    return h


def words_of(m: dict[str, Any]) -> str:
    body = m.get("content", m.get("parts"))
    return body if isinstance(body, str) else "\n".join(p.get("text", "") for p in body)


@pytest.mark.parametrize("fmt", OBS_FORMATS)
def test_an_old_pages_text_beside_its_screenshot_is_masked_on_its_own(fmt):
    # The page's text was never masked (its message is no plain text), only the screenshot:
    # masking freed under 5% of the history and the compaction was skipped.
    h = browsing(fmt)
    before = copy.deepcopy(h)
    whole = cf.estimate(h, provider=PROVIDER[fmt])
    r = cf.Compactor(budget=whole // 4, provider=PROVIDER[fmt], strategy="mask").compact(h)
    assert h == before
    assert r.strategy_used == "mask" and r.tokens_after <= whole // 4
    old = r.messages[2]
    text = words_of(old)
    assert text.startswith("Observation 0:\n[output pruned to save context: 4") and "$1,7" not in text
    assert "[image omitted: 1280x800]" in text and not shows(old)
    if fmt == "ollama":
        assert old["images"] == []
    else:
        assert problems(list(r.messages), fmt) == []
    assert r.messages[-1] == h[-1], "the newest page stays whole"


@pytest.mark.parametrize("fmt", OBS_FORMATS)
def test_the_recall_gives_back_an_old_pages_text(fmt):
    h = browsing(fmt)
    c = cf.Compactor(budget=cf.estimate(h, provider=PROVIDER[fmt]) // 4, provider=PROVIDER[fmt],
                     strategy="mask", recoverable=True)
    r = c.compact(h)
    text = words_of(r.messages[2])
    assert text.startswith("[folded observation") and not shows(r.messages[2])
    fold = text.split("id=")[1].split(",")[0]
    page = "Observation 0:\n" + PAGE
    # (Ollama's text and images go in one edit: the recall gives back both.)
    assert c.recall(fold) == (page + "\n[image, base64]\n" + SHOT if fmt == "ollama" else page)
