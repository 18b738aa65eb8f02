"""hypothesis over the Python API: generated histories in every wire format (OpenAI chat,
OpenAI Responses items, Anthropic, Gemini, Bedrock Converse), malformed ones included. Every
public call (``reliability_support.CALLS``) returns or raises a typed error naming the message
index and field, and the caller's data deep-compares equal before and after every call."""

from __future__ import annotations

import math
import string

import contextfold as cf
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reliability_support import CALLS, ESTIMATE_CALLS, call_all

# Text with everything a caller may hold: lone surrogates, NUL, escapes, JSON look-alikes.
any_char = st.characters(codec=None, categories=None)
texts = st.one_of(
    st.text(any_char, max_size=40),
    st.sampled_from(["", "{}", '{"a": 1', "[1,2", "NaN", "\0", "\ud800", '{"x": 1e400}', '{"k":1,"k":2}']),
    st.text(string.printable, min_size=100, max_size=300),
)
ids = st.sampled_from(["call_1", "call_2", "toolu_1", "", "call_1 "])
scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=True, allow_infinity=True), texts)
json_values = st.recursive(scalars, lambda c: st.one_of(st.lists(c, max_size=4), st.dictionaries(texts, c, max_size=4)), max_leaves=12)
junk = st.one_of(st.none(), st.integers(), st.floats(), st.binary(max_size=8), st.lists(st.integers(), max_size=2),
                 st.dictionaries(st.text(max_size=3), st.integers(), max_size=2), st.booleans(), texts)
b64 = st.sampled_from(["iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
                       "iVBORw0KGgoAAAANSUhEUgAAAAE", "!!!", "", "R0lGODlhAQABAAAAACw="])


def openai_message():
    part = st.one_of(
        st.fixed_dictionaries({"type": st.just("text"), "text": texts}),
        st.fixed_dictionaries({"type": st.just("image_url"), "image_url": st.fixed_dictionaries(
            {"url": b64.map(lambda d: "data:image/png;base64," + d) | texts},
            optional={"detail": st.sampled_from(["low", "high", "auto", "weird"])})}),
        st.fixed_dictionaries({"type": st.just("input_audio"), "input_audio": st.fixed_dictionaries({"data": b64, "format": st.sampled_from(["wav", "mp3"])})}),
    )
    call = st.fixed_dictionaries({"id": ids, "type": st.just("function"), "function": st.fixed_dictionaries(
        {"name": texts, "arguments": texts | json_values.map(str)})})
    return st.one_of(
        st.fixed_dictionaries({"role": st.sampled_from(["system", "developer", "user", "assistant"]), "content": texts | st.lists(part, max_size=3)},
                              optional={"name": texts}),
        st.fixed_dictionaries({"role": st.just("assistant"), "content": st.none() | texts, "tool_calls": st.lists(call, max_size=3)}),
        st.fixed_dictionaries({"role": st.just("tool"), "tool_call_id": ids, "content": texts}),
    )


def responses_item():
    return st.one_of(
        st.fixed_dictionaries({"type": st.just("message"), "role": st.sampled_from(["user", "assistant", "system"]),
                               "content": st.lists(st.fixed_dictionaries({"type": st.sampled_from(["input_text", "output_text"]), "text": texts}), max_size=3)}),
        st.fixed_dictionaries({"type": st.just("function_call"), "call_id": ids, "name": texts, "arguments": texts}),
        st.fixed_dictionaries({"type": st.just("function_call_output"), "call_id": ids, "output": texts}),
        st.fixed_dictionaries({"type": st.just("reasoning"), "summary": st.lists(st.fixed_dictionaries({"type": st.just("summary_text"), "text": texts}), max_size=2),
                               "encrypted_content": texts}),
    )


def anthropic_message():
    block = st.one_of(
        st.fixed_dictionaries({"type": st.just("text"), "text": texts}),
        st.fixed_dictionaries({"type": st.just("tool_use"), "id": ids, "name": texts, "input": st.dictionaries(texts, json_values, max_size=3)}),
        st.fixed_dictionaries({"type": st.just("tool_result"), "tool_use_id": ids, "content": texts | st.lists(st.fixed_dictionaries({"type": st.just("text"), "text": texts}), max_size=2)}),
        st.fixed_dictionaries({"type": st.just("image"), "source": st.fixed_dictionaries({"type": st.just("base64"), "media_type": st.sampled_from(["image/png", "image/gif", "text/plain"]), "data": b64})}),
        st.fixed_dictionaries({"type": st.just("thinking"), "thinking": texts, "signature": texts}),
    )
    return st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant"]), "content": texts | st.lists(block, max_size=3)})


def gemini_content():
    part = st.one_of(
        st.fixed_dictionaries({"text": texts}),
        st.fixed_dictionaries({"functionCall": st.fixed_dictionaries({"name": texts, "args": st.dictionaries(texts, json_values, max_size=3)})}),
        st.fixed_dictionaries({"functionResponse": st.fixed_dictionaries({"name": texts, "response": st.dictionaries(texts, json_values, max_size=3)})}),
        st.fixed_dictionaries({"inlineData": st.fixed_dictionaries({"mimeType": st.sampled_from(["image/png", "audio/wav", "application/pdf"]), "data": b64})}),
    )
    return st.fixed_dictionaries({"role": st.sampled_from(["user", "model"]), "parts": st.lists(part, max_size=3)})


def bedrock_message():
    block = st.one_of(
        st.fixed_dictionaries({"text": texts}),
        st.fixed_dictionaries({"toolUse": st.fixed_dictionaries({"toolUseId": ids, "name": texts, "input": st.dictionaries(texts, json_values, max_size=3)})}),
        st.fixed_dictionaries({"toolResult": st.fixed_dictionaries({"toolUseId": ids, "content": st.lists(st.fixed_dictionaries({"text": texts}), max_size=2),
                                                                    "status": st.sampled_from(["success", "error"])})}),
        st.fixed_dictionaries({"image": st.fixed_dictionaries({"format": st.sampled_from(["png", "jpeg"]), "source": st.fixed_dictionaries({"bytes": st.binary(max_size=64)})})}),
    )
    return st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant"]), "content": st.lists(block, max_size=3)})


FORMATS = {
    "openai": openai_message(),
    "responses": responses_item(),
    "anthropic": anthropic_message(),
    "gemini": gemini_content(),
    "bedrock": bedrock_message(),
}


@st.composite
def corrupt(draw, message_strategy):
    """A message of the format with, sometimes, one field (at any depth) replaced by junk."""
    m = draw(message_strategy)
    if draw(st.booleans()):
        return m
    target, key = m, None
    for _ in range(draw(st.integers(0, 3))):
        if isinstance(target, dict) and target:
            key = draw(st.sampled_from(sorted(target, key=repr)))
            if isinstance(target[key], (dict, list)) and target[key] and draw(st.booleans()):
                target = target[key]
                key = None
        elif isinstance(target, list) and target:
            i = draw(st.integers(0, len(target) - 1))
            if isinstance(target[i], (dict, list)) and target[i]:
                target = target[i]
    if isinstance(target, dict) and target:
        target[key if key is not None else draw(st.sampled_from(sorted(target, key=repr)))] = draw(junk)
    elif isinstance(target, list) and target:
        target[draw(st.integers(0, len(target) - 1))] = draw(junk)
    return m


def histories(fmt: str):
    return st.lists(corrupt(FORMATS[fmt]), max_size=6)


def check_results(ms: list, results: dict) -> None:
    for name, r in results.items():
        if not isinstance(r, BaseException):
            continue
        assert isinstance(r, cf.InvalidMessageError), f"{name}: {type(r).__name__}: {r}"
        assert 0 <= r.index < len(ms), (name, r.index)
        assert isinstance(r.field, str)
    ok = [r for r in results.values() if not isinstance(r, BaseException)]
    for r in ok:
        assert r is not None


SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@SETTINGS
@given(histories("openai"))
def test_openai_chat_histories(ms):
    check_results(ms, call_all(ms))


@SETTINGS
@given(histories("responses"))
def test_responses_items(ms):
    check_results(ms, call_all(ms, ESTIMATE_CALLS))


@SETTINGS
@given(histories("anthropic"))
def test_anthropic_histories(ms):
    check_results(ms, call_all(ms, ESTIMATE_CALLS))


@SETTINGS
@given(histories("gemini"))
def test_gemini_histories(ms):
    check_results(ms, call_all(ms, ESTIMATE_CALLS))


@SETTINGS
@given(histories("bedrock"))
def test_bedrock_histories(ms):
    check_results(ms, call_all(ms, ESTIMATE_CALLS))


@SETTINGS
@given(st.lists(st.one_of(*FORMATS.values()), max_size=6))
def test_mixed_formats_in_one_history(ms):
    check_results(ms, call_all(ms, ESTIMATE_CALLS))


@settings(max_examples=300, deadline=None)
@given(texts | json_values.map(repr), st.integers(-5, 3000))
def test_shrink_json_returns_json_or_a_typed_error(text, max_chars):
    import json

    try:
        out = cf.shrink_json(text, max_chars=max_chars)
    except (ValueError, TypeError) as e:
        assert max_chars < 64 or isinstance(e, UnicodeEncodeError), e
        return
    json.loads(out)
    assert len(out) <= max(max_chars, 64)
    assert cf.shrink_json(out, max_chars=max_chars) == out
    assert not math.isnan(len(out))
