"""prune in all five wire formats: the same dialogue masked the same way, edits in each format.

A real tau-bench-airline trajectory (OpenAI tool calls) is rewritten as OpenAI chat, Responses
items, Anthropic Messages, Gemini contents and Bedrock Converse (``wire_shapes.convert``); pruned
at three tail budgets, every shape masks the same tool results and saves about the same share.
Hypothesis then prunes random dialogues in every shape, as dicts and as SDK objects, and checks
the edit contract: no new key, never larger, calls still paired, arguments still JSON.
"""

from __future__ import annotations

import base64
import copy
import json
import struct
import zlib
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import contextfold as cf
from transcripts import LOCAL, SHARED, load_conversations, shared_available
from wire_shapes import PROVIDER, SHAPES, arguments, convert, result_texts

ROOTS = [pytest.param(LOCAL, id="tests-data"), pytest.param(SHARED, id="shared-data")]
BUDGETS = (500, 2_000, 5_000)


def masking(history: list, shape: str, budget: int) -> tuple[list[str], float, float]:
    """Call ids whose results were masked, and the token and byte savings (fractions)."""
    out = cf.prune(history, protect_tail_tokens=budget, tool_result_max_tokens=100)
    before, after = result_texts(history, shape), result_texts(out, shape)
    masked = sorted(k for k in before if before[k] != after[k])
    tokens = 1 - cf.estimate(out) / cf.estimate(history)
    size = 1 - cf.wire_bytes(out) / cf.wire_bytes(history)
    return masked, tokens, size


@pytest.mark.parametrize("root", ROOTS)
def test_the_same_trajectory_in_five_shapes_is_masked_alike(root):
    """Same decisions up to results priced across the threshold: a Gemini response is a JSON
    object holding the text, whose escaping costs more tokens (measured on the 149 shared
    conversations: 4.4% of masked results differ in Gemini shape, 0.8-0.9% in the others; 5.3%
    and 2.5% on the subset in tests/data. Gemini's share rose from 2% when the text weights
    learned that an escape is a token of its own: the escaped copy is priced closer to what it
    costs, so more results sit across the threshold in one shape and not the other)."""
    if root == SHARED and not shared_available():
        pytest.skip(f"full transcripts not found at {SHARED}")
    convs = load_conversations(root, "tau-bench-airline")
    assert convs
    differ = {s: 0 for s in SHAPES[1:]}
    union = {s: 0 for s in SHAPES[1:]}
    savings: dict[tuple[str, int], list[float]] = {}
    for conv in convs:
        for budget in BUDGETS:
            chat_masked, chat_tokens, _ = masking(conv["messages"], "openai", budget)
            savings.setdefault(("openai", budget), []).append(chat_tokens)
            for shape in SHAPES[1:]:
                masked, tokens, _ = masking(convert(conv["messages"], shape), shape, budget)
                differ[shape] += len(set(masked) ^ set(chat_masked))
                union[shape] += len(set(masked) | set(chat_masked))
                savings.setdefault((shape, budget), []).append(tokens)
    for shape in SHAPES[1:]:
        assert union[shape] > len(convs)  # results were masked at all
        assert differ[shape] <= (0.06 if shape == "gemini" else 0.03) * union[shape], (shape, differ[shape], union[shape])
        for budget in BUDGETS:
            mean = sum(savings[(shape, budget)]) / len(convs)
            chat = sum(savings[("openai", budget)]) / len(convs)
            # (Each share is priced by its own family's estimate: Anthropic's prices the masked
            # JSON lower against the rest than o200k does. Largest gap measured: 0.021 on the
            # subset in tests/data at a tail of 500 tokens, Anthropic and Bedrock; 0.016 before
            # texts of up to 1 KiB were read whole.)
            assert abs(mean - chat) < 0.025, (shape, budget, mean, chat)


def test_each_shape_keeps_its_own_result_field():
    """The regressions of the issue: Responses outputs masked in `output` (no stray `content`,
    no KeyError on long arguments), Gemini / Bedrock results replaced, not grown."""
    convs = load_conversations(LOCAL, "tau-bench-airline")
    conv = max(convs, key=lambda c: len(c["messages"]))
    for shape in SHAPES:
        h = convert(conv["messages"], shape)
        out = cf.prune(h, protect_tail_tokens=500, tool_result_max_tokens=100, arguments_max_chars=64)
        assert cf.wire_bytes(out) < 0.8 * cf.wire_bytes(h), shape
        texts = result_texts(out, shape)
        assert any("returned" in t for t in texts.values()), shape
        if shape == "responses":
            outputs = [m for m in out if m.get("type") == "function_call_output"]
            assert all(set(m) == {"type", "call_id", "output"} for m in outputs)
        if shape == "gemini":
            responses = [p["functionResponse"]["response"] for m in out for p in m["parts"] if "functionResponse" in p]
            assert any(set(r) == {"output"} for r in responses)
        if shape == "bedrock":
            results = [p["toolResult"] for m in out if isinstance(m["content"], list) for p in m["content"] if "toolResult" in p]
            assert all(set(r) == {"toolUseId", "content"} for r in results)


# --- the edit contract on generated dialogues ------------------------------------------------


def _png(width: int, height: int) -> str:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    raw = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
    raw += chunk(b"IDAT", b"\0" * 3000) + chunk(b"IEND", b"")
    return "data:image/png;base64," + base64.b64encode(raw).decode()


words = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=60)


@st.composite
def dialogues(draw) -> list[dict]:
    """A chat-format dialogue: text turns, parallel tool calls with results, images."""
    msgs: list[dict] = [{"role": "system", "content": "be brief"}, {"role": "user", "content": draw(words) or "task"}]
    n = 0
    for _ in range(draw(st.integers(0, 12))):
        kind = draw(st.sampled_from(["user", "assistant", "calls", "calls", "image"]))
        if kind in ("user", "assistant"):
            msgs.append({"role": kind, "content": draw(words) or "ok"})
        elif kind == "image":
            msgs.append({"role": "user", "content": [{"type": "text", "text": "see"}, {"type": "image_url", "image_url": {"url": _png(640, 480)}}]})
        else:
            k = draw(st.integers(1, 3))
            ids = [f"call_{n}_{j}" for j in range(k)]
            n += 1
            body = draw(words)
            calls = [
                {"id": i, "type": "function", "function": {"name": f"tool_{j}", "arguments": json.dumps({"q": body * draw(st.integers(1, 80)), "j": j})}}
                for j, i in enumerate(ids)
            ]
            msgs.append({"role": "assistant", "content": None, "tool_calls": calls})
            for i in ids:
                msgs.append({"role": "tool", "tool_call_id": i, "content": (draw(words) + " result ") * draw(st.integers(1, 200))})
    return msgs


def as_sdk(history: list[dict], shape: str) -> list[Any]:
    """Assistant turns as the SDK objects a client returns (where the SDK has them)."""
    if shape == "openai":
        from openai.types.chat import ChatCompletionMessage

        return [ChatCompletionMessage.model_validate(m) if m["role"] == "assistant" and m.get("tool_calls") else m for m in history]
    if shape == "responses":
        from openai.types.responses import ResponseFunctionToolCall

        return [ResponseFunctionToolCall.model_validate(m) if m.get("type") == "function_call" else m for m in history]
    if shape == "anthropic":
        from anthropic.types import TextBlock, ToolUseBlock

        def block(b: dict) -> Any:
            return ToolUseBlock.model_validate(b) if b["type"] == "tool_use" else TextBlock.model_validate(b) if b["type"] == "text" else b

        return [
            {"role": m["role"], "content": [block(b) for b in m["content"]]} if m["role"] == "assistant" and isinstance(m["content"], list) else m
            for m in history
        ]
    return history  # Gemini and Bedrock requests are plain dicts


PAYLOAD_KEYS = {"input", "args", "response", "arguments", "output"}
TEXT_PART = {
    "openai": {"type": "text"},
    "responses": {"type": "input_text"},
    "anthropic": {"type": "text"},
    "gemini": {},
    "bedrock": {},
}


def _plain(v: Any) -> Any:
    return v.model_dump(mode="json", exclude_none=True) if hasattr(v, "model_dump") else v


def _is_image(p: dict) -> bool:
    return p.get("type") in ("image_url", "input_image", "image") or "inlineData" in p or "image" in p


def assert_no_new_keys(shape: str, old: Any, new: Any, path: str = "") -> None:
    old, new = _plain(old), _plain(new)
    if isinstance(old, dict) and isinstance(new, dict):
        if _is_image(old) and not _is_image(new):
            assert set(new) == {"text", *TEXT_PART[shape]} and all(new[k] == v for k, v in TEXT_PART[shape].items()), (path, new)
            return
        assert set(new) <= set(old), (path, set(new) - set(old))
        for k, v in new.items():
            if k not in PAYLOAD_KEYS:
                assert_no_new_keys(shape, old[k], v, f"{path}.{k}")
    elif isinstance(old, list) and isinstance(new, list):
        assert len(old) == len(new), path
        for i, (a, b) in enumerate(zip(old, new)):
            assert_no_new_keys(shape, a, b, f"{path}[{i}]")
    elif isinstance(old, list) and isinstance(new, str):
        assert shape == "anthropic" and path.endswith(".content"), path  # a tool_result's text
    else:
        assert type(old) is type(new), (path, old, new)


SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@SETTINGS
@given(dialogues(), st.sampled_from(SHAPES), st.booleans(), st.integers(0, 4_000), st.integers(64, 600))
def test_prune_keeps_every_shape_valid_and_never_grows(chat, shape, sdk, budget, max_args):
    history = convert(chat, shape)
    if sdk:
        history = as_sdk(history, shape)
    before = copy.deepcopy([_plain(m) for m in history])
    provider = PROVIDER[shape]
    out = cf.prune(history, protect_tail_tokens=budget, provider=provider, tool_result_max_tokens=50, arguments_max_chars=max_args)
    assert [_plain(m) for m in history] == before  # the caller's history is untouched
    # The core's copy-on-write shares every message no edit touched: a message comes back as a
    # new object only when an edit changed it.
    assert len(out) == len(history)
    edited = {i for i, (a, b) in enumerate(zip(history, out)) if a is not b}
    assert all(_plain(out[i]) != _plain(history[i]) for i in edited)
    for a, b in zip(history, out):
        assert_no_new_keys(shape, a, b)
    assert cf.wire_bytes(out) <= cf.wire_bytes(history)
    assert cf.estimate(out, provider=provider) <= cf.estimate(history, provider=provider)
    assert set(result_texts(out, shape)) == set(result_texts(history, shape))  # every result kept
    args = arguments(out, shape)  # parses every arguments payload
    assert set(args) == set(arguments(history, shape))
    for a in args.values():
        assert isinstance(a, dict)


# --- a history that changes while it is read -------------------------------------------------


class Shrinking:
    """An SDK-like message whose `content` property trims the caller's list when read."""

    def __init__(self, victim: list) -> None:
        self.victim = victim
        self.role = "user"

    @property
    def content(self) -> str:
        del self.victim[2:]
        return "hello"


def test_a_history_trimmed_while_read_is_an_error_or_a_consistent_answer_never_a_panic():
    errors = 0
    for k in range(1, 30):
        msgs: list = [{"role": "system", "content": "s"}]
        for j in range(30):
            msgs.append({"role": "user", "content": "word " * 50})
        msgs[k] = Shrinking(msgs)
        try:
            start = cf.find_tail_start(msgs, budget_tokens=300)
        except RuntimeError as e:
            assert "changed" in str(e)
            errors += 1
        else:
            assert 0 <= start <= 31
        msgs2: list = [{"role": "user", "content": "x"}] * 5 + [Shrinking([])]
        cf.prune(msgs2, protect_tail_tokens=10)
    # Read from the end: a trim found inside the walked window is reported (it used to panic
    # in a slice copy), one beyond it is never seen.
    assert errors > 0


class Mutating:
    """A value whose JSON dump changes the dict that holds it."""

    def __init__(self, owner: dict) -> None:
        self.owner = owner

    def model_dump(self, **_: Any) -> dict:
        self.owner.clear()
        self.owner.update({f"k{i}": i for i in range(50)})
        return {"changed": True}


def test_a_dict_changed_by_its_own_values_while_serialized_is_read_without_a_panic():
    schema: dict = {"type": "object"}
    schema["x"] = Mutating(schema)
    tools = [{"type": "function", "function": {"name": "f", "parameters": schema}}]
    assert cf.request_overhead(tools=tools) > 0
    block: dict = {"type": "tool_use", "id": "t", "name": "f", "input": {}}
    block["input"]["v"] = Mutating(block["input"])
    assert cf.estimate([{"role": "assistant", "content": [block]}]) > 0


class Exploding:
    def model_dump(self, **_: Any) -> dict:
        raise KeyError("boom")


def test_errors_in_tools_and_system_name_them_and_chain_the_cause():
    tools = [{"type": "function", "function": {"name": "ok"}}, {"type": "function", "function": {"name": "bad", "parameters": Exploding()}}]
    with pytest.raises(TypeError, match=r"tools\[1\]") as e:
        cf.estimate([{"role": "user", "content": "hi"}] * 3, tools=tools)
    assert isinstance(e.value.__cause__, KeyError)
    with pytest.raises(TypeError, match=r"tools\[0\]\.function\.name"):
        cf.estimate([{"role": "user", "content": "hi"}], tools=[{"type": "function", "function": {"name": 5}}])
    with pytest.raises(TypeError, match="system"):
        cf.estimate([{"role": "user", "content": "hi"}] * 3, system=5)


# --- detection: one implementation (the core's), seen from every Python caller -----------------

_SHAPE_FORMAT = {"openai": "chat", "responses": "responses", "anthropic": "anthropic", "gemini": "gemini", "bedrock": "bedrock"}


@pytest.mark.parametrize("shape", SHAPES)
def test_each_format_of_a_real_trajectory_is_detected(shape):
    conv = max(load_conversations(LOCAL, "tau-bench-airline"), key=lambda c: len(c["messages"]))
    msgs = convert(conv["messages"], shape)
    fmt = _SHAPE_FORMAT[shape]
    assert cf._core.detect_wire_format(msgs) == fmt
    assert cf.detect_wire_format(msgs) == cf.detect_wire_format(msgs, "anthropic") == fmt
    from contextfold.inputs import read_request

    assert read_request(msgs).provider == {"gemini": "gemini", "anthropic": "anthropic"}.get(fmt, "openai")


# The first message that shows a format decides; each entry is the smallest such message.
SMALLEST = [
    ({"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}, "chat"),
    ({"role": "tool", "tool_call_id": "c1", "content": "ok"}, "chat"),
    ({"role": "user", "content": [{"type": "image_url", "image_url": {"url": "https://x/a.png"}}]}, "chat"),
    ({"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"}, "responses"),
    ({"type": "function_call_output", "call_id": "c1", "output": "ok"}, "responses"),
    ({"role": "user", "content": [{"type": "input_text", "text": "hi"}]}, "responses"),
    ({"role": "user", "content": [{"type": "input_file", "file_id": "file-1"}]}, "responses"),
    ({"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {}}]}, "anthropic"),
    ({"role": "assistant", "content": [{"type": "thinking", "thinking": "hm", "signature": "c2ln"}]}, "anthropic"),
    ({"role": "user", "content": [{"type": "image", "source": {"type": "file", "file_id": "file_1"}}]}, "anthropic"),
    ({"role": "user", "content": [{"type": "document", "source": {"type": "file", "file_id": "file_1"}}]}, "anthropic"),
    ({"role": "user", "parts": [{"text": "hi"}]}, "gemini"),
    ({"role": "model", "parts": [{"function_call": {"name": "f", "args": {}}}]}, "gemini"),
    ({"role": "user", "content": [{"text": "hi"}]}, "bedrock"),
    ({"role": "assistant", "content": [{"toolUse": {"toolUseId": "t1", "name": "f", "input": {}}}]}, "bedrock"),
]


@pytest.mark.parametrize(("message", "fmt"), SMALLEST)
def test_the_first_message_that_shows_a_format_decides(message, fmt):
    plain = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]
    assert cf._core.detect_wire_format([*plain, message]) == fmt
    assert cf.detect_wire_format([*plain, message, *plain]) == fmt


@pytest.mark.parametrize("history", [[], [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}],
                                     [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]])
def test_ambiguous_and_empty_histories_fall_back_to_the_provider(history):
    """Plain text messages (and typed `text` parts, which chat and Anthropic share) show no format."""
    assert cf._core.detect_wire_format(history) is None
    assert cf.detect_wire_format(history) == cf.detect_wire_format(history, "gemini") == "chat"
    assert cf.detect_wire_format(history, "anthropic") == "anthropic"
    from contextfold.inputs import read_request

    assert read_request(history).provider == "openai"


def test_detection_reads_only_until_a_message_decides_and_names_a_bad_one():
    decided = [{"role": "user", "parts": [{"text": "hi"}]}]
    # Message 1 is not a message at all: never read once message 0 decided.
    assert cf._core.detect_wire_format([*decided, 42]) == "gemini"
    with pytest.raises(cf.InvalidMessageError) as e:
        cf._core.detect_wire_format([{"role": "user", "content": "hi"}, {"role": "user", "content": 3}, *decided])
    assert (e.value.index, e.value.field) == (1, "content")
    for bad in ("hello", {"role": "user", "content": "hi"}):
        with pytest.raises(TypeError, match="list of messages"):
            cf._core.detect_wire_format(bad)  # type: ignore[arg-type]
