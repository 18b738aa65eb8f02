"""The framework hooks, each in its framework's own loop: LiteLLM's pre-call hooks (through
``litellm.acompletion`` to a loopback upstream that records what it received, and with
LiteLLM's mock responses), pydantic-ai's ``history_processors`` with its ``FunctionModel``,
the OpenAI Agents SDK's ``Runner`` with a compacting session and a chat-completions model
pointed at the loopback upstream. What the model receives is valid and within the budget, and
the compaction is reused (the same prefix) on the next calls.

LiteLLM is not in the ``test`` extra (a 200 MB install that also brings aiohttp, which changes
google-genai's async transport): its tests skip visibly when it is absent."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
from typing import Any

import pytest

import contextfold as cf
from contextfold import _core

from proxy_support import RecordingUpstream, json_answer
from replay_server import exchange
from transcripts import LOCAL, load_conversations

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no network fetch at import


def tau() -> dict[str, Any]:
    return max(load_conversations(LOCAL, "tau-bench-airline"), key=lambda c: (len(c["messages"]), c["source"]))


def chat_reply() -> dict[str, Any]:
    return exchange("test_max_completion_tokens[gpt-4o-mini].yaml#0")["response_body"]


# -- LiteLLM -----------------------------------------------------------------------------------


def import_litellm() -> Any:
    """LiteLLM, imported without failing on the warnings its own import raises (pydantic
    schema warnings of its OAuth types): those are LiteLLM's, not contextfold's."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        litellm = pytest.importorskip("litellm", reason="LiteLLM not installed (pip install litellm): not in the test extra")
        import contextfold.integrations.litellm  # noqa: F401
    return litellm



@pytest.mark.filterwarnings("ignore:Item.*ReadOnly:UserWarning")  # LiteLLM's own types, built lazily
def test_litellm_pre_call_hook_compacts_acompletion_requests_and_reuses_the_fold():
    litellm = import_litellm()
    from contextfold.integrations.litellm import ContextFoldLogger

    conv = tau()
    msgs, tools = conv["messages"], conv["tools"]
    full = cf.estimate(msgs, tools=tools, model="gpt-4o")
    hook = ContextFoldLogger(trigger=int(full * 0.7), budget=int(full * 0.5))
    before = list(litellm.callbacks)
    litellm.callbacks = [hook]
    try:
        with RecordingUpstream(json_answer(chat_reply())) as up:
            async def run() -> None:
                for m in range(int(len(msgs) * 0.8), len(msgs) + 1, 4):
                    history = msgs[:m]
                    snapshot = json.dumps(history)
                    r = await litellm.acompletion(model="openai/gpt-4o", messages=history, tools=tools,
                                                  api_base=up.url + "/v1", api_key="sk-test")
                    assert r.choices[0].message.content
                    assert json.dumps(history) == snapshot  # the caller's messages are untouched
                # LiteLLM's mock response runs through the same hook without a network call.
                mocked = await litellm.acompletion(model="gpt-4o", messages=msgs, tools=tools, mock_response="ok")
                assert mocked.choices[0].message.content == "ok"
            asyncio.run(run())
        assert hook.compactions >= 1
        sent = [s.body["messages"] for s in up.seen]
        for s in sent:
            tokens, failures = _core.compaction_verify(s, _core.PricedRequest(format="chat", tools=tools, model="gpt-4o"))
            assert failures == []
            assert tokens <= int(full * 0.7)
        summary_at = [next(i for i, m in enumerate(s) if "<contextfold:summary>" in str(m.get("content"))) for s in sent]
        prefixes = {json.dumps(s[: i + 1]) for s, i in zip(sent, summary_at)}
        assert len(prefixes) <= hook.compactions  # the same prefix until the next compaction
    finally:
        litellm.callbacks = before


@pytest.mark.filterwarnings("ignore:Item.*ReadOnly:UserWarning")  # LiteLLM's own types, built lazily
def test_litellm_proxy_hook_returns_the_body_with_compacted_messages():
    import_litellm()
    from contextfold.integrations.litellm import ContextFoldLogger

    conv = tau()
    full = cf.estimate(conv["messages"], model="gpt-4o")
    hook = ContextFoldLogger(trigger=int(full * 0.6), budget=int(full * 0.4))
    data = {"model": "gpt-4o", "messages": conv["messages"], "user": "u1"}
    out = asyncio.run(hook.async_pre_call_hook(None, None, data, "completion"))
    assert out["user"] == "u1" and out is not data
    assert cf.estimate(out["messages"], model="gpt-4o") <= int(full * 0.4)
    assert data["messages"] is conv["messages"]
    small = {"model": "gpt-4o", "messages": conv["messages"][:3]}
    assert asyncio.run(hook.async_pre_call_hook(None, None, small, "completion")) is small


# -- pydantic-ai -------------------------------------------------------------------------------


def test_pydantic_ai_history_processor_in_the_agent_loop():
    pytest.importorskip("pydantic_ai", reason="pydantic-ai not installed (pip install pydantic-ai-slim)")
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from contextfold.integrations.pydantic_ai import history_processor, to_openai_messages

    listing = "\n".join(f"-rw-r--r-- 1 root root {i:>6} file_{i:04d}.py" for i in range(300))
    seen: list[list[ModelMessage]] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(list(messages))
        step = len(seen)
        if step <= 8:
            return ModelResponse(parts=[ToolCallPart("list_files", {"path": f"/d{step}"}, tool_call_id=f"c{step}")])
        return ModelResponse(parts=[TextPart("Eight directories listed.")])

    processor = history_processor(trigger=12_000, budget=7_000, model="gpt-4o")
    try:
        agent = Agent(FunctionModel(model), history_processors=[processor], system_prompt="You audit files.")
    except TypeError:  # pydantic-ai 2: history processors are a capability
        from pydantic_ai.capabilities import ProcessHistory

        agent = Agent(FunctionModel(model), capabilities=[ProcessHistory(processor)], system_prompt="You audit files.")

    @agent.tool_plain
    def list_files(path: str) -> str:
        """List the files under a path."""
        return f"{path}:\n{listing}"

    result = asyncio.run(agent.run("List /d1 to /d8."))  # run_sync keeps a loop of its own open
    assert result.output == "Eight directories listed."
    assert processor.compactions >= 1
    assert processor.last is not None and processor.last.changed and processor.last.summary
    sizes = [cf.estimate(to_openai_messages(s), model="gpt-4o") for s in seen]
    assert max(sizes) < 12_000 + 3_000  # the trigger, plus at most the listing appended since
    # Every request the model saw starts with the task and pairs each tool call with its return.
    for s in seen:
        dicts = to_openai_messages(s)
        _, failures = _core.compaction_verify(dicts, _core.PricedRequest(format="chat", model="gpt-4o"))
        assert failures == []
        assert "List /d1 to /d8." in json.dumps(dicts[:3])
    # Between compactions the message holding the summary is the same object.
    holders = [next(m for m in s if "<contextfold:summary>" in json.dumps(to_openai_messages([m])))
               for s in seen if "<contextfold:summary>" in json.dumps(to_openai_messages(s))]
    assert holders and len({id(m) for m in holders}) <= processor.compactions
    # pydantic-ai keeps what the processor returned as the run's history: the folded turns are
    # in the summary, the last ones verbatim.
    kept = to_openai_messages(result.all_messages())
    assert "<contextfold:summary>" in json.dumps(kept)
    assert kept[-1]["content"] == "Eight directories listed."


def _pydantic_ai_history(task_parts: list[Any], rounds: int, *, asks: dict[int, str] | None = None) -> list[Any]:
    """A pydantic-ai history: the first request (``task_parts``), then ``rounds`` tool rounds
    listing a directory each, a user prompt of ``asks`` after the round of its key."""
    from pydantic_ai.messages import ModelRequest, ModelResponse, ToolCallPart, ToolReturnPart, UserPromptPart

    listing = "\n".join(f"-rw-r--r-- 1 root root {i:>6} file_{i:04d}.py" for i in range(300))
    history: list[Any] = [ModelRequest(parts=task_parts)]
    for i in range(rounds):
        history.append(ModelResponse(parts=[ToolCallPart("list_files", {"path": f"/d{i}"}, tool_call_id=f"c{i}")]))
        returns: list[Any] = [ToolReturnPart("list_files", f"/d{i}:\n{listing}", tool_call_id=f"c{i}")]
        if asks and i in asks:
            returns.append(UserPromptPart(asks[i]))
        history.append(ModelRequest(parts=returns))
    return history


def _summary_parts(history: list[Any], open_: str) -> list[Any]:
    return [p for m in history for p in m.parts if str(getattr(p, "content", "")).startswith(open_)]


def test_a_pydantic_ai_task_that_opens_with_the_summary_marker_stays_the_task():
    # The previous summary is the one the Compactor placed; a first prompt that merely opens
    # with the marker was taken for one before: folded into the next summary as "the previous
    # summary", and the task gone from the head.
    pytest.importorskip("pydantic_ai", reason="pydantic-ai not installed (pip install pydantic-ai-slim)")
    from pydantic_ai.messages import SystemPromptPart, UserPromptPart

    from contextfold.integrations.pydantic_ai import history_processor

    open_, close = _core.SUMMARY_MARKERS
    task = f"{open_}\n## User requests\n- rm -rf ~ and then list /d0 to /d7\n{close}"
    history = _pydantic_ai_history([SystemPromptPart("You audit files."), UserPromptPart(task)], 8)
    processor = history_processor(trigger=12_000, budget=7_000, model="gpt-4o")
    out = processor(history)
    assert processor.compactions == 1
    assert [p.content for p in out[0].parts] == ["You audit files.", task]  # the task kept verbatim
    assert len(_summary_parts(out, open_)) == 2  # the task, and the summary
    # Its own summary is read as the previous one by the next compaction (merged, not kept).
    more = _pydantic_ai_history([], 6)[1:]
    again = processor([*out, *more])
    assert processor.compactions == 2
    assert [p.content for p in again[0].parts] == ["You audit files.", task]
    assert len(_summary_parts(again, open_)) == 2  # the task, and the new summary


def test_a_pydantic_ai_compaction_writes_back_messages_of_their_own_kinds():
    # Through the Compactor: the older outputs of the kept tail masked (a ToolReturnPart copy
    # answering the same call), what it left whole the same objects, within the budget.
    pytest.importorskip("pydantic_ai", reason="pydantic-ai not installed (pip install pydantic-ai-slim)")
    from pydantic_ai.messages import ModelRequest, ModelResponse, SystemPromptPart, ToolReturnPart, UserPromptPart

    from contextfold.integrations.pydantic_ai import history_processor, to_openai_messages

    from contextfold.integrations.pydantic_ai import ContextFoldHistoryProcessor

    history = _pydantic_ai_history([SystemPromptPart("You audit files."), UserPromptPart("List /d0 to /d7.")], 8)
    # (A tail of three messages at least: two listings, the older of them masked.)
    processor = ContextFoldHistoryProcessor(cf.Compactor(trigger=12_000, budget=7_000, model="gpt-4o", min_tail=3))
    out = processor(history)
    assert processor.compactions == 1
    assert cf.estimate(to_openai_messages(out), model="gpt-4o") <= 7_000
    originals = {id(m) for m in history}
    returns = [(m, p) for m in out if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, ToolReturnPart)]
    masked = [p for _, p in returns if "output pruned" in str(p.content)]
    assert masked and all(p.tool_call_id.startswith("c") for p in masked)
    assert out[-1] is history[-1]  # the newest listing, whole
    assert all(id(m) in originals for m in out if isinstance(m, ModelResponse) and "<contextfold:summary>" not in str(m.parts))
    # The caller's messages unchanged.
    assert all(str(p.content).startswith("/d") for m in history if isinstance(m, ModelRequest)
               for p in m.parts if isinstance(p, ToolReturnPart))


def _as_pydantic_ai(messages: list[dict[str, Any]]) -> list[Any]:
    """An OpenAI chat history (tau-bench) as pydantic-ai messages: system and user turns and
    tool results in requests, each assistant turn a response."""
    from pydantic_ai.messages import (ModelRequest, ModelResponse, SystemPromptPart, TextPart, ToolCallPart,
                                      ToolReturnPart, UserPromptPart)

    out: list[Any] = []
    parts: list[Any] = []
    for m in messages:
        if m["role"] == "assistant":
            if parts:
                out.append(ModelRequest(parts=parts))
                parts = []
            calls = [ToolCallPart(c["function"]["name"], c["function"]["arguments"], tool_call_id=c["id"])
                     for c in m.get("tool_calls") or ()]
            out.append(ModelResponse(parts=([TextPart(m["content"])] if m.get("content") else []) + calls))
        elif m["role"] == "tool":
            parts.append(ToolReturnPart("tool", m["content"], tool_call_id=m["tool_call_id"]))
        else:
            parts.append((SystemPromptPart if m["role"] == "system" else UserPromptPart)(m["content"]))
    if parts:
        out.append(ModelRequest(parts=parts))
    return out


def test_every_pydantic_ai_compaction_of_a_loop_is_written_back_the_last_step_s_too(caplog):
    # tau-bench dialogues fed request by request through one processor each, at budgets where
    # the last step before raising runs: its marker (no summary fits) was not read back before
    # (the history went uncompacted). (It joined the last user turn to the task too, where no
    # marker message fitted: that rewrote the task, and such a compaction raises now.)
    pytest.importorskip("pydantic_ai", reason="pydantic-ai not installed (pip install pydantic-ai-slim)")
    from pydantic_ai.messages import ModelRequest

    from contextfold.integrations.pydantic_ai import history_processor, to_openai_messages

    compactions = marked = 0
    # (Budgets on either side of where the last step runs: which one lands there moves with
    # every change to the estimate of the policy and the tools.)
    with caplog.at_level("WARNING", logger="contextfold"):
        for conv, share in itertools.product(load_conversations(LOCAL, "tau-bench-airline"), (0.30, 0.33, 0.36)):
            history = _as_pydantic_ai(conv["messages"])
            full = cf.estimate(conv["messages"], tools=conv["tools"])
            processor = history_processor(trigger=int(full * (share + 0.12)), budget=int(full * share))
            processor.compactor.tools = conv["tools"]
            for k in range(1, len(history) + 1):
                if not isinstance(history[k - 1], ModelRequest):
                    continue
                out = processor(history[:k])
                sent = to_openai_messages(out)
                _, failures = _core.compaction_verify(sent, _core.PricedRequest(format="chat"))
                assert failures == [], failures
                text = json.dumps(sent)
                marked += "folded without a summary]" in text
            compactions += processor.compactions
    assert not [r for r in caplog.records if "written back" in r.getMessage()]
    assert compactions >= 2 and marked, (compactions, marked)


def test_a_model_s_pydantic_ai_summary_keeps_the_user_s_requests_rules_and_identifiers():
    pytest.importorskip("pydantic_ai", reason="pydantic-ai not installed (pip install pydantic-ai-slim)")
    from pydantic_ai.messages import SystemPromptPart, UserPromptPart

    from contextfold.integrations.pydantic_ai import history_processor
    from contextfold.summarize.base import SummaryResult

    class Terse:
        """A model that paraphrases everything away."""

        def summarize(self, request: Any) -> SummaryResult:
            return SummaryResult("The agent listed some directories.")

    asks = {1: "Also check /etc/hosts for entry 10.0.0.17, and never delete file_0042.py."}
    history = _pydantic_ai_history([SystemPromptPart("You audit files."), UserPromptPart("List /d0 to /d7.")], 8,
                                   asks=asks)
    processor = history_processor(trigger=12_000, budget=7_000, model="gpt-4o", summarizer=Terse())
    out = processor(history)
    (summary,) = [p.content for p in _summary_parts(out, _core.SUMMARY_MARKERS[0])]
    assert "The agent listed some directories." in summary
    assert "Also check /etc/hosts for entry 10.0.0.17" in summary  # the request, verbatim
    assert "never delete file_0042.py" in summary  # the standing rule
    assert _core.IDENTIFIER_INDEX_HEADING in summary and "/etc/hosts" in summary


# -- OpenAI Agents SDK -------------------------------------------------------------------------


def responses_items(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """An OpenAI chat history as the Responses API items the Agents SDK stores."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if m["role"] == "system":
            continue
        if m["role"] == "tool":
            out.append({"type": "function_call_output", "call_id": m["tool_call_id"], "output": m["content"]})
        elif m["role"] == "assistant":
            if m.get("content"):
                out.append({"role": "assistant", "content": m["content"]})
            for c in m.get("tool_calls") or []:
                out.append({"type": "function_call", "call_id": c["id"], "name": c["function"]["name"],
                            "arguments": c["function"]["arguments"]})
        else:
            out.append({"role": "user", "content": m["content"]})
    return out


def test_openai_agents_compacting_session_in_the_runner():
    agents = pytest.importorskip("agents", reason="OpenAI Agents SDK not installed (pip install openai-agents)")
    import openai
    from agents import Agent, OpenAIChatCompletionsModel, Runner

    from contextfold.integrations.openai_agents import CompactingSession

    agents.set_tracing_disabled(True)
    conv = tau()
    items = responses_items(conv["messages"])
    full = cf.estimate(items, model="gpt-4o")
    with RecordingUpstream(json_answer(chat_reply())) as up:
        async def run() -> CompactingSession:
            client = openai.AsyncOpenAI(base_url=up.url + "/v1", api_key="sk-test", max_retries=0)
            session = CompactingSession("c1", trigger=int(full * 0.7), budget=int(full * 0.5), model="gpt-4o")
            await session.add_items(items)
            agent = Agent(name="support", instructions="Help the traveller.",
                          model=OpenAIChatCompletionsModel(model="gpt-4o", openai_client=client))
            for question in ("Can you check again?", "And the return flight?", "Thanks, anything else?"):
                result = await Runner.run(agent, question, session=session)
                assert result.final_output
            await client.close()
            return session

        session = asyncio.run(run())
    assert session.history.compactions == 1
    stored = asyncio.run(session.inner.get_items())
    assert len(stored) == len(items) + 6  # every item kept, verbatim
    sent = [s.body["messages"] for s in up.seen]
    assert len(sent) == 3
    for s in sent:
        tokens, failures = _core.compaction_verify(s, _core.PricedRequest(format="chat", model="gpt-4o"))
        assert failures == []
        assert tokens <= int(full * 0.7)
    # The three turns share the compacted prefix (everything up to and including the summary).
    at = [next(i for i, m in enumerate(s) if "<contextfold:summary>" in json.dumps(m)) for s in sent]
    assert len({json.dumps(s[: i + 1]) for s, i in zip(sent, at)}) == 1


def test_openai_agents_model_input_filter_counts_the_agents_tools():
    # A tool whose description is ~3,500 tokens took 10 of 21 requests of a run over the trigger:
    # compact_model_input counted the instructions but not the tools the SDK sends beside them.
    agents = pytest.importorskip("agents", reason="OpenAI Agents SDK not installed (pip install openai-agents)")
    import openai
    from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, function_tool

    from contextfold.integrations.openai_agents import CompactingSession, agent_tools

    agents.set_tracing_disabled(True)
    rules = " ".join(f"Rule {i}: paths must be relative and inside the workspace root." for i in range(250))

    @function_tool(description_override="Reads a file of the repository. " + rules)
    def read_file(path: str) -> str:
        return "".join(f"{path}:{n}: def f{n}(x): return {n}\n" for n in range(120))

    conv = tau()
    items = responses_items(conv["messages"])
    trigger = cf.estimate(items, model="gpt-4o") // 2 + 4_000
    # The tools and the task alone take ~3,800 tokens (gpt-4o prices strict Responses tools at
    # +216): a budget of half the trigger would leave them no room at all.
    budget = trigger * 3 // 4
    helper = Agent(name="billing", instructions="Refund.")
    with RecordingUpstream(json_answer(chat_reply())) as up:
        async def run() -> tuple[CompactingSession, list[Any] | None]:
            client = openai.AsyncOpenAI(base_url=up.url + "/v1", api_key="sk-test", max_retries=0)
            session = CompactingSession("c2", trigger=trigger, budget=budget, model="gpt-4o")
            await session.add_items(items)
            agent = Agent(name="support", instructions="Help the traveller.", tools=[read_file], handoffs=[helper],
                          model=OpenAIChatCompletionsModel(model="gpt-4o", openai_client=client))
            for question in ("Can you check again?", "And the return flight?"):
                await Runner.run(agent, question, session=session,
                                 run_config=RunConfig(call_model_input_filter=session.compact_model_input))
            await client.close()
            return session, agent_tools(agent)

        session, tools = asyncio.run(run())
    assert tools is not None and {t["name"] for t in tools} == {"read_file", "transfer_to_billing"}
    assert session.history.compactions >= 1
    for s in up.seen:
        sent = cf.estimate(s.body["messages"], model="gpt-4o", tools=s.body.get("tools"))
        assert sent <= trigger, (sent, trigger)


# -- one hook, many conversations ---------------------------------------------------------------


def test_a_request_is_compacted_with_its_own_tools_while_another_with_other_tools_comes_between():
    # One hook serves many conversations at once, and their requests carry other tools (a LiteLLM
    # proxy). While one request's compaction awaits its summarizer, another request comes in with
    # other tools: the first must still be compacted, priced and checked with its own.
    from contextfold.integrations.folding import CompactingHistory

    conv = tau()
    msgs, tools = conv["messages"], conv["tools"]
    other_tools = [{"type": "function", "function": {"name": "get_weather", "description": "Weather of a city. " * 200,
                                                     "parameters": {"type": "object", "properties": {
                                                         "city": {"type": "string"}}}}}]
    other = [{"role": "user", "content": "Weather, please."}] + [
        {"role": "user" if k % 2 == 0 else "assistant", "content": f"Turn {k}: " + "cloudy and mild " * 60}
        for k in range(40)]

    class Waits:
        """An async summarizer whose first call waits until the other request is done."""

        def __init__(self) -> None:
            self.calls, self.inside, self.other_done = 0, asyncio.Event(), asyncio.Event()

        def summarize(self, req: Any) -> str:
            return "The user wants to change a reservation; the agent looked up the profile."

        async def asummarize(self, req: Any) -> str:
            self.calls += 1
            if self.calls == 1:
                self.inside.set()
                await asyncio.wait_for(self.other_done.wait(), 60)
            return self.summarize(req)

    def made(s: Any) -> cf.Compactor:
        return cf.Compactor(trigger=("tokens", 5_000), budget=3_500, strategy="summarize", summarizer=s)

    async def alone() -> list[Any]:
        s = Waits()
        s.other_done.set()
        h = CompactingHistory(made(s))
        h.bind(tools=tools)
        return await h.acompact(msgs)

    async def between(bind: bool) -> list[Any]:
        s = Waits()
        h = CompactingHistory(made(s))

        async def first() -> list[Any]:
            if bind:
                h.bind(tools=tools)
                return await h.acompact(msgs)
            return await h.acompact(msgs, tools=tools)

        async def second() -> None:
            await s.inside.wait()
            if bind:
                h.bind(tools=other_tools)
                await h.acompact(other)
            else:
                await h.acompact(other, tools=other_tools)
            s.other_done.set()

        out, _ = await asyncio.gather(first(), second())
        return out

    want = asyncio.run(alone())
    assert cf.estimate(want, tools=tools) <= 3_500 < cf.estimate(msgs, tools=tools)
    assert asyncio.run(between(bind=True)) == want
    assert asyncio.run(between(bind=False)) == want


def test_a_hook_that_cannot_send_the_recall_tool_refuses_a_recoverable_compactor():
    # CompactingHistory (LiteLLM, the OpenAI Agents session) returns messages, not tools: a
    # recoverable Compactor's placeholders would name a tool the model is never sent.
    from contextfold.integrations.folding import CompactingHistory

    with pytest.raises(ValueError, match="recall tool"):
        CompactingHistory(cf.Compactor(budget=4_000, recoverable=True))
    assert CompactingHistory(cf.Compactor(budget=4_000)).compactions == 0


def test_the_pydantic_ai_history_processor_refuses_a_recoverable_compactor():
    pytest.importorskip("pydantic_ai", reason="pydantic-ai not installed (pip install pydantic-ai-slim)")
    from contextfold.integrations.pydantic_ai import ContextFoldHistoryProcessor

    with pytest.raises(ValueError, match="recall tool"):
        ContextFoldHistoryProcessor(cf.Compactor(budget=4_000, recoverable=True))


def test_compacting_history_sends_a_history_that_cannot_fit_as_it_stands_and_warns(caplog):
    from contextfold.integrations.folding import CompactingHistory

    # The task and the last user turn alone are over the budget: CompactionBudgetError.
    history: list[dict[str, Any]] = [{"role": "user", "content": "Audit these. " + "Context of the audit. " * 800}]
    for i in range(6):
        history += [{"role": "assistant", "content": f"Step {i}: " + "noted. " * 100},
                    {"role": "user", "content": f"Go on with step {i + 1}."}]
    with pytest.raises(cf.CompactionBudgetError):
        cf.Compactor(budget=2_000, trigger=3_000).compact(history)
    h = CompactingHistory(cf.Compactor(budget=2_000, trigger=3_000))
    with caplog.at_level("WARNING", logger="contextfold.integrations"):
        assert h.compact(history) == history
        assert asyncio.run(h.acompact(history)) == history
    assert h.compactions == 0
    assert sum("CompactionBudgetError" in r.getMessage() for r in caplog.records) == 2
