"""The estimator's contract: whole envelopes, images by pixels, errors that say where, no mutation."""

from __future__ import annotations

import base64
import copy
import json
import struct

import pytest

import contextfold as cf
from contextfold import InvalidMessageError


def png(width: int, height: int, payload: int = 0) -> bytes:
    ihdr = struct.pack(">II", width, height) + bytes([8, 6, 0, 0, 0])
    return b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + b"IHDR" + ihdr + b"\0" * 4 + b"\x11" * payload


def data_url(raw: bytes, mime: str = "image/png") -> str:
    return f"data:{mime};base64," + base64.b64encode(raw).decode()


CALL = {
    "id": "call_2IDxBAleIuZyViB5UVOapbQA",
    "type": "function",
    "function": {"name": "get_reservation_details", "arguments": '{"reservation_id":"AQLBTL"}'},
}


def test_tool_call_envelope_counts_more_than_content_plus_arguments():
    # Four short parallel calls are mostly envelope (names, syntax, and ids where the
    # model sees them). OpenAI bills the batch as one `multi_tool_use.parallel` call (count_each:
    # 102 tokens, ids not billed); the generic profile prices the JSON envelope, ids included.
    msg = {"role": "assistant", "content": None, "tool_calls": [CALL] * 4}
    args_only = cf.estimate_each([{"role": "assistant", "content": CALL["function"]["arguments"] * 4}])[0]
    assert cf.estimate_each([msg])[0] > 2.5 * args_only
    assert cf.estimate_each([msg])[0] >= 0.8 * cf.count_each([msg], model="gpt-4o")[0]
    assert cf.estimate_each([msg], provider="openai-compatible")[0] > 5 * args_only


def test_estimate_is_sum_of_each_plus_one_overhead():
    msgs = [{"role": "user", "content": "hi there"}, {"role": "assistant", "content": None, "tool_calls": [CALL]}]
    tools = [{"type": "function", "function": {"name": "f", "description": "d", "parameters": {"type": "object"}}}]
    for provider in cf.PROVIDERS:
        each = cf.estimate_each(msgs, provider=provider)
        over = cf.request_overhead(provider=provider, tools=tools, system="be brief")
        assert cf.estimate(msgs, provider=provider, tools=tools, system="be brief") == sum(each) + over


def test_tools_and_system_raise_the_estimate_through_the_overhead():
    msgs = [{"role": "user", "content": "weather?"}]
    tools = [{"name": "get_weather", "description": "Weather of a city", "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}]
    base = cf.estimate(msgs, provider="anthropic")
    assert cf.estimate(msgs, provider="anthropic", tools=tools) > base + 100  # hidden tool-use prompt
    assert cf.estimate(msgs, provider="anthropic", system="x " * 100) > base + 50


def test_an_openai_history_without_a_model_prices_its_tools_as_an_openai_model_renders_them():
    # The 14 tau-bench airline tools: the OpenAI constants priced their JSON at 1,591 tokens
    # where gpt-4o renders 1,375; every OpenAI chat model since gpt-4o is o200k, as the text of
    # a model-less OpenAI history is already priced.
    from transcripts import LOCAL, load_conversations

    tools = load_conversations(LOCAL, "tau-bench-airline")[0]["tools"]
    msgs = [{"role": "user", "content": "Hi, I need to change my flight."}]
    for model in (None, "gpt-6-preview"):  # no model, and a name no tokenizer table knows yet
        tokens = cf.estimate(msgs, provider="openai", model=model, tools=tools)
        assert abs(tokens - cf.count(msgs, model="gpt-4o", tools=tools)) <= 5
        assert tokens == cf.estimate(msgs, provider="openai", model="gpt-4o", tools=tools)


def test_image_costs_its_pixels_not_its_base64_length():
    small = data_url(png(1024, 1024))
    huge = data_url(png(1024, 1024, payload=3_000_000))
    part = lambda url: [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": url, "detail": "high"}}]}]
    assert cf.estimate_each(part(small), model="gpt-4o") == cf.estimate_each(part(huge), model="gpt-4o")
    assert cf.image_tokens(huge, model="gpt-4o", detail="high") == 765
    assert cf.image_tokens(png(1024, 1024), model="gpt-4o", detail="low") == 85
    assert cf.image_tokens(small, provider="anthropic") == 1369  # ceil(1024/28)^2
    assert cf.image_tokens(small, provider="gemini") == 4 * 258


def test_gemini_3_prices_images_returned_in_function_responses():
    # Gemini 3 multimodal function responses carry media in `functionResponse.parts`; the
    # recorded requests bill each image 1,088 tokens (1,102 for a PNG) on both platforms.
    image = {"inlineData": {"mimeType": "image/png", "data": base64.b64encode(png(64, 64)).decode()}}

    def history(with_image: bool, key: str = "functionResponse") -> list:
        response = {"name": "get_image", "response": {"return_value": "see the image"}}
        if with_image:
            response["parts"] = [image]
        return [
            {"role": "user", "parts": [{"text": "Call get_image."}]},
            {"role": "model", "parts": [{"functionCall": {"name": "get_image", "args": {}}}]},
            {"role": "user", "parts": [{key: response}]},
        ]

    for model, price in [("gemini-3-flash-preview", 1088), ("gemini-2.5-flash", 258)]:
        with_image = cf.estimate(history(True), provider="gemini", model=model)
        assert with_image - cf.estimate(history(False), provider="gemini", model=model) == price, model
    snake = cf.estimate(history(True, "function_response"), provider="gemini", model="gemini-3-flash-preview")
    assert snake == cf.estimate(history(True), provider="gemini", model="gemini-3-flash-preview")
    # Pruning masks such a result whole, its image said by its size (not dropped silently).
    later = [{"role": r, "parts": [{"text": "more " * 50}]} for r in ("model", "user") * 2]
    pruned = cf.prune(
        history(True) + later,
        provider="gemini",
        model="gemini-3-flash-preview",
        protect_tail_tokens=0,
        protect_first_n=0,
        min_tail=1,
        tool_result_max_tokens=10,
    )
    masked = pruned[2]["parts"][0]["functionResponse"]
    assert masked["name"] == "get_image" and "parts" not in masked
    assert masked["response"]["output"].endswith("[image omitted: 64x64]")


def test_anthropic_image_block_and_url_default_are_bounded():
    raw = png(1920, 1080, payload=2_000_000)
    block = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": base64.b64encode(raw).decode()}}
    msgs = [{"role": "user", "content": [block]}]
    assert cf.estimate_each(msgs, provider="anthropic")[0] < 1600
    url = [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}]}]
    assert 0 < cf.estimate_each(url, model="gpt-4o")[0] < 2000


def test_image_size_reads_headers_only():
    assert cf.image_size(data_url(png(640, 480))) == (640, 480)
    assert cf.image_size(b"not an image") is None


def test_anthropic_blocks_are_priced():
    msgs = [
        {"role": "user", "content": "what's the weather in Paris?"},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "I should call the tool. " * 20, "signature": "EqQBCgIYAhIM" * 30},
            {"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9", "name": "get_weather", "input": {"city": "Paris"}},
        ]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01A09q90qw90lq917835lq9", "content": "15 degrees, sunny " * 10}]},
    ]
    each = cf.estimate_each(msgs, provider="anthropic")
    assert each[1] > 80 and each[2] > 40


def test_responses_items_and_gemini_parts_are_read():
    items = [
        {"role": "user", "content": [{"type": "input_text", "text": "hi"}]},
        {"type": "function_call", "call_id": "call_1", "name": "f", "arguments": '{"q":"x"}'},
        {"type": "function_call_output", "call_id": "call_1", "output": "result " * 50},
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "thought"}], "encrypted_content": "gAAAA" * 100},
    ]
    each = cf.estimate_each(items)
    assert each[2] > 50 and all(e > 0 for e in each)
    gemini = [{"role": "model", "parts": [{"functionCall": {"name": "f", "args": {"q": "x"}}}]}, {"role": "user", "parts": [{"text": "ok " * 30}]}]
    assert all(e > 0 for e in cf.estimate_each(gemini, provider="gemini"))


def test_sdk_objects_cost_the_same_as_dicts():
    openai_types = pytest.importorskip("openai.types.chat")
    from openai.types.chat.chat_completion_message_tool_call import ChatCompletionMessageToolCall, Function

    sdk = openai_types.ChatCompletionMessage(
        role="assistant",
        content=None,
        tool_calls=[ChatCompletionMessageToolCall(id=CALL["id"], type="function", function=Function(**CALL["function"]))],
    )
    as_dict = {"role": "assistant", "content": None, "tool_calls": [CALL]}
    assert cf.estimate_each([sdk]) == cf.estimate_each([as_dict])

    anthropic_types = pytest.importorskip("anthropic.types")
    blocks = [anthropic_types.TextBlock(type="text", text="calling"), anthropic_types.ToolUseBlock(type="tool_use", id="toolu_1", name="f", input={"a": 1})]
    sdk_msg = {"role": "assistant", "content": blocks}
    dict_msg = {"role": "assistant", "content": [{"type": "text", "text": "calling"}, {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"a": 1}}]}
    assert cf.estimate_each([sdk_msg], provider="anthropic") == cf.estimate_each([dict_msg], provider="anthropic")


@pytest.mark.parametrize(
    ("messages", "index", "field"),
    [
        ([{"role": "user", "content": "ok"}, "not a message"], 1, ""),
        ([{"role": "user", "content": 42}], 0, "content"),
        ([{"role": "user", "content": "a"}, {"role": "assistant", "tool_calls": [{"id": "c", "type": "function"}]}], 1, "tool_calls[0].function"),
        ([{"role": "user", "content": [{"type": "image_url", "image_url": {"detail": "high"}}]}], 0, "content[0].image_url.url"),
        ([{"role": 7, "content": "x"}], 0, "role"),
        ([{"content": "no role and no type"}], 0, "role"),
        ([{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x", "detail": "ultra"}}]}], 0, "content[0].image_url.detail"),
    ],
)
def test_invalid_message_names_index_and_field(messages, index, field):
    for fn in (cf.estimate, cf.estimate_each, cf.wire_bytes):
        with pytest.raises(InvalidMessageError) as e:
            fn(messages)
        assert e.value.index == index and e.value.field == field
        assert isinstance(e.value, ValueError)
        assert f"message {index}" in str(e.value)


def test_wrong_container_and_options_raise_clear_errors():
    with pytest.raises(TypeError):
        cf.estimate("hello")
    with pytest.raises(ValueError, match="openai, anthropic, gemini"):
        cf.estimate([], provider="openia")
    with pytest.raises(ValueError, match="detail"):
        cf.image_tokens(png(1, 1), detail="ultra")


def test_input_is_never_mutated():
    msgs = [
        {"role": "system", "content": "sys"},
        {"role": "assistant", "content": None, "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": CALL["id"], "content": "out"},
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": data_url(png(10, 10))}}]},
    ]
    before = copy.deepcopy(msgs)
    ids = [id(m) for m in msgs]
    cf.estimate(msgs, tools=[{"type": "function", "function": {"name": "f"}}])
    cf.estimate_each(msgs)
    cf.wire_bytes(msgs)
    assert msgs == before and [id(m) for m in msgs] == ids


def test_wire_bytes_is_the_compact_json_body():
    msgs = [
        {"role": "user", "content": 'quote " backslash \\ newline \n tab \t ctl \x01 é 中 😀'},
        {"role": "assistant", "content": None, "tool_calls": [CALL], "n": 3, "t": 0.1, "ok": True},
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": data_url(png(100, 100, payload=5000))}}]},
    ]
    expected = len(json.dumps(msgs, separators=(",", ":"), ensure_ascii=False).encode())
    assert cf.wire_bytes(msgs) == expected


def test_big_image_counts_in_wire_bytes_but_not_in_tokens():
    # Two notions of size: wire bytes and context tokens.
    msgs = [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": data_url(png(2000, 1500, payload=2_300_000))}}]}]
    assert cf.wire_bytes(msgs) > 3_000_000
    assert cf.estimate(msgs, model="gpt-4o") < 2_000


def test_cjk_and_code_are_denser_than_prose():
    prose = "The agent reads the file and then writes a short summary of what it found. " * 20
    cjk = "上下文窗口管理是智能体系统中的一个重要问题。" * 20
    per_char = lambda s: cf.estimate_each([{"role": "user", "content": s}])[0] / len(s)
    assert per_char(cjk) > 2 * per_char(prose)


def test_lone_surrogates_do_not_crash():
    assert cf.estimate([{"role": "user", "content": "bad \ud800 text"}]) > 0


def test_hostile_nesting_raises_instead_of_overflowing_the_stack():
    inner: list = [{"type": "text", "text": "x"}]
    for _ in range(100_000):
        inner = [{"type": "tool_result", "tool_use_id": "t", "content": inner}]
    with pytest.raises(InvalidMessageError):
        cf.estimate([{"role": "user", "content": inner}], provider="anthropic")
    deep: dict = {}
    for _ in range(10_000):
        deep = {"a": deep}
    msg = {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": deep}]}
    with pytest.raises(ValueError):
        cf.estimate([msg], provider="anthropic")


def test_a_gemini_system_instruction_content_is_read_as_its_parts_text():
    # google-genai's GenerateContentConfig takes the system instruction as a Content object;
    # passed as system= it was refused ("system must be a string or a list of text blocks").
    from google.genai import types

    history = [{"role": "user", "parts": [{"text": "What is the capital of France?"}]}]
    text = "You are a terse geography tutor.\nAnswer in one word."
    want = cf.estimate(history, provider="gemini", system=text)
    as_dict = {"role": "user", "parts": [{"text": "You are a terse geography tutor."}, {"text": "Answer in one word."}]}
    as_sdk = types.Content(parts=[types.Part(text="You are a terse geography tutor."), types.Part(text="Answer in one word.")])
    assert cf.estimate(history, provider="gemini", system=as_dict) == want
    assert cf.estimate(history, provider="gemini", system=as_sdk) == want
    c = cf.Compactor(provider="gemini", budget=10_000, system=as_sdk)
    assert c.compact(history).tokens_before == want
    with pytest.raises(TypeError, match=r"system\.parts\[0\]"):
        cf.estimate(history, provider="gemini", system={"parts": [3]})
