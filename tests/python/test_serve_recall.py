"""``contextfold serve --recall``: the proxy offers the model the recall tool with every body that
carries a recoverable fold, answers the model's recall calls itself and returns the model's
final turn to the client. Driven by the real openai, anthropic and google-genai SDKs, plain and
streamed, in front of a loopback upstream scripted as a model that recalls a fold page by page:
the pages put together are the stored original byte for byte, every request the upstream got is
valid for its API, and the client never sees a recall call."""

from __future__ import annotations

import contextlib
import json
import re
from typing import Any

import pytest

pytest.importorskip("starlette", reason="contextfold serve needs its extra: pip install '.[proxy]'")
pytest.importorskip("uvicorn", reason="contextfold serve needs its extra: pip install '.[proxy]'")

import anthropic
import contextfold as cf
import httpx
import openai
from contextfold import _core
from contextfold.recall import RECALL_TOOL
from contextfold.serve.apis import API_BY_NAME
from contextfold.serve.body import scan_body
from contextfold.serve.config import ServeConfig, load_config
from contextfold.serve.fold_cache import Fold
from contextfold.serve.recall_loop import _turn, response_of, stream_response
from contextfold.serve.sse import payload, payloads, split_events, with_payload

from proxy_support import LoopbackHandler, ProxyServer, RecordingUpstream, json_answer, loopback
from transcripts import LOCAL, load_conversations
from wire_shapes import convert

RECALL = RECALL_TOOL
ID = re.compile(r"id=(cf[0-9a-f]{12})")
MORE = re.compile(r"more: offset=(\d+)\]")
#: The scripted model's last words, once it has read a fold to its end.
DONE = "I have read the folded turns again."
#: What it says before each recall call.
INTRO = "Let me look at what was folded. "
SHAPE = {"chat": "openai", "responses": "responses", "anthropic": "anthropic", "gemini": "gemini"}
FORMAT = {"chat": "chat", "responses": "responses", "anthropic": "anthropic", "gemini": "gemini"}


def _conversation() -> list[dict[str, Any]]:
    """A real SWE agent run (tests/data), long enough to compact, in chat format."""
    conv = next(c for c in load_conversations(LOCAL, "mini-swe-agent-gemini3") if len(c["messages"]) >= 40)
    return [dict(m) for m in conv["messages"][:40]]


def _declares(api: str, body: dict[str, Any]) -> int:
    """How many times ``body``'s tools declare the recall tool."""
    tools = body.get("tools") or []
    if api == "gemini":
        return sum(1 for t in tools for f in t.get("functionDeclarations") or () if f.get("name") == RECALL)
    if api == "chat":
        return sum(1 for t in tools if (t.get("function") or {}).get("name") == RECALL)
    return sum(1 for t in tools if t.get("name") == RECALL)


def _last_answer(api: str, body: dict[str, Any]) -> str | None:
    """The text of the recall answer that ends ``body``'s history, or None."""
    history = body[API_BY_NAME[api].history_key]
    last = history[-1]
    if api == "chat":
        return last["content"] if last.get("role") == "tool" else None
    if api == "responses":
        return last["output"] if last.get("type") == "function_call_output" else None
    if api == "anthropic":
        block = (last.get("content") or [{}])[0] if isinstance(last.get("content"), list) else {}
        return block.get("content") if block.get("type") == "tool_result" else None
    part = (last.get("parts") or [{}])[0]
    return (part.get("functionResponse") or {}).get("response", {}).get("output")


def _call(api: str, args: dict[str, Any]) -> Any:
    """The scripted model's turn calling the recall tool with ``args`` (as its API returns it)."""
    arguments = json.dumps(args)
    if api == "chat":
        return {"id": "chatcmpl-r", "object": "chat.completion", "created": 1, "model": "gpt-4o",
                "choices": [{"index": 0, "finish_reason": "tool_calls", "logprobs": None,
                             "message": {"role": "assistant", "content": INTRO, "refusal": None,
                                         "tool_calls": [{"id": "call_r", "type": "function",
                                                         "function": {"name": RECALL, "arguments": arguments}}]}}],
                "usage": {"prompt_tokens": 100, "completion_tokens": 9, "total_tokens": 109}}
    if api == "responses":
        return {"id": "resp_r", "object": "response", "created_at": 1, "status": "completed", "model": "gpt-4o",
                "output": [{"type": "message", "id": "msg_i", "role": "assistant", "status": "completed",
                            "content": [{"type": "output_text", "text": INTRO, "annotations": []}]},
                           {"type": "function_call", "id": "fc_r", "call_id": "call_r", "name": RECALL,
                            "arguments": arguments, "status": "completed"}],
                "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
                "usage": {"input_tokens": 100, "output_tokens": 9, "total_tokens": 109,
                          "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}}}
    if api == "anthropic":
        return {"id": "msg_r", "type": "message", "role": "assistant", "model": "claude-haiku-4-5",
                "content": [{"type": "text", "text": INTRO},
                            {"type": "tool_use", "id": "toolu_r", "name": RECALL, "input": args}],
                "stop_reason": "tool_use", "stop_sequence": None, "usage": {"input_tokens": 100, "output_tokens": 9}}
    return {"candidates": [{"content": {"role": "model", "parts": [{"text": INTRO},
                                                                   {"functionCall": {"name": RECALL, "args": args}}]},
                            "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 100, "candidatesTokenCount": 9, "totalTokenCount": 109}}


def _text(api: str) -> Any:
    """The scripted model's final turn: ``DONE``."""
    if api == "chat":
        return {"id": "chatcmpl-d", "object": "chat.completion", "created": 1, "model": "gpt-4o",
                "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                             "message": {"role": "assistant", "content": DONE, "refusal": None}}],
                "usage": {"prompt_tokens": 100, "completion_tokens": 9, "total_tokens": 109}}
    if api == "responses":
        return {"id": "resp_d", "object": "response", "created_at": 1, "status": "completed", "model": "gpt-4o",
                "output": [{"type": "message", "id": "msg_d", "role": "assistant", "status": "completed",
                            "content": [{"type": "output_text", "text": DONE, "annotations": []}]}],
                "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
                "usage": {"input_tokens": 100, "output_tokens": 9, "total_tokens": 109,
                          "input_tokens_details": {"cached_tokens": 0}, "output_tokens_details": {"reasoning_tokens": 0}}}
    if api == "anthropic":
        return {"id": "msg_d", "type": "message", "role": "assistant", "model": "claude-haiku-4-5",
                "content": [{"type": "text", "text": DONE}], "stop_reason": "end_turn", "stop_sequence": None,
                "usage": {"input_tokens": 100, "output_tokens": 9}}
    return {"candidates": [{"content": {"role": "model", "parts": [{"text": DONE}]}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 100, "candidatesTokenCount": 9, "totalTokenCount": 109}}


def _sse(api: str, response: Any) -> bytes:
    """``response`` as the API streams it (events split the way each API splits them)."""
    def ev(data: Any, name: str | None = None) -> str:
        return (f"event: {name}\n" if name else "") + "data: " + json.dumps(data) + "\n\n"
    if api == "chat":
        msg = response["choices"][0]["message"]
        out = [ev({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o",
                   "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]})]
        if msg.get("content"):
            for piece in (msg["content"][:5], msg["content"][5:]):
                out.append(ev({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o",
                               "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]}))
        for i, tc in enumerate(msg.get("tool_calls") or ()):
            args = tc["function"]["arguments"]
            out.append(ev({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o",
                           "choices": [{"index": 0, "finish_reason": None, "delta": {"tool_calls": [
                               {"index": i, "id": tc["id"], "type": "function",
                                "function": {"name": tc["function"]["name"], "arguments": args[:4]}}]}}]}))
            out.append(ev({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o",
                           "choices": [{"index": 0, "finish_reason": None, "delta": {"tool_calls": [
                               {"index": i, "function": {"arguments": args[4:]}}]}}]}))
        out.append(ev({"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4o",
                       "choices": [{"index": 0, "delta": {}, "finish_reason": response["choices"][0]["finish_reason"]}]}))
        return ("".join(out) + "data: [DONE]\n\n").encode()
    if api == "responses":
        started = {**response, "status": "in_progress", "output": []}
        out = [ev({"type": "response.created", "sequence_number": 0, "response": started}, "response.created"),
               ev({"type": "response.in_progress", "sequence_number": 1, "response": started}, "response.in_progress")]
        for i, item in enumerate(response["output"]):
            n = len(out)
            opened = {**item, "status": "in_progress"}
            if item["type"] == "message":
                opened["content"] = []
            else:
                opened["arguments"] = ""
            out.append(ev({"type": "response.output_item.added", "sequence_number": n, "output_index": i,
                           "item": opened}, "response.output_item.added"))
            if item["type"] == "message":
                text = item["content"][0]["text"]
                out.append(ev({"type": "response.content_part.added", "sequence_number": n + 1, "output_index": i,
                               "item_id": item["id"], "content_index": 0,
                               "part": {"type": "output_text", "text": "", "annotations": []}},
                              "response.content_part.added"))
                out.append(ev({"type": "response.output_text.delta", "sequence_number": n + 2, "output_index": i,
                               "item_id": item["id"], "content_index": 0, "delta": text, "logprobs": []},
                              "response.output_text.delta"))
                out.append(ev({"type": "response.output_text.done", "sequence_number": n + 3, "output_index": i,
                               "item_id": item["id"], "content_index": 0, "text": text, "logprobs": []},
                              "response.output_text.done"))
                out.append(ev({"type": "response.content_part.done", "sequence_number": n + 4, "output_index": i,
                               "item_id": item["id"], "content_index": 0, "part": item["content"][0]},
                              "response.content_part.done"))
            else:
                out.append(ev({"type": "response.function_call_arguments.delta", "sequence_number": n + 1,
                               "output_index": i, "item_id": item["id"], "delta": item["arguments"]},
                              "response.function_call_arguments.delta"))
            out.append(ev({"type": "response.output_item.done", "sequence_number": len(out), "output_index": i,
                           "item": item}, "response.output_item.done"))
        out.append(ev({"type": "response.completed", "sequence_number": len(out), "response": response},
                      "response.completed"))
        return "".join(out).encode()
    if api == "anthropic":
        out = [ev({"type": "message_start", "message": {**response, "content": [], "stop_reason": None}}, "message_start")]
        for i, block in enumerate(response["content"]):
            if block["type"] == "text":
                out.append(ev({"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}},
                              "content_block_start"))
                out.append(ev({"type": "content_block_delta", "index": i,
                               "delta": {"type": "text_delta", "text": block["text"]}}, "content_block_delta"))
            else:
                out.append(ev({"type": "content_block_start", "index": i,
                               "content_block": {**block, "input": {}}}, "content_block_start"))
                text = json.dumps(block["input"])
                for piece in (text[:3], text[3:]):
                    out.append(ev({"type": "content_block_delta", "index": i,
                                   "delta": {"type": "input_json_delta", "partial_json": piece}}, "content_block_delta"))
            out.append(ev({"type": "content_block_stop", "index": i}, "content_block_stop"))
        out.append(ev({"type": "message_delta", "delta": {"stop_reason": response["stop_reason"], "stop_sequence": None},
                       "usage": {"output_tokens": 9}}, "message_delta"))
        out.append(ev({"type": "message_stop"}, "message_stop"))
        return "".join(out).encode()
    # Gemini: a chunk per part (the text, then the call), each a whole response.
    cand = response["candidates"][0]
    return "".join("data: " + json.dumps({**response, "candidates": [{**cand, "content": {"role": "model", "parts": [p]}}]})
                   + "\r\n\r\n" for p in cand["content"]["parts"]).encode()


class ScriptedModel:
    """An upstream that, offered the recall tool, reads the first fold id the request names page
    by page (following each answer's ``more: offset=``; at most ``pages``) and then answers
    ``DONE``; without the tool, or with no id to recall, it answers ``DONE`` at once. ``insist``:
    it calls the tool again whatever the answer said."""

    def __init__(self, api: str, *, stream: bool, pages: int | None = 3, insist: bool = False) -> None:
        self.api, self.stream, self.pages, self.insist = api, stream, pages, insist
        self.recalled: list[str] = []

    def __call__(self, method: str, path: str, raw: bytes) -> tuple[int, dict[str, str], bytes]:
        body = json.loads(raw)
        answer = _last_answer(self.api, body)
        reply = _text(self.api)
        if _declares(self.api, body):
            if answer is None:
                ids = ID.findall(raw.decode("utf-8"))
                if ids:
                    self.recalled.append(ids[0])
                    reply = _call(self.api, {"id": ids[0]})
            elif (more := MORE.search(answer.splitlines()[0])) and (self.pages is None or self.pages > 1):
                reply = _call(self.api, {"id": self.recalled[-1], "offset": int(more.group(1))})
                if self.pages is not None:
                    self.pages -= 1
            elif self.insist:
                reply = _call(self.api, {"id": self.recalled[-1]})
        if self.stream:
            return 200, {"content-type": "text/event-stream"}, _sse(self.api, reply)
        return 200, {"content-type": "application/json"}, json.dumps(reply).encode()


def _send(api: str, url: str, history: list[Any], system: str | None, tools: list[Any], stream: bool) -> str:
    """One turn through the proxy with the API's own SDK; the text of the model's answer."""
    if api in ("chat", "responses"):
        client = openai.OpenAI(base_url=url + "/v1", api_key="sk-test", max_retries=0)
        try:
            if api == "chat":
                out = client.chat.completions.create(model="gpt-4o", messages=history, tools=tools, stream=stream)
                if stream:
                    return "".join((c.choices[0].delta.content or "") for c in out if c.choices)
                return out.choices[0].message.content or ""
            kw: dict[str, Any] = {"instructions": system} if system else {}
            out = client.responses.create(model="gpt-4o", input=history, tools=tools, stream=stream, **kw)
            if stream:
                done = [e for e in out if e.type == "response.completed"]
                return done[-1].response.output_text
            return out.output_text
        finally:
            client.close()
    if api == "anthropic":
        client = anthropic.Anthropic(base_url=url, api_key="sk-ant-test", max_retries=0)
        try:
            kw = {"system": system} if system else {}
            if stream:
                with client.messages.stream(model="claude-haiku-4-5", max_tokens=512, messages=history, tools=tools,
                                            **kw) as s:
                    final = s.get_final_message()
            else:
                final = client.messages.create(model="claude-haiku-4-5", max_tokens=512, messages=history,
                                               tools=tools, **kw)
            return "".join(b.text for b in final.content if b.type == "text")
        finally:
            client.close()
    genai = pytest.importorskip("google.genai", reason="google-genai not installed")
    from google.genai import types

    client = genai.Client(api_key="AIza-test", http_options=types.HttpOptions(base_url=url, api_version="v1beta"))
    try:
        config = types.GenerateContentConfig(tools=tools, system_instruction=system,
                                             automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True))
        if stream:
            return "".join(c.text or "" for c in client.models.generate_content_stream(
                model="gemini-2.5-flash", contents=history, config=config))
        return client.models.generate_content(model="gemini-2.5-flash", contents=history, config=config).text or ""
    finally:
        client.close()


def _tools(api: str) -> list[Any]:
    """One tool of the client's own (the SWE agent's shell), in the API's format."""
    params = {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}
    if api == "chat":
        return [{"type": "function", "function": {"name": "bash", "description": "Run a command.", "parameters": params}}]
    if api == "responses":
        return [{"type": "function", "name": "bash", "description": "Run a command.", "parameters": params}]
    if api == "anthropic":
        return [{"name": "bash", "description": "Run a command.", "input_schema": params}]
    return [{"functionDeclarations": [{"name": "bash", "description": "Run a command.", "parameters": params}]}]


def _setup(api: str) -> tuple[list[Any], str | None, int]:
    """The run in the API's shape, its system prompt apart (all but chat) and a budget that
    makes the proxy fold it."""
    src = _conversation()
    system = None
    if api != "chat" and src[0].get("role") == "system":
        system, src = src[0]["content"], src[1:]
    history = convert(src, SHAPE[api])
    full = cf.estimate(history, provider=API_BY_NAME[api].provider)
    return history, system, max(2_000, full // 3)


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("api", ["chat", "responses", "anthropic", "gemini"])
def test_the_proxy_answers_the_models_recall_calls_and_the_pages_are_the_original_byte_for_byte(api, stream):
    history, system, budget = _setup(api)
    model = ScriptedModel(api, stream=stream)
    # (The gate at twice the budget, as the proxy's default: the room for the rounds between.)
    cfg = ServeConfig(budget=budget, trigger=budget * 2, recall=True, recall_rounds=64)
    with RecordingUpstream(model) as up, ProxyServer(ServeConfig(upstream=up.url, **{
            k: getattr(cfg, k) for k in ("budget", "trigger", "recall", "recall_rounds")})) as proxy:
        text = _send(api, proxy.url, history, system, _tools(api), stream)
        # The client gets the model's final turn; the recall rounds stayed behind the proxy (a
        # stream sends the text of each round as it came, then the final turn's).
        assert text == (INTRO * 3 + DONE if stream else DONE)
        seen = [json.loads(s.raw) for s in up.seen]
        assert len(seen) >= 2 and model.recalled, "the model was not offered a fold to recall"
        first = seen[0]
        assert _declares(api, first) == 1  # the recall tool beside the client's own, once
        store = proxy.proxy.folder.store
        original = store.get(model.recalled[0])
        assert original is not None
        pages = [a.split("\n", 1)[1] for s in seen[1:] if (a := _last_answer(api, s)) is not None]
        assert len(pages) == len(seen) - 1 == 3
        joined = "".join(pages)
        assert joined == original[: len(joined)]  # page after page, byte for byte
        # Every request the upstream got is one the API accepts: calls with their results.
        fmt = FORMAT[api]
        for body in seen:
            msgs = body[API_BY_NAME[api].history_key]
            _, failures = _core.compaction_verify(msgs, _core.PricedRequest(format=fmt))
            assert failures == [], failures
            # The client's history is sent as a prefix of every round's.
            assert msgs[: len(first[API_BY_NAME[api].history_key])] == first[API_BY_NAME[api].history_key]
        metrics = httpx.get(proxy.url + "/metrics").text
        assert f'contextfold_recall_rounds_total{{api="{api}"}} {len(pages)}' in metrics


def test_a_span_recalled_through_the_proxy_is_the_clients_own_messages():
    history, system, budget = _setup("chat")
    model = ScriptedModel("chat", stream=False)
    with RecordingUpstream(model) as up, ProxyServer(ServeConfig(upstream=up.url, budget=budget, trigger=int(budget * 1.3),
                                                                 recall=True, recall_rounds=64)) as proxy:
        assert _send("chat", proxy.url, history, system, _tools("chat"), False) == DONE
        store = proxy.proxy.folder.store
        spans = [t for i in set(ID.findall(up.seen[0].raw.decode())) if (t := store.get(i)) and t.startswith("[")]
        assert spans, "no folded span among the fold's ids"
        for text in spans:
            # A folded span comes back as the messages the client sent, each one whole.
            assert all(m in history for m in json.loads(text))


@pytest.mark.parametrize("insist", [False, True])
def test_once_its_rounds_are_spent_the_model_is_told_so_and_one_that_insists_gets_its_turn_back(insist):
    history, system, budget = _setup("chat")
    model = ScriptedModel("chat", stream=False, pages=None, insist=insist)
    with RecordingUpstream(model) as up, ProxyServer(ServeConfig(upstream=up.url, budget=budget, trigger=int(budget * 1.3),
                                                                 recall=True, recall_rounds=1)) as proxy:
        client = openai.OpenAI(base_url=proxy.url + "/v1", api_key="sk-test", max_retries=0)
        raw = client.chat.completions.with_raw_response.create(model="gpt-4o", messages=history, tools=_tools("chat"))
        client.close()
        assert raw.headers["x-contextfold-recall-rounds"] == "1" and raw.headers["x-contextfold-recall-spent"] == "1"
        # One page, then (the fold being longer) a call answered with the note.
        assert len(up.seen) == 3
        note = _last_answer("chat", json.loads(up.seen[2].raw))
        assert note is not None and "no more recall in this request" in note
        message = raw.parse().choices[0].message
        if insist:
            assert message.tool_calls[0].function.name == RECALL  # told once; its turn is the client's
        else:
            assert message.content == DONE


def test_pages_stop_where_the_room_under_the_gate_ends_and_the_note_follows():
    history, system, budget = _setup("chat")
    model = ScriptedModel("chat", stream=False, pages=None)
    # The gate a few pages (a tenth of the budget each) above the budget.
    trigger = int(budget * 1.3)
    with RecordingUpstream(model) as up, ProxyServer(ServeConfig(upstream=up.url, budget=budget, trigger=trigger,
                                                                 recall=True, recall_rounds=50)) as proxy:
        assert _send("chat", proxy.url, history, system, _tools("chat"), False) == DONE
        bodies = [json.loads(s.raw) for s in up.seen]
        answers = [_last_answer("chat", b) for b in bodies[1:]]
        assert len(answers) >= 2 and all(a is not None for a in answers)
        assert all("no more recall" not in a for a in answers[:-1]) and "no more recall" in answers[-1]
        # Every page went out within the gate; the note (a few dozen tokens) is all that follows.
        for b in bodies[:-1]:
            assert cf.estimate(b["messages"], tools=b["tools"], model="gpt-4o") <= trigger
        assert cf.estimate(bodies[-1]["messages"], tools=bodies[-1]["tools"], model="gpt-4o") <= trigger + 120


def test_without_recall_the_proxy_offers_no_tool_and_streams_as_before():
    history, system, budget = _setup("anthropic")
    model = ScriptedModel("anthropic", stream=True)
    with RecordingUpstream(model) as up, ProxyServer(ServeConfig(upstream=up.url, budget=budget,
                                                                 trigger=int(budget * 1.3))) as proxy:
        assert _send("anthropic", proxy.url, history, system, _tools("anthropic"), True) == DONE
        body = json.loads(up.seen[0].raw)
        assert len(up.seen) == 1 and _declares("anthropic", body) == 0
        assert not ID.search(up.seen[0].raw.decode())
        assert proxy.proxy.folder.store is None


def test_a_later_turn_with_the_fold_carries_the_tool_and_keeps_the_prefix_byte_for_byte():
    history, system, budget = _setup("chat")
    model = ScriptedModel("chat", stream=False, pages=1)
    with RecordingUpstream(model) as up, ProxyServer(ServeConfig(upstream=up.url, budget=budget, trigger=int(budget * 1.3),
                                                                 recall=True, recall_rounds=4)) as proxy:
        client = openai.OpenAI(base_url=proxy.url + "/v1", api_key="sk-test", max_retries=0)
        first = client.chat.completions.with_raw_response.create(model="gpt-4o", messages=history, tools=_tools("chat"))
        later = history + [{"role": "assistant", "content": DONE}, {"role": "user", "content": "Go on."}]
        second = client.chat.completions.with_raw_response.create(model="gpt-4o", messages=later, tools=_tools("chat"))
        client.close()
        assert first.headers["x-contextfold-fold"] == "new" and second.headers["x-contextfold-fold"] == "reused"
        sends = [s for s in up.seen if _last_answer("chat", json.loads(s.raw)) is None]
        assert len(sends) == 2
        a, b = json.loads(sends[0].raw), json.loads(sends[1].raw)
        assert _declares("chat", b) == 1 and b["tools"] == a["tools"]
        # The folded history is sent as the same bytes turn after turn (the prompt cache hits).
        end = scan_body(sends[0].raw, "messages").offsets[-1]
        assert sends[1].raw[:end] == sends[0].raw[:end]
        assert b["messages"][: len(a["messages"])] == a["messages"]


def test_recall_settings_are_read_from_flags_environment_and_toml(tmp_path):
    assert load_config({}, environ={"CONTEXTFOLD_RECALL": "1", "CONTEXTFOLD_RECALL_ROUNDS": "5"}).recall_rounds == 5
    assert load_config({}, environ={"CONTEXTFOLD_RECALL": "true"}).recall is True
    f = tmp_path / "c.toml"
    f.write_text("[compaction]\nrecall = true\nrecall_rounds = 2\n")
    cfg = load_config({}, config_file=f, environ={})
    assert cfg.recall is True and cfg.recall_rounds == 2
    with pytest.raises(ValueError, match="recall_rounds"):
        ServeConfig(recall_rounds=0)
    with pytest.raises(ValueError, match="recall must be true or false"):
        ServeConfig(recall="yes")  # type: ignore[arg-type]


def test_a_fold_remembers_whether_it_was_made_recoverable():
    fold = Fold("k", 3, b"{}", 1, 3, "summarize", recall=True)
    assert Fold.from_bytes(fold.to_bytes()).recall is True
    # (A fold stored by an earlier version has no such field: not recoverable.)
    old = fold.to_bytes().replace(b', "recall": true', b"")
    assert Fold.from_bytes(old).recall is False


@pytest.mark.parametrize("api", ["chat", "responses", "anthropic", "gemini"])
def test_a_streamed_turn_is_read_back_as_the_response_it_streams(api):
    for reply in (_call(api, {"id": "cf0123456789ab", "offset": 7}), _text(api)):
        rebuilt = stream_response(api, payloads(_sse(api, reply)))
        plain = response_of(api, json.dumps(reply).encode())
        assert _turn(api, rebuilt) == _turn(api, plain)


def test_a_restarted_proxy_answers_a_recall_of_a_fold_made_before_from_redis(redis_url):
    history, system, budget = _setup("chat")
    # A database of its own on the session's redis-server: the proxy writes under its fixed key
    # prefix, and test_serve's restart test counts the folds it finds there.
    cfg = {"budget": budget, "trigger": budget * 2, "recall": True, "redis": redis_url.rsplit("/", 1)[0] + "/1"}
    model = ScriptedModel("chat", stream=False, pages=1)
    with RecordingUpstream(model) as up:
        with ProxyServer(ServeConfig(upstream=up.url, **cfg)) as proxy:
            assert _send("chat", proxy.url, history, system, _tools("chat"), False) == DONE
        first = [json.loads(s.raw) for s in up.seen]
        up.seen.clear()
        later = history + [{"role": "assistant", "content": DONE}, {"role": "user", "content": "Go on."}]
        with ProxyServer(ServeConfig(upstream=up.url, **cfg)) as proxy:
            assert _send("chat", proxy.url, later, system, _tools("chat"), False) == DONE
        again = [json.loads(s.raw) for s in up.seen]
    # The new process found the fold (same bytes) and answered the same id from Redis.
    assert again[0]["messages"][: len(first[0]["messages"])] == first[0]["messages"]
    assert model.recalled[0] == model.recalled[-1]
    assert _last_answer("chat", again[1]) == _last_answer("chat", first[1])
    assert "not found" not in _last_answer("chat", again[1]).splitlines()[0]


def test_a_streamed_round_reaches_the_client_as_it_comes_up_to_its_tool_call():
    """The upstream sends the model's first words and waits until the client has them before it
    sends the recall call: a proxy that held the whole turn would leave the client waiting."""
    import threading

    history, system, budget = _setup("chat")
    got_first = threading.Event()
    waited: list[bool] = []
    seen: list[bytes] = []

    class Handler(LoopbackHandler):
        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers["content-length"]))
            seen.append(raw)
            body = json.loads(raw)
            ids = ID.findall(raw.decode())
            first_round = _declares("chat", body) and ids and _last_answer("chat", body) is None
            events = _sse("chat", _call("chat", {"id": ids[0]}) if first_round else _text("chat")).split(b"\n\n")
            self.start_chunked()
            if first_round:
                self.chunk(b"\n\n".join(events[:3]) + b"\n\n")  # the role, then the first words in two pieces
                waited.append(got_first.wait(10))
                self.chunk(b"\n\n".join(events[3:]))
            else:
                self.chunk(b"\n\n".join(events))
            self.end_chunked()

    with loopback(Handler) as url, ProxyServer(ServeConfig(upstream=url, budget=budget, trigger=budget * 2,
                                                           recall=True)) as proxy:
        client = openai.OpenAI(base_url=proxy.url + "/v1", api_key="k", max_retries=0)
        text = ""
        for c in client.chat.completions.create(model="gpt-4o", messages=history, tools=_tools("chat"), stream=True):
            text += (c.choices[0].delta.content or "") if c.choices else ""
            if text:
                got_first.set()  # only reachable if the first words came while the upstream waited
        client.close()
    assert waited == [True]
    assert len(seen) == 2 and text == INTRO + DONE


def test_a_streamed_responses_answer_numbers_its_events_without_gaps_across_recall_rounds():
    """Each round of a Responses stream numbers its events from 0; the proxy drops a later
    round's ``response.created`` / ``in_progress`` and must not count them: the client got
    0, 1, 4, 5, ... across the first recall round."""
    history, system, budget = _setup("responses")
    model = ScriptedModel("responses", stream=True)
    with RecordingUpstream(model) as up, ProxyServer(ServeConfig(upstream=up.url, budget=budget, trigger=budget * 2,
                                                                 recall=True, recall_rounds=64)) as proxy:
        client = openai.OpenAI(base_url=proxy.url + "/v1", api_key="k", max_retries=0)
        events = list(client.responses.create(model="gpt-4o", instructions=system, input=history,
                                              tools=_tools("responses"), stream=True))
        client.close()
    assert len(up.seen) == 4  # three recall rounds, then the answer
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert [e.type for e in events].count("response.created") == 1
    assert events[-1].type == "response.completed" and events[-1].response.output_text == INTRO * 3 + DONE


def test_a_recall_turn_goes_back_in_a_form_the_api_takes_stored_or_not():
    # Responses: a reasoning item is found by id only when the response was stored: without its
    # encrypted content it is left out, and the items after it stand alone: a function call by
    # its call_id (with the output item's id the API wants its reasoning item beside it), a
    # message as its text.
    args = json.dumps({"id": "cf0123456789ab"})
    message = {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
               "content": [{"type": "output_text", "text": INTRO, "annotations": []}]}
    recall = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": RECALL, "arguments": args,
              "status": "completed"}
    other = {"type": "function_call", "id": "fc_2", "call_id": "call_2", "name": "bash", "arguments": "{}"}
    out = {"output": [{"type": "reasoning", "id": "rs_1", "summary": []}, message, recall, other]}
    assert _turn("responses", out) == [
        {"role": "assistant", "content": INTRO},
        {"type": "function_call", "call_id": "call_1", "name": RECALL, "arguments": args}]
    # A reasoning item with its encrypted content goes back, and the items after it as the API
    # returned them: OpenAI pairs it with the next item by that item's id, and refused a
    # message flattened to its text after it (../shared/data/replay).
    encrypted = {"type": "reasoning", "id": "rs_2", "summary": [], "encrypted_content": "gAAA"}
    assert _turn("responses", {"output": [encrypted, message, recall, other]}) == [encrypted, message, recall]
    # ... unless the item it pairs with is a call to the client's own tool, which is left out.
    assert _turn("responses", {"output": [encrypted, other, recall]}) == [
        {"type": "function_call", "call_id": "call_1", "name": RECALL, "arguments": args}]
    # Chat: DeepSeek's thinking mode wants reasoning_content back within a tool-calling turn.
    chat = _call("chat", {"id": "cf0123456789ab"})
    chat["choices"][0]["message"]["reasoning_content"] = "I should look."
    (turn,) = _turn("chat", chat)
    assert turn["reasoning_content"] == "I should look." and turn["tool_calls"][0]["function"]["name"] == RECALL
    assert "refusal" not in turn


# -- several choices -----------------------------------------------------------------------------

#: The scripted model's choices when it answers with text.
CHOICES = ["First of two.", "Second of two."]


def _several(api: str, body: dict[str, Any], raw: bytes) -> Any:
    """The scripted model's answer to a request for several choices (chat ``n``, Gemini
    ``candidateCount``): one text per choice; offered the recall tool and a fold id, the last of
    several choices calls the tool instead (the first still answers), as a sampled choice may."""
    count = body.get("n", 1) if api == "chat" else body.get("generationConfig", {}).get("candidateCount", 1)
    ids = ID.findall(raw.decode("utf-8")) if _declares(api, body) else []
    turns = [_text(api) for _ in range(count)]
    for i, turn in enumerate(turns):
        if api == "chat":
            turn["choices"][0]["message"]["content"] = CHOICES[i]
        else:
            turn["candidates"][0]["content"]["parts"][0]["text"] = CHOICES[i]
    if ids and count > 1:
        turns[-1] = _call(api, {"id": ids[0]})
    if api == "chat":
        return {**turns[0], "choices": [{**t["choices"][0], "index": i} for i, t in enumerate(turns)]}
    return {**turns[0], "candidates": [{**t["candidates"][0], "index": i} for i, t in enumerate(turns)]}


def _several_sse(api: str, response: Any) -> bytes:
    """A response of several choices as its API streams it: each choice's events in turn, as
    ``_sse`` streams one (chat: [DONE] once, at the end; Gemini: a candidate per chunk)."""
    key = "choices" if api == "chat" else "candidates"
    streams = [_sse(api, {**response, key: [{**c, "index": 0}]}) for c in response[key]]
    out = b""
    for i, stream in enumerate(streams):
        for event in stream.split(b"\n\n" if api == "chat" else b"\r\n\r\n"):
            data = payload(event)
            if isinstance(data, dict):
                for c in data[key]:
                    c["index"] = i
                out += b"data: " + json.dumps(data).encode() + (b"\n\n" if api == "chat" else b"\r\n\r\n")
    return out + (b"data: [DONE]\n\n" if api == "chat" else b"")


def _several_upstream(api: str, stream: bool) -> Any:
    """A ``RecordingUpstream`` answer: the scripted model's several choices (``_several``)."""
    def answer(method: str, path: str, raw: bytes) -> tuple[int, dict[str, str], bytes]:
        reply = _several(api, json.loads(raw), raw)
        if stream:
            return 200, {"content-type": "text/event-stream"}, _several_sse(api, reply)
        return 200, {"content-type": "application/json"}, json.dumps(reply).encode()
    return answer


def _ask_several(api: str, url: str, history: list[Any], system: str | None, stream: bool
                 ) -> tuple[list[str], list[str], dict[str, str]]:
    """One turn asking for two choices with the API's own SDK: each choice's text, the names of
    the tools its choices call, and the response headers."""
    texts, calls = ["", ""], []
    if api == "chat":
        client = openai.OpenAI(base_url=url + "/v1", api_key="sk-test", max_retries=0)
        try:
            raw = client.chat.completions.with_raw_response.create(model="gpt-4o", messages=history,
                                                                  tools=_tools(api), n=2, stream=stream)
            headers = dict(raw.headers)
            if stream:
                for chunk in raw.parse():
                    for c in chunk.choices:
                        texts[c.index] += c.delta.content or ""
                        calls += [tc.function.name for tc in c.delta.tool_calls or () if tc.function.name]
            else:
                for c in raw.parse().choices:
                    texts[c.index] = c.message.content or ""
                    calls += [tc.function.name for tc in c.message.tool_calls or ()]
        finally:
            client.close()
        return texts, calls, headers
    genai = pytest.importorskip("google.genai", reason="google-genai not installed")
    from google.genai import types

    client = genai.Client(api_key="AIza-test", http_options=types.HttpOptions(base_url=url, api_version="v1beta"))
    try:
        manual = types.AutomaticFunctionCallingConfig(disable=True)
        config = types.GenerateContentConfig(tools=_tools(api), system_instruction=system, candidate_count=2,
                                             automatic_function_calling=manual)
        chunks = (list(client.models.generate_content_stream(model="gemini-2.5-flash", contents=history, config=config))
                  if stream else [client.models.generate_content(model="gemini-2.5-flash", contents=history,
                                                                 config=config)])
    finally:
        client.close()
    for chunk in chunks:
        for cand in chunk.candidates or ():
            for part in cand.content.parts or ():
                texts[cand.index or 0] += part.text or ""
                calls += [part.function_call.name] if part.function_call else []
    headers = dict(chunks[0].sdk_http_response.headers) if chunks[0].sdk_http_response else {}
    return texts, calls, headers


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("api", ["chat", "gemini"])
def test_a_request_for_several_choices_is_folded_without_recall_so_no_choice_calls_a_tool_the_client_lacks(api, stream):
    """A model offered the recall tool may call it in any choice, and the proxy reads one turn:
    a request for several choices is offered no tool, and its fold promises none."""
    history, system, budget = _setup(api)
    with RecordingUpstream(_several_upstream(api, stream)) as up, ProxyServer(ServeConfig(
            upstream=up.url, budget=budget, trigger=budget * 2, recall=True)) as proxy:
        texts, calls, headers = _ask_several(api, proxy.url, history, system, stream)
        metrics = httpx.get(proxy.url + "/metrics").text
    # Every choice reaches the client, and none calls a tool the client never declared.
    assert texts == CHOICES and calls == []
    (sent,) = up.seen  # no recall round: the answer went back as the upstream wrote it
    body = json.loads(sent.raw)
    assert _declares(api, body) == 0
    # Folded as --no-recall folds: no placeholder names an id or the tool.
    assert headers["x-contextfold-fold"] == "new" and int(headers["x-contextfold-folded-messages"]) > 0
    assert not ID.search(sent.raw.decode()) and RECALL.encode() not in sent.raw
    assert headers["x-contextfold-recall-withheld"] == "several-choices"
    assert f'contextfold_recall_withheld_total{{api="{api}",reason="several-choices"}} 1' in metrics


def test_a_conversation_that_alternates_one_and_several_choices_gets_each_its_fold_byte_for_byte():
    """Turns asking for one choice get the recoverable fold and the tool; turns asking for two,
    a fold made without recall. Each kind is found again (a compaction per kind, not per
    switch), and each is sent as the same bytes as its kind's turn before."""
    history, system, budget = _setup("chat")
    turns = [history + [m for k in range(t) for m in ({"role": "assistant", "content": f"Step {k} done."},
                                                       {"role": "user", "content": "Go on."})] for t in range(4)]
    with RecordingUpstream(_several_upstream("chat", False)) as up, ProxyServer(ServeConfig(
            upstream=up.url, budget=budget, trigger=int(budget * 1.3), recall=True)) as proxy:
        client = openai.OpenAI(base_url=proxy.url + "/v1", api_key="sk-test", max_retries=0)
        folds = []
        for t, messages in enumerate(turns):
            n = 1 if t % 2 == 0 else 2
            raw = client.chat.completions.with_raw_response.create(model="gpt-4o", messages=messages,
                                                                  tools=_tools("chat"), n=n)
            folds.append(raw.headers["x-contextfold-fold"])
            assert len(raw.parse().choices) == n
            assert raw.headers.get("x-contextfold-recall-withheld") == (None if n == 1 else "several-choices")
        client.close()
    assert folds == ["new", "new", "reused", "reused"]
    sends = [s.raw for s in up.seen]
    # One request per turn: the model, offered the tool with one choice, recalled nothing here.
    assert len(sends) == 4
    bodies = [json.loads(r) for r in sends]
    for t, body in enumerate(bodies):
        recoverable = t % 2 == 0
        assert _declares("chat", body) == (1 if recoverable else 0)
        assert bool(ID.search(sends[t].decode())) is recoverable
        _, failures = _core.compaction_verify(body["messages"], _core.PricedRequest(format="chat"))
        assert failures == [], failures
    for earlier, later in ((0, 2), (1, 3)):
        end = scan_body(sends[earlier], "messages").offsets[-1]
        assert sends[later][:end] == sends[earlier][:end]  # the same bytes as its kind's turn before
    # The two kinds differ: the one without recall names no id.
    assert bodies[1]["messages"] != bodies[0]["messages"][: len(bodies[1]["messages"])]


def _turn_of(api: str, url: str, history: list[Any], system: str | None, choices: int) -> str:
    """One turn asking for ``choices`` choices with the API's own SDK (chat or Gemini): the
    ``x-contextfold-fold`` header of its response."""
    if api == "chat":
        client = openai.OpenAI(base_url=url + "/v1", api_key="sk-test", max_retries=0)
        with client:
            raw = client.chat.completions.with_raw_response.create(model="gpt-4o", messages=history,
                                                                  tools=_tools(api), n=choices)
        assert len(raw.parse().choices) == choices
        return raw.headers["x-contextfold-fold"]
    genai = pytest.importorskip("google.genai", reason="google-genai not installed")
    from google.genai import types

    client = genai.Client(api_key="AIza-test", http_options=types.HttpOptions(base_url=url, api_version="v1beta"))
    try:
        config = types.GenerateContentConfig(tools=_tools(api), system_instruction=system, candidate_count=choices,
                                             automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True))
        response = client.models.generate_content(model="gemini-2.5-flash", contents=history, config=config)
    finally:
        client.close()
    assert len(response.candidates) == choices
    return response.sdk_http_response.headers["x-contextfold-fold"]


@pytest.mark.parametrize("api", ["chat", "gemini"])
def test_a_conversation_that_switches_between_one_and_several_choices_reads_only_what_was_appended_at_each_switch_back(
        api):
    """The proxy keeps a record of the conversation per kind of fold (with recall, without): a
    turn that switches back to a kind extends that kind's last body, so it is read from where that
    body ended, not whole, and sent with that kind's fold and tools."""
    history, system, budget = _setup(api)
    step = convert([{"role": "assistant", "content": "Step done."}, {"role": "user", "content": "Go on."}], SHAPE[api])
    turns = [history + step * t for t in range(6)]
    with RecordingUpstream(_several_upstream(api, False)) as up, ProxyServer(ServeConfig(
            upstream=up.url, budget=budget, trigger=int(budget * 1.3), recall=True)) as proxy:
        folds = [_turn_of(api, proxy.url, messages, system, 1 + t % 2) for t, messages in enumerate(turns)]
        metrics = httpx.get(proxy.url + "/metrics").text
    assert folds == ["new", "new", "reused", "reused", "reused", "reused"]
    # Each kind read whole once, when it compacted; every switch back read from where it left off.
    reads = dict(re.findall(rf'contextfold_body_reads_total\{{api="{api}",read="(\w+)"\}} (\d+)', metrics))
    assert reads == {"whole": "2", "appended": "4"}
    sends = [s.raw for s in up.seen]
    assert len(sends) == 6
    key = API_BY_NAME[api].history_key
    for t, raw in enumerate(sends):
        recoverable = t % 2 == 0
        assert _declares(api, json.loads(raw)) == (1 if recoverable else 0)
        assert bool(ID.search(raw.decode())) is recoverable
        if t >= 2:
            end = scan_body(sends[t - 2], key).offsets[-1]
            assert raw[:end] == sends[t - 2][:end]  # the same bytes as its kind's turn before


def test_a_background_response_is_folded_without_recall():
    """A Responses request with ``background: true`` returns at once; its turn is fetched later
    by a GET the proxy forwards unread, so the proxy could not answer a recall call in it."""
    history, system, budget = _setup("responses")
    queued = {**_text("responses"), "status": "queued", "output": [], "background": True}
    with RecordingUpstream(json_answer(queued)) as up, ProxyServer(ServeConfig(
            upstream=up.url, budget=budget, trigger=budget * 2, recall=True)) as proxy:
        client = openai.OpenAI(base_url=proxy.url + "/v1", api_key="sk-test", max_retries=0)
        raw = client.responses.with_raw_response.create(model="gpt-4o", input=history, tools=_tools("responses"),
                                                        instructions=system, background=True)
        client.close()
    assert raw.parse().status == "queued"
    (sent,) = up.seen
    assert int(raw.headers["x-contextfold-folded-messages"]) > 0
    assert _declares("responses", json.loads(sent.raw)) == 0 and RECALL.encode() not in sent.raw
    assert raw.headers["x-contextfold-recall-withheld"] == "background"


def _second_proxy_on_a_shared_cache(model_name: str, *, recall: bool, gate: bool) -> tuple[Any, list[Any]]:
    """A proxy with ``--recall`` folds the chat run into a fold cache (its body names fold ids);
    a second proxy on the same cache (with or without ``--recall``, with the first one's budget
    and trigger or none) then sends the run once, with the real openai SDK as ``model_name``:
    its raw response and what the upstream got."""
    from contextfold.serve.fold_cache import MemoryFoldCache

    history, system, budget = _setup("chat")
    cache = MemoryFoldCache()
    with RecordingUpstream(ScriptedModel("chat", stream=False, pages=1)) as up:
        with ProxyServer(ServeConfig(upstream=up.url, budget=budget, trigger=budget * 2, recall=True),
                         cache=cache) as proxy:
            assert _send("chat", proxy.url, history, system, _tools("chat"), False) == DONE
        assert any(b"id=cf" in r.raw for r in up.seen)
        up.seen.clear()
        sizes = {"budget": budget, "trigger": budget * 2} if gate else {}
        with ProxyServer(ServeConfig(upstream=up.url, recall=recall, **sizes), cache=cache) as proxy:
            client = openai.OpenAI(base_url=proxy.url + "/v1", api_key="sk-test", max_retries=0)
            raw = client.chat.completions.with_raw_response.create(model=model_name, messages=history,
                                                                  tools=_tools("chat"))
            client.close()
    return raw, list(up.seen)


def test_a_recoverable_fold_sent_with_no_gate_still_has_its_recall_calls_answered():
    """A proxy with no gate for the model (window unknown, no budget) still sends a recoverable
    fold it finds in the fold cache, and the recall tool with it: the model's call is answered
    (with no room for a page, by the note that recall is spent), not passed to the client."""
    raw, seen = _second_proxy_on_a_shared_cache("acme-model-7", recall=True, gate=False)
    assert raw.headers["x-contextfold-fold"] == "reused" and "no context window" in raw.headers[
        "x-contextfold-not-compacted"]
    assert raw.parse().choices[0].message.content == DONE
    assert len(seen) == 2 and "no more recall" in _last_answer("chat", json.loads(seen[1].raw))
    assert raw.headers["x-contextfold-recall-spent"] == "1"


def test_a_proxy_without_recall_never_sends_a_recoverable_fold_another_left_in_a_shared_cache():
    """Two proxies share one fold cache, one with ``--recall`` and one without. The fold the
    first left promises the recall tool; the second cannot send that tool, so it folds the
    history itself: its body names no fold id and carries no recall tool."""
    raw, seen = _second_proxy_on_a_shared_cache("gpt-4o", recall=False, gate=True)
    assert raw.headers["x-contextfold-fold"] == "new", dict(raw.headers)
    (sent,) = seen
    body = json.loads(sent.raw)
    assert [t["function"]["name"] for t in body["tools"]] == ["bash"]
    assert b"id=cf" not in sent.raw and cf.RECALL_TOOL.encode() not in sent.raw


def test_a_gemini_stream_read_as_a_json_array_has_its_recall_calls_answered():
    """``:streamGenerateContent`` without ``alt=sse`` answers with a JSON array of chunks (not
    SSE: google-genai always asks for SSE, a REST client may not). The proxy reads it whole and
    answers a recall call in it, as in any JSON response."""
    history, system, budget = _setup("gemini")
    model = ScriptedModel("gemini", stream=False)

    def answer(method: str, path: str, raw: bytes) -> tuple[int, dict[str, str], bytes]:
        status, headers, data = model(method, path, raw)
        reply = json.loads(data)
        cand = reply["candidates"][0]
        chunks = [{**reply, "candidates": [{**cand, "content": {"role": "model", "parts": [p]}}]}
                  for p in cand["content"]["parts"]]
        return status, headers, json.dumps(chunks).encode()

    body = {"contents": history, "systemInstruction": {"parts": [{"text": system}]}, "tools": _tools("gemini")}
    with RecordingUpstream(answer) as up, ProxyServer(ServeConfig(upstream=up.url, budget=budget, trigger=budget * 2,
                                                                  recall=True, recall_rounds=64)) as proxy:
        r = httpx.post(proxy.url + "/v1beta/models/gemini-2.5-flash:streamGenerateContent", json=body, timeout=30)
    assert r.status_code == 200 and r.headers["x-contextfold-recall-rounds"] == "3"
    parts = [p for chunk in r.json() for c in chunk["candidates"] for p in c["content"]["parts"]]
    assert parts == [{"text": DONE}]
    assert len(up.seen) == 4 and all(s.path.endswith(":streamGenerateContent") for s in up.seen)


# -- the rounds report ---------------------------------------------------------------------------

#: The report line that ends a recall stream of the OpenAI and Anthropic APIs.
REPORT = re.compile(rb"\n: contextfold recall-rounds=(\d+) recall-tokens=(\d+) recall-spent=([01])\n\Z")
#: The model each API's requests name (the one the proxy prices a round for).
MODEL = {"chat": "gpt-4o", "responses": "gpt-4o", "anthropic": "claude-haiku-4-5", "gemini": "gemini-2.5-flash"}


def _raw_request(api: str, history: list[Any], system: str | None, stream: bool) -> tuple[str, dict[str, Any]]:
    """The path and JSON body of one turn as the API's SDK would send it."""
    if api == "chat":
        return "/v1/chat/completions", {"model": MODEL[api], "messages": history, "tools": _tools(api),
                                        "stream": stream}
    if api == "responses":
        return "/v1/responses", {"model": MODEL[api], "input": history, "instructions": system, "tools": _tools(api),
                                 "stream": stream}
    if api == "anthropic":
        return "/v1/messages", {"model": MODEL[api], "max_tokens": 512, "messages": history, "system": system,
                                "tools": _tools(api), "stream": stream}
    verb = ":streamGenerateContent?alt=sse" if stream else ":generateContent"
    return f"/v1beta/models/{MODEL[api]}{verb}", {"contents": history, "tools": _tools(api),
                                                   "systemInstruction": {"parts": [{"text": system}]}}


def _rounds_tokens(api: str, bodies: list[Any]) -> int:
    """The estimated tokens the recall rounds appended, from the bodies the upstream got (each
    round's messages are what the next body adds to the history)."""
    key = API_BY_NAME[api].history_key
    return sum(int(_core.estimate(b[key][len(a[key]):], provider=API_BY_NAME[api].provider, model=MODEL[api]))
               for a, b in zip(bodies, bodies[1:]))


def _sdk_reads(api: str, stream: bytes) -> tuple[list[Any], Any]:
    """What the API's own SDK makes of the SSE ``stream`` (served as it is by a loopback
    upstream): each event or chunk it yields, dumped, and the error it raises, if any (its class
    and body; google-genai's error details)."""
    genai = pytest.importorskip("google.genai", reason="google-genai not installed") if api == "gemini" else None
    events: list[Any] = []
    served = RecordingUpstream(lambda method, path, raw: (200, {"content-type": "text/event-stream"}, stream))
    with served as up:
        try:
            if api in ("chat", "responses"):
                with openai.OpenAI(base_url=up.url + "/v1", api_key="sk-test", max_retries=0) as client:
                    if api == "chat":
                        chunks = client.chat.completions.create(model=MODEL[api], messages=[], stream=True)
                    else:
                        chunks = client.responses.create(model=MODEL[api], input="x", stream=True)
                    events += (e.model_dump() for e in chunks)
            elif api == "anthropic":
                with anthropic.Anthropic(base_url=up.url, api_key="sk-ant-test", max_retries=0) as claude:
                    with claude.messages.stream(model=MODEL[api], max_tokens=9, messages=[]) as s:
                        events += (e.model_dump() for e in s)
                        events.append(s.get_final_message().model_dump())
            else:
                from google.genai import types

                options = types.HttpOptions(base_url=up.url, api_version="v1beta")
                client = genai.Client(api_key="AIza-test", http_options=options)
                try:
                    events += (c.model_dump(exclude={"sdk_http_response"})
                               for c in client.models.generate_content_stream(model=MODEL[api], contents="x"))
                finally:
                    client.close()
        except (openai.APIError, anthropic.APIError) as e:
            return events, (type(e).__name__, e.body)
        except Exception as e:
            if genai is None or not isinstance(e, genai.errors.APIError):
                raise
            return events, (type(e).__name__, e.details)
    return events, None


@pytest.mark.parametrize("api", ["chat", "responses", "anthropic", "gemini"])
def test_a_streamed_response_reports_its_recall_rounds_at_its_end_and_the_sdk_reads_it_as_before(api):
    """A stream's headers leave before its rounds are known: its rounds and their tokens come at
    its end, in a form its SDK skips (an SSE comment; in Gemini's stream, whose SDK raises on
    anything but JSON, a member of its last chunk, which the SDK drops). The SDK reads the
    stream exactly as it reads the same stream without the report."""
    history, system, budget = _setup(api)
    path, body = _raw_request(api, history, system, stream=True)
    with RecordingUpstream(ScriptedModel(api, stream=True)) as up, ProxyServer(ServeConfig(
            upstream=up.url, budget=budget, trigger=budget * 2, recall=True, recall_rounds=64)) as proxy:
        with httpx.stream("POST", proxy.url + path, json=body, headers={"anthropic-version": "2023-06-01"},
                          timeout=30) as r:
            stream = r.read()
            assert "x-contextfold-recall-rounds" not in r.headers
    tokens = _rounds_tokens(api, [json.loads(s.raw) for s in up.seen])
    assert len(up.seen) == 4 and tokens > 0
    if api == "gemini":
        events, rest = split_events(stream)
        assert rest == b"" and not any(e.startswith(b":") for e in events)
        last = payload(events[-1])
        assert last.pop("contextfold") == {"recall-rounds": 3, "recall-tokens": tokens, "recall-spent": 0}
        assert last["candidates"][0]["content"]["parts"] == [{"text": DONE}]
        without = b"".join(events[:-1]) + with_payload(events[-1], last)
    else:
        m = REPORT.search(stream)
        assert m is not None, stream[-200:]
        assert (int(m[1]), int(m[2]), m[3]) == (3, tokens, b"0")
        without = stream[: m.start() + 1]
    reads = _sdk_reads(api, stream)
    assert reads[1] is None and reads == _sdk_reads(api, without)


@pytest.mark.parametrize("api", ["chat", "responses", "anthropic", "gemini"])
def test_a_json_response_reports_its_recall_rounds_and_their_tokens_in_its_headers(api):
    history, system, budget = _setup(api)
    path, body = _raw_request(api, history, system, stream=False)
    with RecordingUpstream(ScriptedModel(api, stream=False)) as up, ProxyServer(ServeConfig(
            upstream=up.url, budget=budget, trigger=budget * 2, recall=True, recall_rounds=64)) as proxy:
        r = httpx.post(proxy.url + path, json=body, headers={"anthropic-version": "2023-06-01"}, timeout=30)
    tokens = _rounds_tokens(api, [json.loads(s.raw) for s in up.seen])
    assert r.headers["x-contextfold-recall-rounds"] == "3"
    assert r.headers["x-contextfold-recall-tokens"] == str(tokens) and tokens > 0
    assert "x-contextfold-recall-spent" not in r.headers


def _report_of(api: str, stream: bytes) -> tuple[dict[str, int], bytes]:
    """The rounds report a recall stream of API ``api`` ends with, and the stream without it."""
    if api != "gemini":
        m = REPORT.search(stream)
        assert m is not None, stream[-300:]
        return {"recall-rounds": int(m[1]), "recall-tokens": int(m[2]), "recall-spent": int(m[3])}, stream[: m.start() + 1]
    events, rest = split_events(stream)
    assert rest == b"" and not any(e.startswith(b":") for e in events)
    last = payload(events[-1])
    assert isinstance(last, dict) and "contextfold" in last, events[-1]
    report = last.pop("contextfold")
    return report, b"".join(events[:-1]) + (with_payload(events[-1], last) if last else b"")


@pytest.mark.parametrize("ending", ["usage-chunk", "cut-short"])
def test_a_gemini_stream_whose_last_chunk_has_no_finish_reason_still_reports_its_rounds(ending):
    """The report goes on a Gemini stream's last chunk, whatever that chunk is. One that carries
    no part of the turn (usage only, after the chunk with the ``finishReason``) is held like the
    finishing one and carries it; the SDK reads the stream as it would without. A stream the
    upstream cut short, whose last chunk of text went out at once, gets a chunk of its own
    holding only the report, which the SDK reads as a response with no candidates."""
    history, system, budget = _setup("gemini")
    model = ScriptedModel("gemini", stream=True)

    def answer(method: str, path: str, raw: bytes) -> tuple[int, dict[str, str], bytes]:
        status, headers, data = model(method, path, raw)
        if b"functionCall" in data:
            return status, headers, data
        if ending == "usage-chunk":
            usage = {"usageMetadata": {"promptTokenCount": 100, "candidatesTokenCount": 9, "totalTokenCount": 109},
                     "modelVersion": "gemini-2.5-flash"}
            return status, headers, data + b"data: " + json.dumps(usage).encode() + b"\r\n\r\n"
        (event,) = split_events(data)[0]
        chunk = payload(event)
        del chunk["candidates"][0]["finishReason"]
        return status, headers, with_payload(event, chunk)

    path, body = _raw_request("gemini", history, system, stream=True)
    with RecordingUpstream(answer) as up, ProxyServer(ServeConfig(
            upstream=up.url, budget=budget, trigger=budget * 2, recall=True, recall_rounds=64)) as proxy:
        stream = httpx.post(proxy.url + path, json=body, timeout=30).content
    tokens = _rounds_tokens("gemini", [json.loads(s.raw) for s in up.seen])
    report, without = _report_of("gemini", stream)
    assert report == {"recall-rounds": 3, "recall-tokens": tokens, "recall-spent": 0} and tokens > 0
    reads, error = _sdk_reads("gemini", stream)
    assert error is None
    if ending == "usage-chunk":
        assert payload(split_events(stream)[0][-1])["usageMetadata"]["totalTokenCount"] == 109
        assert (reads, error) == _sdk_reads("gemini", without)
    else:
        assert payload(split_events(stream)[0][-1]) == {"contextfold": report}
        assert reads[:-1] == _sdk_reads("gemini", without)[0] and reads[-1]["candidates"] is None


# -- the rounds report of a request that fails after its rounds ----------------------------------

#: Each API's error body, as its upstream answers an overloaded request (status, body).
UPSTREAM_ERROR = {
    "chat": (500, {"error": {"message": "The server had an error.", "type": "server_error", "param": None,
                             "code": None}}),
    "responses": (500, {"error": {"message": "The server had an error.", "type": "server_error", "param": None,
                                  "code": None}}),
    "anthropic": (529, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
    "gemini": (503, {"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}),
}


def _error_event(api: str) -> bytes:
    """The API's own error event, as its upstream sends one mid-stream (the Responses API's is an
    event its SDK yields; the others' SDKs raise on theirs)."""
    error = UPSTREAM_ERROR[api][1]
    if api == "responses":
        data = {"type": "error", "code": "server_error", "message": "The server had an error.", "param": None,
                "sequence_number": 3}
        return b"event: error\ndata: " + json.dumps(data).encode() + b"\n\n"
    event = b"event: error\n" if api == "anthropic" else b""
    end = b"\r\n\r\n" if api == "gemini" else b"\n\n"
    return event + b"data: " + json.dumps(error).encode() + end


def _cut_before_the_call(api: str, sse: bytes) -> bytes:
    """The events of a streamed recall turn before the one that starts its call."""
    events, _ = split_events(sse)
    calls = [i for i, e in enumerate(events) if (b"tool_calls" in e or b'"function_call"' in e
                                                   or b'"tool_use"' in e or b"functionCall" in e)]
    return b"".join(events[: calls[0]])


@pytest.fixture
def failing_upstream():
    """``failing_upstream(api, stream, how)``: the URL of an upstream scripted as a model that
    recalls a fold page by page (``ScriptedModel``) whose third request, after two rounds,
    fails ``how``: ``status`` (an error status in the API's shape), ``event`` (a stream that
    starts the turn and carries the API's error event), ``drop`` (the connection closed midway
    through the response); and the raw bodies it received."""
    stack = contextlib.ExitStack()

    def start(api: str, stream: bool, how: str) -> tuple[str, list[bytes]]:
        model = ScriptedModel(api, stream=stream)
        seen: list[bytes] = []

        class Handler(LoopbackHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers["content-length"]))
                seen.append(raw)
                _, headers, data = model("POST", self.path, raw)
                fails = how if len(seen) == 3 else None
                status = 200
                if fails == "status":
                    status, error = UPSTREAM_ERROR[api]
                    data, headers = json.dumps(error).encode(), {"content-type": "application/json"}
                elif fails == "event":
                    data = _cut_before_the_call(api, data) + _error_event(api)
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                if fails == "drop":
                    # Part of the response, then the connection closes: its body never completes.
                    self.wfile.write(_cut_before_the_call(api, data) if stream else data[: len(data) // 2])
                    self.close_connection = True
                else:
                    self.wfile.write(data)

        return stack.enter_context(loopback(Handler)), seen

    with stack:
        yield start


def _sdk_error(api: str, url: str, history: list[Any], system: str | None) -> Exception:
    """The error the API's own SDK raises for one (plain) turn through the proxy at ``url``."""
    if api == "gemini":
        genai = pytest.importorskip("google.genai", reason="google-genai not installed")
        from google.genai import types

        client = genai.Client(api_key="AIza-test", http_options=types.HttpOptions(base_url=url, api_version="v1beta"))
        config = types.GenerateContentConfig(tools=_tools(api), system_instruction=system,
                                             automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True))
        with pytest.raises(genai.errors.APIError) as gemini_error:
            client.models.generate_content(model=MODEL[api], contents=history, config=config)
        client.close()
        return gemini_error.value
    with pytest.raises((openai.APIStatusError, anthropic.APIStatusError)) as e:
        _send(api, url, history, system, _tools(api), False)
    return e.value


@pytest.mark.parametrize("how", ["status", "drop"])
@pytest.mark.parametrize("api", ["chat", "responses", "anthropic", "gemini"])
def test_a_json_error_after_recall_rounds_reports_them_in_its_headers(api, how, failing_upstream):
    """The rounds ran and their tokens were spent before the upstream failed: the error response
    the SDK raises on says so, as a response that succeeds does (``x-contextfold-recall-*``),
    whether the upstream answered an error status (relayed) or broke off (the proxy's 502)."""
    history, system, budget = _setup(api)
    url, seen = failing_upstream(api, False, how)
    with ProxyServer(ServeConfig(upstream=url, budget=budget, trigger=budget * 2, recall=True,
                                 recall_rounds=64)) as proxy:
        error = _sdk_error(api, proxy.url, history, system)
    assert len(seen) == 3
    tokens = _rounds_tokens(api, [json.loads(raw) for raw in seen])
    headers = error.response.headers
    assert error.response.status_code == (UPSTREAM_ERROR[api][0] if how == "status" else 502)
    assert headers["x-contextfold-recall-rounds"] == "2"
    assert headers["x-contextfold-recall-tokens"] == str(tokens) and tokens > 0
    assert "x-contextfold-recall-spent" not in headers


@pytest.mark.parametrize("how", ["status", "event", "drop"])
@pytest.mark.parametrize("api", ["chat", "responses", "anthropic", "gemini"])
def test_a_stream_that_fails_after_recall_rounds_still_reports_them_and_the_sdk_raises_as_before(
        api, how, failing_upstream):
    """A stream whose third round fails (an error status, which the proxy turns into the API's
    stream error; the upstream's own error event; a connection dropped midway) still ends with
    the report of the two rounds answered before: the SSE comment line after the error event
    (OpenAI, Anthropic), a member of the error chunk in Gemini's stream, where google-genai
    raises with the report in the error's details. The SDK reads the events and raises the
    error it raises without the report."""
    history, system, budget = _setup(api)
    url, seen = failing_upstream(api, True, how)
    path, body = _raw_request(api, history, system, stream=True)
    with ProxyServer(ServeConfig(upstream=url, budget=budget, trigger=budget * 2, recall=True,
                                 recall_rounds=64)) as proxy:
        stream = httpx.post(proxy.url + path, json=body, headers={"anthropic-version": "2023-06-01"}, timeout=30).content
    assert len(seen) == 3
    tokens = _rounds_tokens(api, [json.loads(raw) for raw in seen])
    report, without = _report_of(api, stream)
    assert report == {"recall-rounds": 2, "recall-tokens": tokens, "recall-spent": 0} and tokens > 0
    reads, error = _sdk_reads(api, stream)
    if api == "gemini":
        # (google-genai puts the whole error chunk in the error's details: the report with it.)
        assert error[1].pop("contextfold") == report
    assert (reads, error) == _sdk_reads(api, without)
    assert (error is None) == (api == "responses" and how == "event")  # (an event the openai SDK yields)
