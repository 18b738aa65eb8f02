"""The framework hooks under hostile input, each inside its framework's own agent loop: message
objects with unusual fields, damaged histories and options, checked at every model call (the
request valid for its API, within the budget, the framework's stored history unchanged, clear
errors). See docs/hostile-input.md, "Framework integrations"."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

import contextfold as cf
from contextfold import _core


def pairs_failures(dicts: list[dict[str, Any]], tools: Any = None) -> list[Any]:
    """What the core's check finds wrong with an OpenAI chat request, arguments the model itself
    wrote as invalid JSON aside (the framework sends those as they are)."""
    _, failures = _core.compaction_verify(dicts, _core.PricedRequest(format="chat", tools=tools, model="gpt-4o"))
    return [f for f in failures if f[0] != "invalid_arguments"]


# -- LangChain ---------------------------------------------------------------------------------


def _langchain() -> Any:
    pytest.importorskip("langchain.agents", reason="pip install '.[langchain]'")
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel

    class Recording(GenericFakeChatModel):
        """LangChain's fake chat model, remembering what it was sent; tools bind to itself."""

        seen: list[Any] = []
        #: Per call: the middleware's (compactions, last_tokens) as the model is called.
        probe: list[Any] = []
        mw: Any = None

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

        def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
            self.seen.append(list(messages))
            if self.mw is not None:
                self.probe.append((self.mw.compactions, self.mw.last_tokens))
            return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)

    return Recording


def _as_langchain_sends(messages: list[Any]) -> list[dict[str, Any]]:
    """The OpenAI chat request LangChain's OpenAI integration makes of ``messages``: an AI
    message's invalid tool calls are sent as calls too (``convert_to_openai_messages`` drops
    them)."""
    from langchain_core.messages import AIMessage, convert_to_openai_messages

    out = []
    for m in messages:
        d = convert_to_openai_messages([m])[0]
        if isinstance(m, AIMessage) and m.invalid_tool_calls:
            d["tool_calls"] = [*d.get("tool_calls", []), *(
                {"type": "function", "id": c["id"], "function": {"name": c["name"], "arguments": c["args"]}}
                for c in m.invalid_tool_calls)]
        out.append(d)
    return out


def test_a_langchain_ai_message_with_invalid_tool_calls_compacts_into_a_valid_request(caplog):
    # create_agent answers each invalid call with an error ToolMessage; the Compactor read only
    # tool_calls, took that answer for a result without a call, and every compaction failed as
    # unpaired: the history went to the model whole, past the budget, turn after turn.
    Recording = _langchain()
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    from langchain_core.tools import tool

    from contextfold.integrations.langchain import ContextFoldMiddleware

    @tool
    def read_file(path: str) -> str:
        """Read a file."""
        return f"{path}: " + "lorem ipsum dolor " * 400

    def script() -> Any:
        for t in range(10):
            bad = [{"type": "invalid_tool_call", "id": f"bad{t}", "name": "read_file", "args": '{"path": ',
                    "error": "truncated JSON"}] if t % 3 == 1 else []
            yield AIMessage(content="", tool_calls=[{"id": f"c{t}", "name": "read_file", "args": {"path": f"f{t}.py"}}],
                            invalid_tool_calls=bad)
        yield AIMessage(content="All done.")

    model = Recording(messages=script())
    model.seen = []
    mw = ContextFoldMiddleware(cf.Compactor(model="gpt-4o", budget=3_000, trigger=6_000), model="gpt-4o")
    agent = create_agent(model=model, tools=[read_file], middleware=[mw])
    with caplog.at_level("WARNING", logger="contextfold"):
        state = agent.invoke({"messages": [HumanMessage("Read f0.py to f9.py.")]})
    assert state["messages"][-1].content == "All done."
    assert not [r.getMessage() for r in caplog.records if "Unpaired" in r.getMessage()]
    assert mw.compactions >= 2
    sizes = []
    for seen in model.seen:
        assert pairs_failures(_as_langchain_sends(seen)) == []
        sizes.append(cf.estimate(seen, model="gpt-4o"))
    assert max(sizes) < 6_000 + 2_000  # the trigger, plus one output appended since at most
    # The invalid calls the model was sent are still invalid calls (not made calls the tool
    # node would run), and the agent's own history keeps them as the model wrote them.
    sent_invalid = {c["id"] for m in model.seen[-1] if isinstance(m, AIMessage) for c in m.invalid_tool_calls}
    sent_calls = {c["id"] for m in model.seen[-1] if isinstance(m, AIMessage) for c in m.tool_calls}
    assert sent_invalid and not sent_invalid & sent_calls and all(i.startswith("bad") for i in sent_invalid)
    stored = [m for m in state["messages"] if isinstance(m, AIMessage) and m.invalid_tool_calls]
    assert [c["id"] for m in stored for c in m.invalid_tool_calls] == ["bad1", "bad4", "bad7"]
    assert all(c["id"].startswith("c") for m in stored for c in m.tool_calls)
    errors = [m for m in state["messages"] if isinstance(m, ToolMessage) and m.tool_call_id.startswith("bad")]
    assert len(errors) == 3 and all(m.status == "error" for m in errors)


def _thinking_loop(turns: int) -> Any:
    """A thinking model's tool loop as langchain-anthropic writes it: each AI message a signed
    thinking block, then (every other turn) text, then its tool_use blocks, with ``tool_calls``."""
    from langchain_core.messages import AIMessage

    for t in range(turns):
        calls = [{"id": f"toolu_{t}_{j}", "name": "read_file", "args": {"path": f"f{t}_{j}.py"}} for j in range(1 + t % 3)]
        yield AIMessage(content=[
            {"type": "thinking", "thinking": "I should read more. " * 30, "signature": "EqQBCkYIBxgCKkA" + "x" * 200},
            *([{"type": "text", "text": f"Reading batch {t}."}] if t % 2 else []),
            *({"type": "tool_use", "id": c["id"], "name": c["name"], "input": c["args"]} for c in calls)],
            tool_calls=calls)
    yield AIMessage(content="All done.")


def test_a_langchain_thinking_tool_loop_compacts_with_the_summary_after_the_thinking(caplog):
    # Every cut of a chat thinking loop opens the tail on an assistant turn with thinking after
    # the user's task, and tool results are tool messages: no seat for the summary was found,
    # every compaction failed as "messages 0 and 1 share a role" and the history went whole.
    Recording = _langchain()
    from langchain.agents import create_agent
    from langchain_core.messages import AIMessage, HumanMessage, convert_to_openai_messages
    from langchain_core.tools import tool

    from contextfold.integrations.langchain import ContextFoldMiddleware

    @tool
    def read_file(path: str) -> str:
        """Read a file."""
        return f"{path}: " + "lorem ipsum dolor " * 400

    model = Recording(messages=_thinking_loop(20))
    model.seen = []
    compactor = cf.Compactor(model="gpt-4o", budget=8_000, trigger=12_000, strategy="summarize")
    mw = ContextFoldMiddleware(compactor, model="gpt-4o")
    model.mw, model.probe = mw, []
    agent = create_agent(model=model, tools=[read_file], middleware=[mw])
    with caplog.at_level("WARNING", logger="contextfold"):
        state = agent.invoke({"messages": [HumanMessage("Read every file.")]}, {"recursion_limit": 200})
    assert state["messages"][-1].content == "All done."
    assert not [r.getMessage() for r in caplog.records], [r.getMessage() for r in caplog.records]
    assert mw.compactions >= 3
    counts = [n for n, _ in model.probe]
    compacted = [tokens for k, (n, tokens) in enumerate(model.probe) if k and n > counts[k - 1]]
    assert len(compacted) == mw.compactions and all(after <= 8_000 for _, after in compacted), compacted
    open_ = _core.SUMMARY_MARKERS[0]
    holders = []
    for seen in model.seen:
        assert pairs_failures(convert_to_openai_messages(seen)) == []
        assert cf.estimate(seen, model="gpt-4o") < 12_000 + 3_000
        with_summary = [m for m in seen if open_ in json.dumps(m.content)]
        assert len(with_summary) <= 1  # the previous summary read and merged, never repeated
        holders += with_summary
    assert holders
    for m in holders:
        # The summary goes after the signed thinking block, before the model's text and calls.
        assert isinstance(m, AIMessage) and m.content[0]["type"] == "thinking"
        assert m.content[0]["signature"].startswith("EqQBCkYIBxgCKkA")
        assert m.content[1]["type"] == "text" and m.content[1]["text"].startswith(open_)
        assert m.content[-1]["type"] == "tool_use"
    assert not any(open_ in json.dumps(m.content) for m in state["messages"])  # the agent's own history


# -- pydantic-ai -------------------------------------------------------------------------------


def _pydantic_ai_agent(model_fn: Any, processor: Any) -> Any:
    from pydantic_ai import Agent

    try:
        return Agent(model_fn, history_processors=[processor], system_prompt="You audit files.")
    except TypeError:  # pydantic-ai 2: history processors are a capability
        from pydantic_ai.capabilities import ProcessHistory

        return Agent(model_fn, capabilities=[ProcessHistory(processor)], system_prompt="You audit files.")


def test_a_summary_merged_into_a_pydantic_ai_thinking_response_goes_after_its_thinking():
    # A summary merged into a response without text was inserted as its first part, before its
    # ThinkingPart: Anthropic wants a thinking model's last response to open with its thinking.
    pytest.importorskip("pydantic_ai", reason="pydantic-ai not installed (pip install pydantic-ai-slim)")
    import asyncio

    from pydantic_ai.messages import ModelResponse, TextPart, ThinkingPart, ToolCallPart
    from pydantic_ai.models.function import FunctionModel

    from contextfold.integrations.pydantic_ai import ContextFoldHistoryProcessor

    seen: list[list[Any]] = []

    def model(messages: list[Any], info: Any) -> ModelResponse:
        seen.append(list(messages))
        step = len(seen)
        if step > 16:
            return ModelResponse(parts=[TextPart("All done.")])
        return ModelResponse(parts=[ThinkingPart("Let me think. " * 40, signature="sig" * 20, provider_name="anthropic"),
                                    ToolCallPart("read_file", {"path": f"f{step}.py"}, tool_call_id=f"c{step}")])

    processor = ContextFoldHistoryProcessor(cf.Compactor(model="gpt-4o", trigger=6_000, budget=3_000,
                                                         strategy="summarize"))
    agent = _pydantic_ai_agent(FunctionModel(model), processor)

    @agent.tool_plain
    def read_file(path: str) -> str:
        """Read a file."""
        return f"{path}: " + "lorem ipsum " * 400

    result = asyncio.run(agent.run("Audit f1 to f16."))
    assert result.output == "All done." and processor.compactions >= 2
    open_ = _core.SUMMARY_MARKERS[0]
    merged = 0
    for messages in [*seen, result.all_messages()]:
        for m in messages:
            if isinstance(m, ModelResponse) and any(open_ in getattr(p, "content", "") for p in m.parts
                                                    if isinstance(p, TextPart)):
                merged += 1
                kinds = [type(p).__name__ for p in m.parts]
                assert kinds == ["ThinkingPart", "TextPart", "ToolCallPart"], kinds
    assert merged


# -- OpenAI Agents SDK -------------------------------------------------------------------------


def _responses_upstream(turns: int, calls_per_turn: int) -> Any:
    """A loopback Responses API answering with the recorded response, its output replaced by
    ``calls_per_turn`` function calls (after a reasoning item) for ``turns`` requests, then the
    final answer."""
    import copy

    from proxy_support import RecordingUpstream
    from replay_server import exchange

    base = exchange("test_openai_responses_system_prompt.yaml#0")["response_body"]
    asked = [0]

    def answer(method: str, path: str, raw: bytes) -> tuple[int, dict[str, str], bytes]:
        k = asked[0]
        asked[0] += 1
        body = copy.deepcopy(base)
        body["id"] = f"resp_{k}"
        if k < turns:
            body["output"] = [
                {"type": "reasoning", "id": f"rs_{k}", "summary": [{"type": "summary_text", "text": "Reading on."}],
                 "encrypted_content": "gAAAA" + "x" * 800},
                *({"type": "function_call", "id": f"fc_{k}_{j}", "call_id": f"call_{k}_{j}", "name": "read_file",
                   "arguments": json.dumps({"path": f"f{k}_{j}.py"}), "status": "completed"}
                  for j in range(calls_per_turn))]
        else:
            body["output"][0]["content"][0]["text"] = "All done."
        return 200, {"content-type": "application/json"}, json.dumps(body).encode()

    return RecordingUpstream(answer)


def test_an_openai_agents_run_s_own_tool_loop_is_compacted_at_every_model_call():
    # The runner reads a session once per Runner.run: a run's own tool loop reached the model
    # whole whatever the trigger (12 model calls, no compaction, 35,625 tokens at a trigger of
    # 4,000). session.compact_model_input, the RunConfig's model input filter, compacts each call.
    agents = pytest.importorskip("agents", reason="OpenAI Agents SDK not installed (pip install openai-agents)")
    import asyncio

    import openai
    from agents import Agent, OpenAIResponsesModel, RunConfig, Runner, function_tool

    from contextfold.integrations.openai_agents import CompactingSession

    agents.set_tracing_disabled(True)

    @function_tool
    def read_file(path: str) -> str:
        """Read a file."""
        return f"{path}: " + "lorem ipsum " * 400

    with _responses_upstream(turns=12, calls_per_turn=3) as up:
        async def run() -> tuple[Any, CompactingSession, list[Any]]:
            client = openai.AsyncOpenAI(base_url=up.url + "/v1", api_key="sk-test", max_retries=0)
            session = CompactingSession("s1", trigger=4_000, budget=2_000, model="gpt-4o")
            agent = Agent(name="a", instructions="Read what you are asked to.", tools=[read_file],
                          model=OpenAIResponsesModel(model="gpt-4o", openai_client=client))
            result = await Runner.run(agent, "Read every file.", session=session, max_turns=50,
                                      run_config=RunConfig(call_model_input_filter=session.compact_model_input))
            stored = await session.inner.get_items()
            await client.close()
            return result, session, stored

        result, session, stored = asyncio.run(run())
    assert result.final_output == "All done."
    assert len(up.seen) == 13 and session.history.compactions >= 3
    for seen in up.seen:
        items = seen.body["input"]
        tokens, failures = _core.compaction_verify(items, _core.PricedRequest(format="responses", model="gpt-4o"))
        assert failures == []
        assert cf.estimate(items, model="gpt-4o") < 4_000 + 3_000  # the trigger, plus one turn's outputs
    # The session keeps every item verbatim: the run's 12 turns of a reasoning item, 3 calls and
    # their 3 outputs, the question and the answer.
    assert len(stored) == 1 + 12 * 7 + 1
    assert all("output pruned" not in json.dumps(i) for i in stored)


# -- LiteLLM -----------------------------------------------------------------------------------


def _import_litellm() -> Any:
    import os
    import warnings

    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network fetch at import
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # LiteLLM's own pydantic warnings at import
        litellm = pytest.importorskip("litellm", reason="LiteLLM not installed (pip install litellm)")
        import contextfold.integrations.litellm  # noqa: F401
    return litellm


@pytest.mark.filterwarnings("ignore::contextfold.UnknownModelWarning")
def test_a_litellm_proxy_hook_fed_ever_new_model_names_keeps_a_bounded_memory():
    # The proxy's pre-call hook sees each request's model string before LiteLLM routes or
    # refuses it, and kept a Compactor and its remembered folds per name without a bound:
    # 800 names took 17.9 MB and a client varying the name grew it without end.
    import asyncio
    import tracemalloc

    _import_litellm()
    from contextfold.integrations import litellm as hooks

    MAX_MODELS = getattr(hooks, "MAX_MODELS", 64)
    ContextFoldLogger = hooks.ContextFoldLogger

    hook = ContextFoldLogger(trigger=3_000, budget=1_500)
    history = [{"role": "user", "content": "The task."}] + [
        {"role": "assistant" if i % 2 == 0 else "user", "content": f"Turn {i}: " + "word " * 300} for i in range(20)]

    async def requests(names: range) -> None:
        for i in names:
            data = {"model": f"gpt-4o-tenant-{i}", "messages": history}
            out = await hook.async_pre_call_hook(None, None, data, "completion")
            assert cf.estimate(out["messages"], model="gpt-4o") <= 1_500

    asyncio.run(requests(range(MAX_MODELS)))  # (the first ones: every Compactor built once)
    tracemalloc.start()
    try:
        asyncio.run(requests(range(MAX_MODELS, 2 * MAX_MODELS)))
        grown, _ = tracemalloc.get_traced_memory()
        asyncio.run(requests(range(2 * MAX_MODELS, 6 * MAX_MODELS)))
        more, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert more < grown * 1.5 + 500_000, (grown, more)  # four times the names, not four times the memory
    assert len(hook._histories) == MAX_MODELS
    assert hook.compactions == 6 * MAX_MODELS  # the forgotten ones' compactions still counted


@pytest.mark.parametrize("option", [{"trigger": -5}, {"trigger": "lots"}, {"budget": "1000"}, {"keep": -3},
                                    {"strategy": "fold"}, {"trigger": ("bogus", 3)}])
def test_a_bad_litellm_logger_option_is_refused_at_construction_not_at_every_request(option):
    # The logger built its Compactors at the first request of each model: a bad option was
    # accepted, then every litellm.acompletion through the hook failed with its ValueError.
    _import_litellm()
    from contextfold.integrations.litellm import ContextFoldLogger

    with pytest.raises((ValueError, TypeError), match=next(iter(option))):
        ContextFoldLogger(**option)


def _png(w: int, h: int) -> bytes:
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    raw = b"".join(b"\x00" + b"\x80" * (w * 3) for _ in range(h))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def test_pydantic_ai_screenshots_are_priced_as_images_and_compacted_at_the_trigger():
    # A user prompt's images were read as the text "[BinaryContent]": twelve 1024x768
    # screenshots priced 259 tokens where the request held about 9,400, and the history went to
    # the model whole, never reaching a trigger of 6,000.
    pytest.importorskip("pydantic_ai", reason="pydantic-ai not installed (pip install pydantic-ai-slim)")
    import asyncio
    import base64

    from pydantic_ai.messages import (BinaryContent, ModelRequest, ModelResponse, SystemPromptPart, TextPart,
                                      UserPromptPart)
    from pydantic_ai.models.function import FunctionModel

    from contextfold.integrations.pydantic_ai import history_processor

    def as_sent(messages: list[Any]) -> list[dict[str, Any]]:
        """The OpenAI chat messages pydantic-ai's OpenAI model makes of these (text turns only)."""
        out: list[dict[str, Any]] = []
        for m in messages:
            for p in m.parts:
                if isinstance(p, TextPart):
                    out.append({"role": "assistant", "content": p.content})
                elif isinstance(p, (SystemPromptPart, UserPromptPart)) and isinstance(p.content, str):
                    out.append({"role": "system" if isinstance(p, SystemPromptPart) else "user", "content": p.content})
                elif isinstance(p, UserPromptPart):
                    out.append({"role": "user", "content": [
                        {"type": "text", "text": c} if isinstance(c, str) else
                        {"type": "image_url", "image_url": {"url": f"data:{c.media_type};base64,"
                                                                   + base64.b64encode(c.data).decode()}}
                        for c in p.content]})
        return out

    screenshot = _png(1024, 768)
    history: list[Any] = [ModelRequest(parts=[SystemPromptPart("You review screenshots."),
                                              UserPromptPart("Review each screen.")])]
    for i in range(12):
        history += [ModelResponse(parts=[TextPart(f"Noted screen {i}.")]),
                    ModelRequest(parts=[UserPromptPart([f"Screen {i}:", BinaryContent(screenshot, media_type="image/png")])])]
    history.append(ModelResponse(parts=[TextPart("Noted screen 12.")]))
    assert cf.estimate(as_sent(history), model="gpt-4o") > 9_000
    seen: list[list[Any]] = []

    def model(messages: list[Any], info: Any) -> ModelResponse:
        seen.append(list(messages))
        return ModelResponse(parts=[TextPart("The login screen has the bug.")])

    processor = history_processor(trigger=6_000, budget=3_000, model="gpt-4o")
    agent = _pydantic_ai_agent(FunctionModel(model), processor)
    snapshot = [m.parts for m in history]
    result = asyncio.run(agent.run(["Which screen has the bug?", BinaryContent(screenshot, media_type="image/png")],
                                   message_history=history))
    assert result.output == "The login screen has the bug."
    assert processor.compactions == 1
    assert cf.estimate(as_sent(seen[-1]), model="gpt-4o") <= 3_000
    # The screenshots kept are the caller's own objects; the caller's history is unchanged.
    originals = {id(c) for m in history for p in m.parts if isinstance(p, UserPromptPart)
                 and not isinstance(p.content, str) for c in p.content}
    kept = [c for m in seen[-1] for p in m.parts if isinstance(p, UserPromptPart) and not isinstance(p.content, str)
            for c in p.content if isinstance(c, BinaryContent)]
    assert kept and all(id(c) in originals for c in kept[:-1]) and kept[-1].data == screenshot
    assert [m.parts for m in history] == snapshot


def test_pydantic_ai_screenshots_a_tool_returns_are_priced_and_old_ones_masked():
    # A tool returning an image (a browser agent's screenshot) was read as its text, "": twelve
    # 1024x768 screenshots priced 283 tokens in all, and the loop never compacted.
    pytest.importorskip("pydantic_ai", reason="pydantic-ai not installed (pip install pydantic-ai-slim)")
    import asyncio
    import base64

    from pydantic_ai.messages import BinaryContent, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import FunctionModel

    from contextfold.integrations.pydantic_ai import history_processor

    def images_sent(messages: list[Any]) -> int:
        """Tokens of the screenshots the model is sent (each beside its tool message)."""
        parts = [{"type": "image_url", "image_url": {"url": "data:image/png;base64," + base64.b64encode(p.content.data).decode()}}
                 for m in messages for p in m.parts if isinstance(p, ToolReturnPart) and isinstance(p.content, BinaryContent)]
        return cf.estimate([{"role": "user", "content": parts}], model="gpt-4o") if parts else 0

    screenshot = _png(1024, 768)
    seen: list[list[Any]] = []

    def model(messages: list[Any], info: Any) -> ModelResponse:
        seen.append(list(messages))
        if len(seen) > 12:
            return ModelResponse(parts=[TextPart("All done.")])
        return ModelResponse(parts=[ToolCallPart("screenshot", {"page": len(seen)}, tool_call_id=f"c{len(seen)}")])

    processor = history_processor(trigger=6_000, budget=3_000, model="gpt-4o")
    agent = _pydantic_ai_agent(FunctionModel(model), processor)

    @agent.tool_plain(name="screenshot")
    def take_screenshot(page: int) -> Any:
        """Take a screenshot of a page."""
        return BinaryContent(screenshot, media_type="image/png")

    result = asyncio.run(agent.run("Check every page."))
    assert result.output == "All done."
    assert processor.compactions >= 1
    assert max(images_sent(s) for s in seen) < 6_000 + 800  # the trigger, plus one screenshot
    returns = [p for m in seen[-1] for p in m.parts if isinstance(p, ToolReturnPart)]
    assert isinstance(returns[0].content, str) and "omitted" in returns[0].content  # the oldest, masked
    assert isinstance(returns[-1].content, BinaryContent)  # the newest, whole


def test_pydantic_ai_web_search_results_the_provider_reads_back_are_priced():
    # NativeToolCallPart / NativeToolReturnPart (a provider's own web search) were not read:
    # results the provider reads back on every request were priced nothing, and a loop of
    # searches went to the model whole.
    pytest.importorskip("pydantic_ai", reason="pydantic-ai not installed (pip install pydantic-ai-slim)")
    import asyncio

    from pydantic_ai.messages import ModelResponse, NativeToolCallPart, NativeToolReturnPart, TextPart, UserPromptPart
    from pydantic_ai.models.function import FunctionModel

    from contextfold.integrations.pydantic_ai import history_processor

    results = [{"url": f"https://example.com/{i}", "title": f"Result {i}", "encrypted_content": "E" * 2_000}
               for i in range(10)]

    def as_sent(messages: list[Any]) -> int:
        """Tokens of the prompts, texts and search results the provider reads."""
        texts = [json.dumps(p.content) if isinstance(p, NativeToolReturnPart) else str(p.content)
                 for m in messages for p in m.parts if isinstance(p, (NativeToolReturnPart, TextPart, UserPromptPart))]
        return cf.estimate([{"role": "user", "content": t} for t in texts], model="gpt-4o")

    seen: list[list[Any]] = []

    def model(messages: list[Any], info: Any) -> ModelResponse:
        seen.append(list(messages))
        k = len(seen)
        return ModelResponse(parts=[
            NativeToolCallPart("web_search", {"query": f"q{k}"}, tool_call_id=f"srv{k}", provider_name="anthropic"),
            NativeToolReturnPart("web_search", results, tool_call_id=f"srv{k}", provider_name="anthropic"),
            TextPart(f"Found what you asked in search {k}.")])

    processor = history_processor(trigger=12_000, budget=6_000, model="gpt-4o")
    agent = _pydantic_ai_agent(FunctionModel(model), processor)
    history: list[Any] = []
    for turn in range(6):
        result = asyncio.run(agent.run(f"Search for topic {turn}.", message_history=history))
        history = result.all_messages()
    assert processor.compactions >= 1
    one = cf.estimate([{"role": "user", "content": json.dumps(results)}], model="gpt-4o")
    assert max(as_sent(s) for s in seen) < 12_000 + one  # the trigger, plus one search


# -- every hook ----------------------------------------------------------------------------------


def _hooks() -> list[tuple[str, Any]]:
    """(name, make(**options)) of each hook whose framework is installed."""
    out: list[tuple[str, Any]] = []
    try:
        from contextfold.integrations.langchain import ContextFoldMiddleware
    except ImportError:
        pass
    else:
        out.append(("langchain", lambda **o: ContextFoldMiddleware(cf.Compactor(**o))))
    try:
        from contextfold.integrations.pydantic_ai import ContextFoldHistoryProcessor
    except ImportError:
        pass
    else:
        out.append(("pydantic-ai", lambda **o: ContextFoldHistoryProcessor(cf.Compactor(**o))))
    try:
        from contextfold.integrations.openai_agents import CompactingSession
    except ImportError:
        pass
    else:
        out.append(("openai-agents", lambda **o: CompactingSession("s", **o)))
    return out


@pytest.mark.parametrize("options", [{"trigger": 0.5}, {"trigger": ("fraction", 0.5)}, {"trigger": ("messages", 50)}])
def test_a_hook_without_a_budget_it_could_compact_to_is_refused_when_made(options):
    # A fraction trigger (or a message count) with no model window and no budget was accepted,
    # then every call of the framework raised "no context window" once the history was read.
    hooks = _hooks()
    if not hooks:
        pytest.skip("no agent framework installed")
    for name, make in hooks:
        with pytest.raises(ValueError, match="context window"):
            make(**options)
        make(**options, context_window=128_000)  # (with a window it compacts)
        make(**options, budget=4_000)


def test_a_pydantic_ai_prompt_whose_screenshot_is_omitted_keeps_its_other_media():
    # Writing back a user prompt the compaction edited (its old screenshot omitted) replaced the
    # whole content with text: the document beside it became the words "[DocumentUrl]".
    pytest.importorskip("pydantic_ai", reason="pydantic-ai not installed (pip install pydantic-ai-slim)")
    from pydantic_ai.messages import (BinaryContent, DocumentUrl, ModelRequest, ModelResponse, SystemPromptPart,
                                      TextPart, UserPromptPart)

    from contextfold.integrations.pydantic_ai import history_processor

    screenshot = _png(1024, 768)
    history: list[Any] = [ModelRequest(parts=[SystemPromptPart("You review screens."), UserPromptPart("Review each.")])]
    documents = []
    for i in range(12):
        documents.append(DocumentUrl(url=f"https://example.com/spec-{i}.pdf"))
        history += [ModelResponse(parts=[TextPart(f"Noted screen {i}.")]),
                    ModelRequest(parts=[UserPromptPart([f"Screen {i}:", BinaryContent(screenshot, media_type="image/png"),
                                                        documents[-1]])])]
    processor = history_processor(trigger=6_000, budget=3_000, model="gpt-4o")
    out = processor(history)
    assert processor.compactions == 1
    prompts = [p for m in out if isinstance(m, ModelRequest) for p in m.parts
               if isinstance(p, UserPromptPart) and not isinstance(p.content, str)]
    edited = [p for p in prompts if not any(isinstance(c, BinaryContent) for c in p.content)]
    assert edited  # old screenshots omitted
    for p in prompts:
        kept = [c for c in p.content if isinstance(c, DocumentUrl)]
        assert len(kept) == 1 and any(kept[0] is d for d in documents), p.content
