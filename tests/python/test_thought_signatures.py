"""Gemini thought signatures: billed by their shape, and a bare Gemini 3 name's serving platform
settled by them, the same way in every entry point.

The shapes are those of the recorded signatures (src/message.rs, `ThoughtSignatures`): the
Gemini API's Gemini 3 signatures open with protobuf field 2 (base64 `E...`), Vertex AI's with
field 1 (`C...`), as do Gemini 2.x signatures on either platform.
"""

from __future__ import annotations

import base64
import json
import random
import re
import statistics

import pytest

import contextfold as cf
from transcripts import LOCAL, SHARED, estimate_request, load_requests, shared_available

# Tokens per base64 character of a Gemini API signature (GEMINI_SIGNATURE_PER_CHAR, fitted on
# the 46 gemini-3 requests of ../shared/data/pydantic-ai with signatures and no media).
PER_CHAR = 0.197

TOOLS = [{"name": "get_file", "description": "Read a file of the workspace",
          "parametersJsonSchema": {"type": "object", "properties": {"path": {"type": "string"}},
                                   "required": ["path"]}}]


def _signature(first: int, n: int, seed: int = 0) -> bytes:
    """Protobuf-shaped bytes: a length-delimited field opening with tag byte `first`."""
    body = random.Random(seed).randbytes(n)
    return bytes([first, 0x80 | (n & 0x7F), n >> 7]) + body


def gemini_api_sig(n: int = 3000, seed: int = 0) -> str:
    return base64.b64encode(_signature(0x12, n, seed)).decode()


def vertex_sig(n: int = 3000, seed: int = 0) -> str:
    return base64.b64encode(_signature(0x0A, n, seed)).decode()


def history(sig: str | bytes | None, *, snake: bool = False, rounds: int = 2) -> list[dict]:
    call_key, resp_key, sig_key = (("function_call", "function_response", "thought_signature") if snake
                                   else ("functionCall", "functionResponse", "thoughtSignature"))
    out: list[dict] = [{"role": "user", "parts": [{"text": "Read README.md and say what the project does."}]}]
    for k in range(rounds):
        part: dict = {call_key: {"name": "get_file", "args": {"path": f"README{k}.md"}}}
        if sig is not None:
            part[sig_key] = sig
        out.append({"role": "model", "parts": [part]})
        out.append({"role": "user", "parts": [{resp_key: {"name": "get_file", "response": {
            "output": "contextfold keeps agent conversations inside their context window. " * 5}}}]})
    return out


def est(messages, model, tools=TOOLS):
    return cf.estimate(messages, provider="gemini", model=model, tools=tools)


def test_gemini_api_signatures_are_billed_by_their_length():
    sig = gemini_api_sig()
    with_sig = est(history(sig), "gemini-3-flash-preview")
    without = est(history(None), "gemini-3-flash-preview")
    assert abs((with_sig - without) - 2 * PER_CHAR * len(sig)) <= 2
    # Named for the Gemini API, the same price.
    assert with_sig == est(history(sig), "gemini/gemini-3-flash-preview")


def test_vertex_signatures_are_free_and_settle_a_bare_name_on_vertex():
    sig = vertex_sig()
    bare = est(history(sig), "gemini-3-flash-preview")
    named = est(history(sig), "vertex_ai/gemini-3-flash-preview")
    assert bare == named
    # Vertex does not bill them: the same history without signatures, named for Vertex.
    assert named == est(history(None), "vertex_ai/gemini-3-flash-preview")
    # And Vertex prices declarations and function turns lower than the Gemini API.
    assert bare < est(history(None), "gemini-3-flash-preview")


def test_gemini_2_signatures_do_not_say_vertex():
    # Gemini 2.x signatures open with field 1 on the Gemini API too: no platform is read off them,
    # and they are not billed.
    sig = vertex_sig()
    assert est(history(sig), "gemini-2.5-flash") == est(history(None), "gemini-2.5-flash")
    assert est(history(sig), "gemini-2.5-flash") > est(history(None), "vertex_ai/gemini-2.5-flash")


def test_a_history_without_signatures_keeps_the_gemini_api_price():
    assert est(history(None), "gemini-3-flash-preview") == est(history(None), "gemini/gemini-3-flash-preview")


def test_sdk_bytes_signatures_cost_what_their_base64_costs():
    raw = _signature(0x12, 3000)
    as_bytes = history(raw, snake=True)
    as_text = history(base64.b64encode(raw).decode(), snake=True)
    assert est(as_bytes, "gemini-3-flash-preview") == est(as_text, "gemini-3-flash-preview")
    raw_v = _signature(0x0A, 3000)
    assert est(history(raw_v, snake=True), "gemini-3-flash-preview") == est(
        history(raw_v, snake=True), "vertex_ai/gemini-3-flash-preview")


def test_a_signature_that_is_not_text_names_its_message_and_field():
    bad = history("x")
    bad[3]["parts"][0]["thoughtSignature"] = 17
    with pytest.raises(cf.InvalidMessageError) as e:
        est(bad, "gemini-3-flash-preview")
    assert e.value.index == 3
    assert "parts[0].thoughtSignature" in e.value.field


@pytest.mark.parametrize("sig", [gemini_api_sig(), vertex_sig()], ids=["gemini-api", "vertex"])
def test_every_entry_point_prices_a_settled_history_alike(sig):
    model = "gemini-3-flash-preview"
    ms = history(sig, rounds=6)
    total = est(ms, model)
    each = cf.estimate_each(ms, provider="gemini", model=model)
    overhead_settled = total - sum(each)
    # The overhead (the declarations) is priced after the history settled the platform.
    named = "vertex_ai/" + model if sig.startswith("C") else model
    assert overhead_settled == cf.request_overhead(provider="gemini", model=named, tools=TOOLS)
    assert cf.breakdown(ms, provider="gemini", model=model, tools=TOOLS).total == total
    assert cf.estimate_many([ms, history(None)], provider="gemini", model=model, tools=TOOLS) == [
        total, est(history(None), model)]
    s = cf.Session(provider="gemini", model=model, tools=TOOLS)
    assert s.estimate(ms) == total
    # The session settles on the turn that brings the first signature, as the estimate does.
    s2 = cf.Session(provider="gemini", model=model, tools=TOOLS)
    for k in range(1, len(ms) + 1):
        assert s2.estimate(ms[:k]) == est(ms[:k], model), k
    # The tail walk reads a list backward and any other sequence forward: one answer.
    for budget in (50, 200, 400, 800, 1500):
        kw = dict(budget_tokens=budget, provider="gemini", model=model, protect_first_n=1, min_tail=1)
        assert cf.find_tail_start(ms, **kw) == cf.find_tail_start(tuple(ms), **kw), budget


def test_a_session_settled_on_vertex_is_restored_with_its_pricing():
    model = "gemini-3-flash-preview"
    ms = history(vertex_sig(), rounds=3)
    s = cf.Session(provider="gemini", model=model, tools=TOOLS)
    first = s.estimate(ms)
    s.record_usage({"prompt_tokens": first + 10})
    restored = cf.Session.from_state(s.to_state())
    more = ms + [{"role": "model", "parts": [{"text": "It keeps histories inside the window."}]}]
    assert restored.estimate(more) == s.estimate(more)


def _recorded(root, first: str, *, vertex: bool) -> list:
    out = []
    for r in load_requests(root):
        if r.has_image or (r.provider == "google-vertex") != vertex or not r.provider.startswith("google"):
            continue
        sigs = re.findall(r'"thought_?[sS]ignature": "([^"]*)"', json.dumps(r.messages))
        if sigs and all(s.startswith(first) for s in sigs) and r.model.startswith("gemini-3"):
            out.append(r)
    return out


@pytest.mark.parametrize("root", [pytest.param(LOCAL, id="tests-data"), pytest.param(SHARED, id="shared-data")])
def test_recorded_gemini_api_histories_with_signatures_are_no_longer_under_counted(root):
    if root == SHARED and not shared_available():
        pytest.skip(f"full transcripts not found at {SHARED}")
    # Before signatures were read, these requests were estimated at a median 0.26x their usage
    # (74% under): a Gemini 3 agent's history looked a quarter of its real size.
    rs = _recorded(root, "E", vertex=False)
    assert len(rs) >= 10
    ratios = [estimate_request(cf, r) / r.usage for r in rs]
    assert 0.85 <= statistics.median(ratios) <= 1.15, statistics.median(ratios)


def test_recorded_vertex_histories_price_as_their_platform_named():
    if not shared_available():
        pytest.skip(f"full transcripts not found at {SHARED}")
    rs = _recorded(SHARED, "C", vertex=True)
    assert len(rs) >= 20
    for r in rs:
        assert estimate_request(cf, r) == estimate_request(cf, r, name_platform=True), r.source


@pytest.mark.parametrize("sig", [gemini_api_sig(), vertex_sig()], ids=["gemini-api", "vertex"])
def test_the_compactor_measures_before_and_after_as_the_estimate_does(sig):
    model = "gemini-3-flash-preview"
    ms = history(sig, rounds=40)
    total = est(ms, model)
    r = cf.Compactor(provider="gemini", model=model, tools=TOOLS, budget=total // 3,
                     context_window=1_000_000).compact(ms)
    assert r.tokens_before == total
    assert r.strategy_used is not None and r.tokens_after <= total // 3
    assert r.tokens_after == est(r.messages, model)
