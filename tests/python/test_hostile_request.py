"""Hostile request bodies, usages and session states: each names what is wrong (a ``ValueError``
whose ``.field`` is the body's field, an ``InvalidUsageError`` with its ``.path``) or reads as
the same content passed plainly. Pins the fixes of the request-body fuzz pass
(docs/hostile-input.md, "Request bodies and sessions")."""

from __future__ import annotations

import copy
import pickle
import types
from typing import Any

import pytest

import contextfold as cf
from contextfold._core import ExactLedger
from contextfold.usage import usage_of

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


@pytest.mark.parametrize("usage", [
    {"prompt_tokens": 1200, "prompt_tokens_details": {"cached_tokens": 1024}},
    {"input_tokens": 100, "cache_read_input_tokens": 1000, "cache_creation_input_tokens": 100},
    {"usage": {"inputTokens": 1100, "cacheReadInputTokens": 100, "cacheWriteInputTokens": 0}},
    {"usageMetadata": {"promptTokenCount": 1200, "cachedContentTokenCount": 1024}},
], ids=["openai", "anthropic", "bedrock", "gemini"])
def test_a_usage_given_as_a_mapping_that_is_not_a_dict_reads_as_the_dict_it_holds(usage: dict[str, Any]) -> None:
    def proxy(v: Any) -> Any:
        return types.MappingProxyType({k: proxy(x) for k, x in v.items()}) if isinstance(v, dict) else v

    # Was: TypeError "unrecognized usage object: mappingproxy"; a mapping of details read as 0 cached.
    assert usage_of(proxy(usage)) == usage_of(usage)
    s = cf.Session(model="gpt-4o")
    s.estimate(USER)
    assert s.record_usage(proxy(usage)) == usage_of(usage).prompt_tokens


@pytest.mark.parametrize("usage,path", [
    ({"usageMetadata": 1200}, "usage.usageMetadata"),
    ({"usageMetadata": "1200"}, "usage.usageMetadata"),
    ({"prompt_tokens": 1200, "prompt_tokens_details": {"cached_tokens": 2**70}}, "usage.prompt_tokens_details.cached_tokens"),
    ({"input_tokens": 1200, "input_tokens_details": {"cache_write_tokens": 2**63}}, "usage.input_tokens_details.cache_write_tokens"),
    (-3, "usage"),
], ids=["gemini metadata int", "gemini metadata str", "cached 2**70", "cache write 2**63", "negative int"])
def test_a_damaged_usage_is_an_invalid_usage_error_and_records_nothing(usage: Any, path: str) -> None:
    # Was: None (nothing recorded, no error) for Gemini metadata that is no object; a cache
    # count of 2**70 recorded in last_usage_detail; a bare ValueError without .path for -3.
    s = cf.Session(model="gpt-4o")
    s.estimate(USER)
    with pytest.raises(cf.InvalidUsageError) as e:
        s.record_usage(usage)
    assert e.value.path == path
    assert s.usages == 0 and s.last_usage is None and s.last_usage_detail is None


def test_a_session_from_a_body_keeps_its_settings_tokens_across_a_state_round_trip() -> None:
    body = {"model": "claude-sonnet-4-5", "max_tokens": 64, "thinking": {"type": "enabled", "budget_tokens": 1024},
            "tool_choice": {"type": "any"}, "tools": [{"name": "get_weather", "input_schema": SCHEMA}],
            "messages": copy.deepcopy(USER)}
    s = cf.Session.from_request(body)
    want = cf.estimate_request(body)
    assert s.estimate(body["messages"]) == want
    # Was: 135 tokens fewer (thinking + the forced tool) once restored in another process.
    assert cf.Session.from_state(s.to_state()).estimate(body["messages"]) == want
    assert pickle.loads(pickle.dumps(s)).estimate(body["messages"]) == want
    # A usage carries them from then on, restored or not.
    s.record_usage({"input_tokens": 900, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0})
    assert cf.Session.from_state(s.to_state()).estimate(body["messages"]) == 900


def test_a_response_model_holding_a_lone_surrogate_is_recorded_with_u_fffd_in_its_place() -> None:
    # A server's text cut mid-character: a JSON "\ud83d" escape decodes to a lone surrogate.
    s = cf.Session(model="gpt-4o")
    s.estimate(USER)
    # Was: a bare UnicodeEncodeError out of record_usage (and out of Session(model=...), the
    # model setter, provider= and text_encoding=).
    assert s.record_usage({"model": "gpt-4o\ud83d", "usage": {"prompt_tokens": 120}}) == 120
    assert s.estimate(USER) == 120
    s.model = "gpt-4.1\ud800"
    assert s.model == "gpt-4.1\ufffd"
    assert cf.Session(model="gpt-4o\ud800", exact=True).estimate(USER) == cf.count(USER, model="gpt-4o")
    with pytest.raises(ValueError, match="unknown provider"):
        cf.estimate_request({"model": "gpt-4o", "messages": USER}, provider="open\ud800ai")
    with pytest.raises(ValueError, match="unknown text_encoding"):
        cf.Session(text_encoding="o200k\ud800")


@pytest.mark.parametrize("exact", [False, True])
def test_a_session_history_that_is_not_a_sequence_is_a_type_error_naming_messages(exact: bool) -> None:
    s = cf.Session(model="gpt-4o", exact=exact)
    # Was: "'int' object is not iterable".
    for bad in (5, None, 2.5):
        with pytest.raises(TypeError, match=f"messages must be a list of messages, got {type(bad).__name__}"):
            s.estimate(bad)  # type: ignore[arg-type]
    s.estimate(USER)
    with pytest.raises(TypeError, match="messages must be a list of messages, got int"):
        s.record_usage(10, messages=5)  # type: ignore[arg-type]
    assert s.usages == 0
    # A generator is read as the list it yields.
    assert s.estimate(m for m in USER) == s.estimate(USER)


def test_an_exact_session_given_a_generator_counts_its_messages_not_an_empty_history() -> None:
    want = cf.count(USER, model="gpt-4o")
    # A window whose trigger (90%) the turn reaches, and an empty history does not.
    s = cf.Session(model="gpt-4o", exact=True, max_request_bytes=10**6, context_window=want + 1, output_reserve=0)
    assert s.trigger_tokens == int((want + 1) * 0.9) < want
    # Was: 3 (the ledger spent the generator; the exact count read it empty), and no compaction.
    assert s.estimate(m for m in USER) == want
    assert s.estimate(iter(USER)) == want
    assert s.should_compact(m for m in USER) is True


# ----- left by the pass, fixed after it -------------------------------------------------------

IMAGE_URL = "https://example.com/cat.png"
IMAGE_MSGS = [{"role": "user", "content": [{"type": "text", "text": "what is this?"},
                                           {"type": "image_url", "image_url": {"url": IMAGE_URL}}]}]


def test_a_history_that_is_no_iterable_is_named_by_every_reader() -> None:
    # Was: "'int' object is not iterable" from estimate and count (the Session's readers named it).
    for call in (lambda: cf.estimate(5), lambda: cf.count(5, model="gpt-4o"),  # type: ignore[arg-type]
                 lambda: cf.estimate_each(None)):  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="messages must be a list of messages, got (int|NoneType)"):
            call()


def test_image_sizes_take_a_pair_as_a_list_and_refuse_bools() -> None:
    # A JSON cache of sizes gives lists back; (True, True) is no size (was: read as 1 x 1).
    want = cf.estimate(IMAGE_MSGS, model="gpt-4o", image_sizes={IMAGE_URL: (512, 512)})
    assert cf.estimate(IMAGE_MSGS, model="gpt-4o", image_sizes={IMAGE_URL: [512, 512]}) == want
    assert want != cf.estimate(IMAGE_MSGS, model="gpt-4o")
    for bad in ((True, True), [512, True], (512,), [512, 512, 3], "512x512"):
        with pytest.raises(TypeError, match=r'image_sizes\["https://example.com/cat.png"\] must be \(width, height\)'):
            cf.estimate(IMAGE_MSGS, model="gpt-4o", image_sizes={IMAGE_URL: bad})


def test_an_unknown_model_name_is_quoted_cut_in_its_error() -> None:
    # Was: the whole name quoted (a 100,000-character name made a 100,157-character message).
    with pytest.raises(cf.UnknownModelError) as e:
        cf.count(USER, model="y" * 100_000)
    assert len(str(e.value)) < 400 and "100000 bytes in all" in str(e.value)


@pytest.mark.parametrize("bad", [None, 7, "get_weather"])
def test_a_tool_that_is_no_definition_is_a_type_error_from_every_counter(bad: Any) -> None:
    # Pricing None or a bare name as its JSON billed a tool of no name the caller never meant;
    # the estimate and the exact counters refuse it alike, naming the index.
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": SCHEMA}}, bad]
    for call in (
        lambda: cf.estimate(USER, model="gpt-4o", tools=tools),
        lambda: cf.count(USER, model="gpt-4o", tools=tools),
        lambda: cf.count_many([USER], model="gpt-4o", tools=tools),
        lambda: ExactLedger(model="gpt-4o", tools=tools),
    ):
        with pytest.raises(TypeError, match=r"tools\[1\]: a tool definition must be a dict"):
            call()
