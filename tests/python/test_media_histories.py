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
