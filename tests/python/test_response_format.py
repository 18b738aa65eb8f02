"""Structured-output schemas (`response_format=`) in the heuristic estimate: read from every API's
shape, priced for OpenAI models as `count` bills them, the same in every entry point."""

from __future__ import annotations

import statistics

import pytest

import contextfold as cf
from transcripts import LOCAL, SHARED, estimate_request, load_requests, response_format, shared_available

SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "description": "The city's name"},
        "country": {"type": "string"},
        "population": {"type": "integer"},
    },
    "required": ["city", "country", "population"],
    "additionalProperties": False,
}
CHAT = {"type": "json_schema", "json_schema": {"name": "CityInfo", "strict": True, "schema": SCHEMA}}
RESPONSES_FORMAT = {"type": "json_schema", "name": "CityInfo", "strict": True, "schema": SCHEMA}
MESSAGES = [{"role": "system", "content": "Answer with the city asked about."},
            {"role": "user", "content": "Which city is the capital of France?"}]


def overhead(model: str, rf, **kw) -> int:
    return cf.request_overhead(provider="openai", model=model, response_format=rf, **kw) - cf.request_overhead(
        provider="openai", model=model, **kw)


@pytest.mark.parametrize("model", ["gpt-4o", "gpt-4.1-mini", "gpt-5"])
def test_openai_schema_costs_what_count_bills_for_it(model):
    est = cf.estimate(MESSAGES, model=model, response_format=CHAT) - cf.estimate(MESSAGES, model=model)
    exact = cf.count(MESSAGES, model=model, response_format=CHAT) - cf.count(MESSAGES, model=model)
    # `count` joins the schema to the system message, where BPE may merge a token across the
    # seam; the overhead, priced without the messages, counts the seam as one token.
    assert exact > 20 and abs(est - exact) <= 1


def test_every_api_shape_of_the_same_schema_prices_alike():
    base = overhead("gpt-4o", CHAT)
    assert overhead("gpt-4o", RESPONSES_FORMAT) == base
    assert overhead("gpt-4o", {"format": RESPONSES_FORMAT}) == base  # the Responses `text` parameter
    # Without a name (Anthropic `output_format`, a bare schema, Gemini's config) only the
    # heading differs.
    unnamed = overhead("gpt-4o", {"type": "json_schema", "schema": SCHEMA})
    assert unnamed == overhead("gpt-4o", SCHEMA) == overhead("gpt-4o", {"responseJsonSchema": SCHEMA})
    assert 0 < base - unnamed <= 4


def test_a_pydantic_model_class_stands_for_its_schema():
    pydantic = pytest.importorskip("pydantic")

    class CityInfo(pydantic.BaseModel):
        city: str
        country: str

    assert overhead("gpt-4o", CityInfo) == overhead("gpt-4o", CityInfo.model_json_schema()) > 0


def test_an_sdk_response_format_object_prices_as_its_dict():
    shared = pytest.importorskip("openai.types.shared")
    # The SDK's field is `schema_`, sent as `schema`: read through its wire dict.
    obj = shared.ResponseFormatJSONSchema.model_validate(CHAT)
    assert overhead("gpt-4o", obj) == overhead("gpt-4o", CHAT) > 0


def test_formats_without_a_schema_cost_nothing():
    for rf in ({"type": "json_object"}, {"type": "text"}, {"format": {"type": "text"}},
               {"temperature": 0.2, "responseMimeType": "application/json"}, None):
        assert overhead("gpt-4o", rf) == 0, rf


def test_gemini_does_not_bill_its_response_schema():
    # Measured: the recorded plain Gemini requests with a responseJsonSchema cost their text alone.
    rf = {"responseMimeType": "application/json", "responseJsonSchema": SCHEMA}
    base = cf.request_overhead(provider="gemini", model="gemini-2.5-flash")
    assert cf.request_overhead(provider="gemini", model="gemini-2.5-flash", response_format=rf) == base


def test_beside_tools_the_schema_joins_the_tool_block():
    # Appended to the tool block it opens nothing (exact.rs: +0); appended to the system
    # message it costs 4 more.
    tools = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object", "properties": {}}}}]
    assert overhead("gpt-4o", CHAT, tools=tools) == overhead("gpt-4o", CHAT) - 4
    ms = [*MESSAGES]
    est = cf.estimate(ms, model="gpt-4o", tools=tools, response_format=CHAT) - cf.estimate(ms, model="gpt-4o", tools=tools)
    exact = cf.count(ms, model="gpt-4o", tools=tools, response_format=CHAT) - cf.count(ms, model="gpt-4o", tools=tools)
    assert abs(est - exact) <= 1


def test_a_response_format_that_is_not_a_dict_names_the_argument():
    with pytest.raises(TypeError, match="response_format"):
        cf.estimate(MESSAGES, model="gpt-4o", response_format="json")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="response_format.json_schema.name"):
        cf.estimate(MESSAGES, model="gpt-4o", response_format={"type": "json_schema", "json_schema": {"name": 3, "schema": SCHEMA}})


def test_every_entry_point_prices_the_schema_alike():
    kw = dict(provider="openai", model="gpt-4o", response_format=CHAT)
    total = cf.estimate(MESSAGES, **kw)
    assert cf.breakdown(MESSAGES, **kw).total == total
    assert cf.estimate_many([MESSAGES], **kw) == [total]
    s = cf.Session(**kw)
    assert s.estimate(MESSAGES) == total
    # The schema travels in the session's state.
    restored = cf.Session.from_state(s.to_state())
    assert restored.estimate(MESSAGES + [{"role": "user", "content": "and Italy?"}]) == cf.estimate(
        MESSAGES + [{"role": "user", "content": "and Italy?"}], **kw)
    c = cf.Compactor(**kw, context_window=128_000)
    assert c.session.estimate(MESSAGES) == total


@pytest.mark.parametrize("root", [pytest.param(LOCAL, id="tests-data"), pytest.param(SHARED, id="shared-data")])
def test_recorded_structured_output_requests_are_no_longer_under_counted(root):
    if root == SHARED and not shared_available():
        pytest.skip(f"full transcripts not found at {SHARED}")
    # OpenAI chat.completions requests with a json_schema response_format: a median 71% under
    # while the estimate had no way to be told the schema (shared-data: 70 requests, now -2.2%).
    rs = [r for r in load_requests(root) if r.api == "chat.completions" and r.provider in ("openai", "azure")
          and not r.tools and not r.has_image
          and (response_format(r) or {}).get("type") == "json_schema"]
    assert len(rs) >= 5
    errors = [estimate_request(cf, r) / r.usage - 1 for r in rs]
    assert abs(statistics.median(errors)) <= 0.05, statistics.median(errors)
