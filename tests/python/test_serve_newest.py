"""``contextfold serve`` on a turn whose newest message (a shell or tool output) does not fit whole
beside the summary: the real SDK of each API sends a recorded SWE run (and an airline dialogue)
turn by turn through the proxy, in front of a loopback upstream that records what it receives.

The compaction cuts the middle of that message to fit. The proxy used to forward such a turn as
the client sent it, over the budget (and often over its own gate): it sends the newest message
from the client's own bytes. Now the cut message goes upstream on that turn only, beside a fold
of the messages before it; the next turns extend the client's own message, and the next
compaction reads it whole, with the turns behind the fold's summary."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("starlette", reason="contextfold serve needs its extra: pip install '.[proxy]'")
pytest.importorskip("uvicorn", reason="contextfold serve needs its extra: pip install '.[proxy]'")

import anthropic
import contextfold as cf
import openai
from contextfold import _core
from contextfold.serve.apis import API_BY_NAME
from contextfold.serve.config import ServeConfig

from proxy_support import ProxyServer, RecordingUpstream
from test_serve import _RecordingDigest
from transcripts import LOCAL, load_conversations
from wire_shapes import convert

#: Per API: the wire shape of ``wire_shapes.convert`` and the model the requests name.
SHAPE = {"chat": ("openai", "gpt-4o"), "responses": ("responses", "gpt-4o"),
         "anthropic": ("anthropic", "claude-sonnet-4-5"), "gemini": ("gemini", "gemini-2.5-flash")}
#: What the compaction leaves where it cut a message's middle (``src/degrade.rs``).
CUT_MARK = "tokens cut"


def _reply(api: str) -> Any:
    """A model's short answer in ``api``'s shape. No usage: the proxy's estimate stays
    uncalibrated, so the budget a test reads is the one the proxy compacts to."""
    if api == "chat":
        return {"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-4o",
                "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                             "message": {"role": "assistant", "content": "ok", "refusal": None}}]}
    if api == "responses":
        return {"id": "resp_1", "object": "response", "created_at": 1, "status": "completed", "model": "gpt-4o",
                "output": [{"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
                            "content": [{"type": "output_text", "text": "ok", "annotations": []}]}],
                "parallel_tool_calls": True, "tool_choice": "auto", "tools": []}
    if api == "anthropic":
        return {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn", "stop_sequence": None,
                "usage": {"input_tokens": 0, "output_tokens": 1}}
    return {"candidates": [{"content": {"role": "model", "parts": [{"text": "ok"}]}, "finishReason": "STOP", "index": 0}]}


def _upstream(api: str) -> RecordingUpstream:
    body = json.dumps(_reply(api)).encode()
    return RecordingUpstream(lambda method, path, raw: (200, {"content-type": "application/json"}, body))


class _Client:
    """One API's own SDK pointed at the proxy: ``send(history)`` is one turn; its response's
    headers are returned."""

    def __init__(self, api: str, url: str, system: str | None) -> None:
        self.api, self.system = api, system
        if api in ("chat", "responses"):
            self.sdk: Any = openai.OpenAI(base_url=url + "/v1", api_key="sk-test", max_retries=0)
        elif api == "anthropic":
            self.sdk = anthropic.Anthropic(base_url=url, api_key="sk-ant-test", max_retries=0)
        else:
            genai = pytest.importorskip("google.genai", reason="google-genai not installed")
            from google.genai import types

            self.types = types
            self.sdk = genai.Client(api_key="AIza-test", http_options=types.HttpOptions(base_url=url, api_version="v1beta"))

    def send(self, history: list[Any]) -> dict[str, str]:
        model = SHAPE[self.api][1]
        if self.api == "chat":
            raw = self.sdk.chat.completions.with_raw_response.create(model=model, messages=history)
            assert raw.parse().choices[0].message.content == "ok"
            return dict(raw.headers)
        if self.api == "responses":
            raw = self.sdk.responses.with_raw_response.create(model=model, input=history, instructions=self.system)
            assert raw.parse().output_text == "ok"
            return dict(raw.headers)
        if self.api == "anthropic":
            raw = self.sdk.messages.with_raw_response.create(model=model, max_tokens=64, messages=history,
                                                             system=self.system)
            assert raw.parse().content[0].text == "ok"
            return dict(raw.headers)
        out = self.sdk.models.generate_content(
            model=model, contents=history, config=self.types.GenerateContentConfig(system_instruction=self.system))
        assert out.text == "ok"
        return dict(out.sdk_http_response.headers)

    def close(self) -> None:
        self.sdk.close()


def _texts(value: Any) -> set[str]:
    """Every string inside a JSON value (a message's text wherever its shape keeps it)."""
    if isinstance(value, str):
        return {value}
    if isinstance(value, dict):
        return set().union(*map(_texts, value.values())) if value else set()
    if isinstance(value, list):
        return set().union(*map(_texts, value)) if value else set()
    return set()


def _swe_run(api: str) -> tuple[list[Any], str, list[int], int]:
    """A recorded SWE run (django-13741) in ``api``'s shape: its history, its system prompt, the
    history lengths its client sends (each ends with the environment's output) and the budget:
    a sixth of the whole run, where the run's first big output (message 5 of the chat shape,
    ~2,900 tokens: a whole source file) does not fit beside the task and a summary."""
    conv = next(c for c in load_conversations(LOCAL, "mini-swe-agent-gemini3") if "django-13741" in c["source"])
    src = [dict(m) for m in conv["messages"]][:24]
    system = src[0]["content"]
    msgs = convert(src if api == "chat" else src[1:], SHAPE[api][0])
    ends = [e for e in range(2, len(msgs) + 1) if msgs[e - 1]["role"] == "user"]
    full = cf.estimate(convert(conv["messages"] if api == "chat" else conv["messages"][1:], SHAPE[api][0]),
                       provider=API_BY_NAME[api].provider, model=SHAPE[api][1])
    return msgs, system, ends, int(full * 0.15)


def _checked(api: str, body: dict[str, Any], system: str) -> int:
    """The tokens of a body the upstream received, as the proxy's estimate prices it, once the
    API's checker found nothing wrong in its history (calls with their results, roles)."""
    route = API_BY_NAME[api]
    sys_arg = None if api == "chat" else system
    tokens, failures = _core.compaction_verify(
        body[route.history_key], _core.PricedRequest(provider=route.provider, model=SHAPE[api][1], system=sys_arg,
                                                     format=route.wire_format))  # type: ignore[arg-type]
    assert failures == [], failures
    return tokens


def _sent_turn_by_turn(api: str, msgs: list[Any], system: str, ends: list[int], budget: int, **config: Any
                       ) -> list[tuple[int, dict[str, str], Any, list[Any]]]:
    """``msgs[:end]`` for each of ``ends`` sent by ``api``'s SDK through a proxy at ``budget`` with
    a gate at twice it (and ``config``'s other settings, e.g. ``recall=True``): per turn the
    history length, the response's headers, the body the upstream received and what the proxy's
    digest read."""
    digest = _RecordingDigest()
    with _upstream(api) as up, ProxyServer(ServeConfig(upstream=up.url, budget=budget, trigger=2 * budget,
                                                       **config)) as proxy:
        proxy.proxy.folder.summarizer = digest
        client = _Client(api, proxy.url, None if api == "chat" else system)
        try:
            seen = []
            for end in ends:
                read = len(digest.read)
                headers = client.send(msgs[:end])
                seen.append((end, headers, up.seen[-1].body, digest.read[read:]))
        finally:
            client.close()
    return seen


@pytest.mark.parametrize("api", list(SHAPE))
def test_a_newest_output_that_cannot_fit_whole_is_sent_cut_within_the_budget_and_the_next_turns_read_it_whole(api):
    msgs, system, ends, budget = _swe_run(api)
    route = API_BY_NAME[api]
    seen = _sent_turn_by_turn(api, msgs, system, ends, budget)
    # The first turn at the gate: the run's first big output is its newest message.
    at = next(i for i, s in enumerate(seen) if int(s[1]["x-contextfold-tokens-before"]) >= 2 * budget)
    (cut_at, headers, body, _), *after = seen[at:]
    history = body[route.history_key]
    original = msgs[cut_at - 1]
    assert "x-contextfold-not-compacted" not in headers, headers["x-contextfold-not-compacted"]
    assert headers["x-contextfold-fold"] == "new"
    # Within the budget, and a history the API takes; before, 3,775 tokens (chat) of 1,750 went on.
    assert _checked(api, body, system) <= budget
    assert int(headers["x-contextfold-tokens-after"]) <= budget < int(headers["x-contextfold-tokens-before"])
    # The newest message went cut (its head and end kept), the messages before it folded.
    newest = history[-1]
    assert newest != original and CUT_MARK in json.dumps(newest)
    assert newest["role"] == original["role"]
    assert 0 < int(headers["x-contextfold-folded-messages"]) <= cut_at - 1
    big = max(_texts(original), key=len)
    assert big not in _texts(history)
    # The next turns: the client's own message again, never the cut copy; each body valid and under
    # the gate; no turn forwarded over it unchanged.
    assert len(after) >= 3
    text_of_cut = max(_texts(newest), key=len)
    for end, h, b, _ in after[:3]:
        assert "x-contextfold-not-compacted" not in h, h["x-contextfold-not-compacted"]
        assert _checked(api, b, system) < 2 * budget
        assert text_of_cut not in _texts(b[route.history_key])
    # The next compaction read the client's message whole, and the client's turns behind the first
    # summary, not the summary: facts of the turns the first fold summarized reach the next one.
    (end, h, b, reads), = [s for s in after if s[0] == ends[ends.index(cut_at) + 1]]
    assert h["x-contextfold-fold"] == "new" and reads
    read = [m for r in reads for m in r]
    assert big in _texts(read)
    assert not any(_core.SUMMARY_MARKERS[0] in json.dumps(m) for m in read)
    # ... and so every later compaction: the first summary's turns are read, never its digest.
    for _, _, _, reads in after:
        assert not any(_core.SUMMARY_MARKERS[0] in json.dumps(m) for r in reads for m in r)


def test_under_strict_a_first_output_cut_with_nothing_before_it_to_fold_is_sent_and_sent_again_the_same():
    # A run's first command printed a whole directory tree (~3,000 tokens) right after the task:
    # the compaction has nothing to fold and cuts that output's middle. The proxy refused it with
    # a 413 under --strict (forwarded it over the budget without): now the cut output goes on
    # beside a fold of the history's first message alone, as it came. The same history again (a
    # client's retry) goes as the same bytes, not with the client's output whole.
    conv = next(c for c in load_conversations(LOCAL, "mini-swe-agent-gemini3") if "django-14608" in c["source"])
    msgs = [dict(m) for m in conv["messages"]]
    budget = int(cf.estimate(msgs, model="gpt-4o") * 0.15)
    with _upstream("chat") as up, ProxyServer(ServeConfig(upstream=up.url, budget=budget, trigger=2 * budget,
                                                          strict=True)) as proxy:
        client = _Client("chat", proxy.url, None)
        try:
            first = client.send(msgs[:4])
            again = client.send(msgs[:4])
        finally:
            client.close()
    assert "x-contextfold-not-compacted" not in first, first["x-contextfold-not-compacted"]
    assert (first["x-contextfold-fold"], first["x-contextfold-folded-messages"]) == ("new", "1")
    sent = up.seen[0].body["messages"]
    assert _checked("chat", up.seen[0].body, "") <= budget < int(first["x-contextfold-tokens-before"])
    assert sent[:3] == msgs[:3] and CUT_MARK in sent[3]["content"] and sent[3] != msgs[3]
    assert up.seen[1].raw == up.seen[0].raw and again["x-contextfold-tokens-after"] == first["x-contextfold-tokens-after"]


def test_a_history_that_cannot_fit_is_still_forwarded_saying_why_or_refused_under_strict():
    # (What the compaction cannot make fit keeps its header and its 413: the task alone over the
    # budget.)
    conv = next(c for c in load_conversations(LOCAL, "mini-swe-agent-gemini3") if "django-14608" in c["source"])
    msgs = [dict(m) for m in conv["messages"]][:4]
    budget = 300
    for strict in (False, True):
        with _upstream("chat") as up, ProxyServer(ServeConfig(upstream=up.url, budget=budget, trigger=2 * budget,
                                                              strict=strict)) as proxy:
            sdk = openai.OpenAI(base_url=proxy.url + "/v1", api_key="sk-test", max_retries=0)
            try:
                if strict:
                    with pytest.raises(openai.APIStatusError) as e:
                        sdk.chat.completions.create(model="gpt-4o", messages=msgs)
                    assert e.value.status_code == 413 and up.seen == []
                else:
                    raw = sdk.chat.completions.with_raw_response.create(model="gpt-4o", messages=msgs)
                    assert raw.headers["x-contextfold-not-compacted"]
                    assert up.seen[-1].body["messages"] == msgs
            finally:
                sdk.close()
