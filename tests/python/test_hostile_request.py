"""Hostile request bodies, usages and session states: each names what is wrong (a ``ValueError``
whose ``.field`` is the body's field, an ``InvalidUsageError`` with its ``.path``) or reads as
the same content passed plainly. Pins the fixes of the request-body fuzz pass
(docs/hostile-input.md, "Request bodies and sessions")."""

from __future__ import annotations

import copy
from typing import Any

import pytest

import contextfold as cf

SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
USER = [{"role": "user", "content": "Weather in Paris?"}]


def _cycle() -> dict[str, Any]:
    d: dict[str, Any] = {"type": "object"}
    d["properties"] = {"again": d}
    return d


def _chat(**kw: Any) -> dict[str, Any]:
    return {"model": "gpt-4o", "messages": copy.deepcopy(USER),
            "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": copy.deepcopy(SCHEMA)}}],
            **kw}


def _responses(**kw: Any) -> dict[str, Any]:
    return {"model": "gpt-4.1", "input": copy.deepcopy(USER),
            "tools": [{"type": "function", "name": "get_weather", "parameters": copy.deepcopy(SCHEMA)}], **kw}


def _field_of(call: Any, body: Any) -> str:
    with pytest.raises(ValueError) as e:
        call(body)
    assert not isinstance(e.value, cf.InvalidMessageError)
    field = e.value.field  # type: ignore[attr-defined]
    assert str(e.value).startswith(f"{field}: ")
    return str(field)


CALLS = [cf.read_request, cf.estimate_request, cf.breakdown_request, cf.count_request, cf.Session.from_request]


def _bodies_with_a_cycle() -> list[tuple[str, dict[str, Any], str]]:
    chat_tool = _chat()
    chat_tool["tools"][0]["function"]["parameters"] = _cycle()
    chat_format = _chat(response_format={"type": "json_schema", "json_schema": {"name": "w", "schema": _cycle()}})
    resp_format = _responses(text={"format": {"type": "json_schema", "name": "w", "schema": _cycle()}})
    anth = {"model": "claude-sonnet-4-5", "max_tokens": 9, "messages": copy.deepcopy(USER),
            "tools": [{"name": "a", "input_schema": SCHEMA}, {"name": "b", "input_schema": _cycle()}]}
    gemini = {"model": "gemini-2.5-flash", "contents": "hi",
              "tools": [{"googleSearch": {}}, {"functionDeclarations": [{"name": "a"}, {"name": "b", "parameters": _cycle()}]}]}
    bedrock = {"modelId": "anthropic.claude-3-haiku", "messages": [{"role": "user", "content": [{"text": "hi"}]}],
               "toolConfig": {"tools": [{"cachePoint": {"type": "default"}},
                                        {"toolSpec": {"name": "t", "inputSchema": {"json": _cycle()}}}]}}
    return [("chat tool", chat_tool, "tools[0]"), ("chat format", chat_format, "response_format"),
            ("responses format", resp_format, "text"), ("anthropic tool", anth, "tools[1]"),
            ("gemini declaration", gemini, "tools[1].functionDeclarations[1]"),
            ("bedrock tool", bedrock, "toolConfig.tools[1]")]


@pytest.mark.parametrize("name,body,field", _bodies_with_a_cycle(), ids=[n for n, _, _ in _bodies_with_a_cycle()])
def test_a_tool_or_format_that_contains_itself_is_a_value_error_naming_the_body_field(
        name: str, body: dict[str, Any], field: str) -> None:
    # Was: "a container that contains itself (cycle) at $.type.self" (read_request; no field,
    # no tool named), "tools[1]: could not be read: ..." (estimate_request: the index in the
    # flattened Gemini / Bedrock list, no .field).
    for call in CALLS:
        if call is cf.count_request and not name.startswith(("chat", "responses")):
            continue
        if call is cf.read_request and field.startswith(("tools", "toolConfig")):
            # The reader checks a tool's name; its schema is serialized once, by the estimate.
            assert cf.read_request(body).tool_fields[-1] == field
            continue
        # The exact count finds the cycle itself, at the container met again.
        named = _field_of(call, body)
        assert named == field or call is cf.count_request and named.startswith(f"{field}."), (call, named)


def test_a_value_the_exact_count_cannot_render_is_a_value_error_naming_the_body_field() -> None:
    # Was: a bare TypeError (bytes, an object) or a ValueError without .field, naming
    # `response_format.format...` for a Responses body whose field is `text`.
    chat = _chat()
    chat["tools"][0]["function"]["parameters"] = b"\x00binary"
    assert _field_of(cf.count_request, chat) == "tools[0].function.parameters"
    resp = _responses(text={"format": {"type": "json_schema", "name": "w", "schema": SCHEMA, "strict": object()}})
    assert _field_of(cf.count_request, resp) == "text.format.strict"
    deep: Any = "x"
    for _ in range(300):
        deep = [deep]
    chat = _chat(response_format={"type": "json_schema", "json_schema": {"name": "w", "schema": {"enum": deep}}})
    assert _field_of(cf.count_request, chat).startswith("response_format.json_schema.schema.enum[0]")
    # What the estimate reads it still prices.
    assert cf.estimate_request(resp) > 0
    no_model = _chat()
    del no_model["model"]
    assert _field_of(cf.count_request, no_model) == "model"
