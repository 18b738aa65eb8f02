"""contextfold.langchain: the drop-in token counter on real LangChain message classes, and the
middleware inside LangChain's own `create_agent` loop driven by LangChain's fake chat model."""

from __future__ import annotations

import asyncio
import functools
import itertools
import json
import pickle

import pytest

import contextfold as cf
from transcripts import LOCAL, load_conversations

pytest.importorskip("langchain.agents", reason="pip install '.[langchain]'")

from langchain.agents import create_agent  # noqa: E402
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel  # noqa: E402
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage, convert_to_messages  # noqa: E402
from langchain_core.messages.utils import count_tokens_approximately, trim_messages  # noqa: E402
from langchain_core.tools import tool  # noqa: E402
from langchain_core.utils.function_calling import convert_to_openai_tool  # noqa: E402

from contextfold.langchain import ContextFoldMiddleware, make_token_counter, to_openai_messages, token_counter  # noqa: E402


def tau_messages() -> tuple[list, list]:
    c = max(load_conversations(LOCAL, "tau-bench-airline"), key=lambda c: len(c["messages"]))
    return convert_to_messages(c["messages"]), c["tools"]


def test_counter_equals_the_estimate_of_the_converted_messages():
    msgs, tools = tau_messages()
    assert isinstance(msgs[2], (AIMessage, HumanMessage, ToolMessage, SystemMessage))
    dicts = to_openai_messages(msgs)
    assert token_counter(msgs) == cf.estimate(dicts)
    assert token_counter(msgs, tools=tools) == cf.estimate(dicts, tools=tools)
    # The same keyword arguments as LangChain's counter are accepted.
    assert token_counter(msgs, chars_per_token=3.0, count_name=False) == token_counter(msgs)


def test_counter_plugs_into_trim_messages():
    msgs, _ = tau_messages()
    kept = trim_messages(msgs, max_tokens=2000, token_counter=make_token_counter(model="gpt-4o"), strategy="last", start_on="human", include_system=True)
    assert 0 < len(kept) < len(msgs)
    assert token_counter(kept, model="gpt-4o") <= 2000
    assert pickle.loads(pickle.dumps(make_token_counter(model="gpt-4o")))(kept) == token_counter(kept, model="gpt-4o")


class RecordingFakeModel(GenericFakeChatModel):
    """LangChain's fake chat model, remembering what it was sent; tools bind to itself."""

    seen: list = []

    def bind_tools(self, tools, **kwargs):  # create_agent binds the agent's tools
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        self.seen.append(list(messages))
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)


BIG = "\n".join(f"-rw-r--r-- 1 root root {i:>6} Nov 23 19:{i % 60:02d} file_{i:04d}.py" for i in range(400))


@tool
def list_files(path: str) -> str:
    """List the files under a path."""
    return f"{path}:\n{BIG}"


def test_middleware_compacts_what_each_model_call_sees_inside_create_agent():
    script = [
        AIMessage(content="", tool_calls=[{"id": "call_1", "name": "list_files", "args": {"path": "/src"}}]),
        AIMessage(content="", tool_calls=[{"id": "call_2", "name": "list_files", "args": {"path": "/tests"}}]),
        AIMessage(content="", tool_calls=[{"id": "call_3", "name": "list_files", "args": {"path": "/docs"}}]),
        AIMessage(content="There are 400 files in each."),
    ]
    model = RecordingFakeModel(messages=iter(script))
    model.seen = []
    compactor = functools.partial(cf.prune, protect_tail_tokens=300, protect_first_n=1, min_tail=2, tool_result_max_tokens=100)
    mw = ContextFoldMiddleware(compactor, model="gpt-4o")
    agent = create_agent(model=model, tools=[list_files], middleware=[mw])
    state = agent.invoke({"messages": [HumanMessage("How many files are in /src and /tests?")]})

    assert len(model.seen) == 4
    # The first call had nothing to compact; the last saw the two older listings pruned
    # (outside the 300-token tail) and the newest intact.
    assert [m.content for m in model.seen[0]] == ["How many files are in /src and /tests?"]
    outputs = [m for m in model.seen[3] if isinstance(m, ToolMessage)]
    assert len(outputs) == 3
    for old in outputs[:2]:
        assert "output pruned" in old.content and len(old.content) < 300
    assert outputs[2].content == f"/docs:\n{BIG}"
    before, after = mw.last_tokens
    assert after < before - 2000
    # The agent's own history is untouched: both full outputs are still there.
    stored = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    assert [m.content for m in stored] == [f"{p}:\n{BIG}" for p in ("/src", "/tests", "/docs")]
    assert state["messages"][-1].content == "There are 400 files in each."


def test_middleware_runs_the_compactor_inside_create_agent():
    script = [
        AIMessage(content="", tool_calls=[{"id": f"call_{i}", "name": "list_files", "args": {"path": f"/d{i}"}}])
        for i in range(4)
    ] + [AIMessage(content="Four directories of 400 files.")]
    model = RecordingFakeModel(messages=iter(script))
    model.seen = []
    compactor = cf.Compactor(model="gpt-4o", budget=14_000, trigger=20_000, tail_tokens=6_000, strategy="hybrid")
    mw = ContextFoldMiddleware(compactor, model="gpt-4o")
    agent = create_agent(model=model, tools=[list_files], middleware=[mw])
    state = agent.invoke({"messages": [HumanMessage("Count the files in /d0 to /d3.")]})

    assert len(model.seen) == 5
    last = model.seen[-1]
    before, after = mw.last_tokens
    assert after <= 14_000 < before
    # The task is kept verbatim, every tool result the model sees follows its call, and the
    # newest listing is intact.
    assert last[0].content == "Count the files in /d0 to /d3."
    called = {c["id"] for m in last if isinstance(m, AIMessage) for c in m.tool_calls}
    assert all(m.tool_call_id in called for m in last if isinstance(m, ToolMessage))
    assert [m for m in last if isinstance(m, ToolMessage)][-1].content == f"/d3:\n{BIG}"
    # The agent's own history is untouched.
    stored = [m for m in state["messages"] if isinstance(m, ToolMessage)]
    assert [m.content for m in stored] == [f"/d{i}:\n{BIG}" for i in range(4)]


SUMMARY = "\n".join(f"## {name}\n- noted about {name.lower()}" for name in cf.summarize.SECTIONS)


class CountingSummaryModel(GenericFakeChatModel):
    """LangChain's fake chat model answering every call with a summary in the template."""

    calls: int = 0

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        self.calls += 1
        return super()._generate(messages, stop=stop, run_manager=run_manager, **kwargs)


def steps(n: int) -> list:
    return [
        AIMessage(content="", tool_calls=[{"id": f"call_{i}", "name": "list_files", "args": {"path": f"/d{i}"}}])
        for i in range(n)
    ] + [AIMessage(content="Done.")]


def test_middleware_summarizes_once_per_compaction_and_only_at_the_trigger():
    model = RecordingFakeModel(messages=iter(steps(7)))
    model.seen = []
    summarizer = CountingSummaryModel(messages=itertools.repeat(AIMessage(SUMMARY)))
    mw = ContextFoldMiddleware(model=summarizer, trigger=("tokens", 24_000), keep=("messages", 2), strategy="summarize",
                               pricing_model="gpt-4o")
    agent = create_agent(model=model, tools=[list_files], middleware=[mw])
    agent.invoke({"messages": [HumanMessage("Count the files in /d0 to /d6.")]})

    assert len(model.seen) == 8
    # An LLMSummarizer on a LangChain chat model wrote the summary: once per compaction, not once
    # per model call, and not before the history reached the trigger.
    assert 1 <= mw.compactions < 4
    assert summarizer.calls == mw.compactions
    # The last compaction's result is there to read (its notes, its summary).
    assert mw.last is not None and mw.last.changed and SUMMARY in (mw.last.summary or "")
    first = [m for m in model.seen[1] if isinstance(m, ToolMessage)]
    assert [m.content for m in first] == [f"/d0:\n{BIG}"]  # under the trigger: sent as is
    sizes = [cf.estimate(seen, model="gpt-4o", tools=[convert_to_openai_tool(list_files)]) for seen in model.seen]
    assert max(sizes) < 24_000 + 7_000  # one listing past the trigger at most, never the whole history
    # Between compactions the model sees the same prefix, up to and including the summary.
    prefixes = []
    for seen in model.seen:
        at = [i for i, m in enumerate(seen) if "<contextfold:summary>" in str(m.content)]
        if at:
            prefixes.append(tuple(str(m.content) for m in seen[: at[0] + 1]))
    assert len(prefixes) >= 2
    assert 1 <= len(set(prefixes)) <= mw.compactions


@tool
def list_some(path: str) -> str:
    """List the first files under a path."""
    return f"{path}:\n" + "\n".join(BIG.splitlines()[:100])


def test_middleware_counts_the_system_prompt_and_tools_in_the_budget():
    script = [AIMessage(content="", tool_calls=[{"id": f"c{i}", "name": "list_some", "args": {"path": f"/d{i}"}}])
              for i in range(6)] + [AIMessage(content="Done.")]
    model = RecordingFakeModel(messages=iter(script))
    model.seen = []
    system = "You are a careful file auditor. " + "Always double-check every listing. " * 300  # 2.2k tokens
    mw = ContextFoldMiddleware(trigger=("tokens", 9_000), budget=6_000, keep=("messages", 2), strategy="summarize",
                               pricing_model="gpt-4o")
    agent = create_agent(model=model, tools=[list_some], middleware=[mw], system_prompt=system)
    agent.invoke({"messages": [HumanMessage("Count the files in /d0 to /d5.")]})
    tools = [convert_to_openai_tool(list_some)]
    assert mw.compactions >= 1
    # What the model received, its system message and tool definitions included, stays under the
    # trigger; a compacted request is within the budget (the messages alone would fit 6,000
    # tokens with the 2.2k-token system prompt on top: the budget counts it).
    for seen in model.seen:
        assert isinstance(seen[0], SystemMessage)
        assert cf.estimate(seen, model="gpt-4o", tools=tools) < 9_000
    folded = [seen for seen in model.seen if any("<contextfold:summary>" in str(m.content) for m in seen)]
    assert folded and min(cf.estimate(seen, model="gpt-4o", tools=tools) for seen in folded) <= 6_000


def test_the_docs_snippet_runs_with_a_fake_model_that_binds_tools():
    # The constructor users know from SummarizationMiddleware, offline (no summarizer model).
    mw = ContextFoldMiddleware(trigger=("tokens", 4000), keep=("messages", 6))
    model = RecordingFakeModel(messages=iter([AIMessage("hi")]))
    agent = create_agent(model=model, tools=[list_files], middleware=[mw])
    assert agent.invoke({"messages": [HumanMessage("hello")]})["messages"][-1].content == "hi"
    with pytest.raises(TypeError, match="trigger"):
        ContextFoldMiddleware()


def test_llm_summarizer_accepts_a_langchain_chat_model():
    summarizer = cf.LLMSummarizer(CountingSummaryModel(messages=itertools.repeat(AIMessage(SUMMARY))), "gpt-4o-mini")
    msgs, _ = tau_messages()
    out = summarizer.summarize(cf.SummaryRequest(messages=msgs[1:20], provider="openai", max_tokens=500))
    assert not out.fallback_used and out.text.startswith("## Goal")
    assert asyncio.run(summarizer.asummarize(cf.SummaryRequest(messages=msgs[1:20], provider="openai"))).text


def test_middleware_accepts_a_result_object_and_rejects_garbage():
    class Result:
        def __init__(self, messages):
            self.messages = messages

    model = RecordingFakeModel(messages=iter([AIMessage(content="hi")]))
    model.seen = []
    agent = create_agent(model=model, tools=[], middleware=[ContextFoldMiddleware(lambda m: Result(m[-1:]))])
    agent.invoke({"messages": [HumanMessage("one"), AIMessage("two"), HumanMessage("three")]})
    assert [m.content for m in model.seen[0]] == ["three"]

    bad = create_agent(model=RecordingFakeModel(messages=iter([AIMessage(content="x")])), tools=[], middleware=[ContextFoldMiddleware(lambda m: 42)])
    with pytest.raises(TypeError, match="compactor must return"):
        bad.invoke({"messages": [HumanMessage("one")]})


def test_module_error_names_the_extra():
    import contextfold.langchain as lc

    assert "'.[langchain]'" in (lc.__doc__ or "")
    assert json.dumps(to_openai_messages([HumanMessage("x")])) == '[{"role": "user", "content": "x"}]'


RECALL_ID = __import__("re").compile(r"id=(cf[0-9a-f]{12})")


def _recall_script(model: RecordingFakeModel, rounds: int, args_of=lambda fold_id: {"id": fold_id}):
    """Four listings, then a recall of the first id the model was shown, then an answer."""
    for i in range(rounds):
        yield AIMessage(content="", tool_calls=[{"id": f"call_{i}", "name": "list_files", "args": {"path": f"/d{i}"}}])
    shown = "\n".join(str(m.content) for m in model.seen[-1])
    yield AIMessage(content="", tool_calls=[{"id": "call_r", "name": cf.RECALL_TOOL, "args": args_of(RECALL_ID.search(shown).group(1))}])
    yield AIMessage(content="The first listing is back.")


@pytest.mark.parametrize("run", ["invoke", "ainvoke"])
@pytest.mark.parametrize("form", ["compactor", "words"])
def test_a_recoverable_compactor_s_folds_are_recalled_through_the_agent_s_tool_node(form, run):
    # What the middleware folded names ids; the recall tool it registers is declared exactly as
    # the Compactor prices it, and the agent's tool node answers the model's call with a page of
    # the original, sized so the next request still fits the budget.
    model = RecordingFakeModel(messages=iter(()))
    model.seen = []
    model.messages = _recall_script(model, 4)
    if form == "compactor":
        mw = ContextFoldMiddleware(cf.Compactor(model="gpt-4o", budget=14_000, trigger=20_000, tail_tokens=6_000,
                                                recoverable=True), model="gpt-4o")
    else:
        mw = ContextFoldMiddleware(trigger=("tokens", 20_000), budget=14_000, pricing_model="gpt-4o", recoverable=True)
    assert [convert_to_openai_tool(t) for t in mw.tools] == [cf.recall_tool("chat")]
    agent = create_agent(model=model, tools=[list_files], middleware=[mw])
    question = {"messages": [HumanMessage("Count the files in /d0 to /d3.")]}
    state = agent.invoke(question) if run == "invoke" else asyncio.run(agent.ainvoke(question))

    (answer,) = [m for m in state["messages"] if isinstance(m, ToolMessage) and m.tool_call_id == "call_r"]
    header, _, page = answer.content.partition("\n")
    assert header.startswith("[contextfold_recall id=cf") and "characters 0-" in header, header
    fold_id = RECALL_ID.search(header).group(1)
    assert len(page) > 200 and mw.compactor.recall(fold_id).startswith(page)  # the original's own text
    # The model's next request carries the call and its answer, within the budget.
    assert answer.content in [m.content for m in model.seen[-1]]
    assert mw.last_tokens[1] <= 14_000, mw.last_tokens
    assert state["messages"][-1].content == "The first listing is back."


def test_a_recall_call_the_model_wrote_wrong_is_answered_through_the_tool_node():
    model = RecordingFakeModel(messages=iter(()))
    model.seen = []
    model.messages = _recall_script(model, 4, args_of=lambda fold_id: {"offset": -3})
    mw = ContextFoldMiddleware(cf.Compactor(model="gpt-4o", budget=14_000, trigger=20_000, recoverable=True))
    agent = create_agent(model=model, tools=[list_files], middleware=[mw])
    state = agent.invoke({"messages": [HumanMessage("Count the files in /d0 to /d3.")]})
    (answer,) = [m for m in state["messages"] if isinstance(m, ToolMessage) and m.tool_call_id == "call_r"]
    # (No id and a negative offset: the first thing wrong is said, with the shape to call with.)
    assert answer.content.startswith("[") and f"call {cf.RECALL_TOOL} again with arguments like" in answer.content, \
        answer.content
    assert state["messages"][-1].content == "The first listing is back."


def test_a_middleware_without_a_recoverable_compactor_registers_no_tool():
    assert ContextFoldMiddleware(cf.Compactor(budget=4_000)).tools == []
    assert ContextFoldMiddleware(trigger=("tokens", 8_000)).tools == []
    with pytest.raises(TypeError, match="recoverable"):
        ContextFoldMiddleware(cf.Compactor(budget=4_000), recoverable=True)


@pytest.mark.parametrize("run", ["invoke", "ainvoke"])
def test_a_compaction_that_cannot_fit_sends_the_history_as_it_stands_and_warns(run, caplog):
    # The task alone is over the budget: the Compactor raises CompactionBudgetError. The agent's
    # run goes on (LangChain's own summarization never raises either), the model is sent the
    # history as it stands, and the warning names the error.
    @tool
    def ping(host: str) -> str:
        """Ping a host."""
        return f"{host}: 64 bytes, time=0.05 ms"

    script = [AIMessage(content="", tool_calls=[{"id": f"call_{i}", "name": "ping", "args": {"host": f"h{i}"}}])
              for i in range(5)] + [AIMessage(content="Done.")]
    model = RecordingFakeModel(messages=iter(script))
    model.seen = []
    mw = ContextFoldMiddleware(cf.Compactor(model="gpt-4o", budget=2_000, trigger=3_000), model="gpt-4o")
    agent = create_agent(model=model, tools=[ping], middleware=[mw])
    question = {"messages": [HumanMessage("Audit these. " + "Context of the audit. " * 800)]}
    with caplog.at_level("WARNING", logger="contextfold.integrations"):
        state = agent.invoke(question) if run == "invoke" else asyncio.run(agent.ainvoke(question))
    assert state["messages"][-1].content == "Done."
    assert len(model.seen[-1]) == len(state["messages"]) - 1  # sent whole
    assert mw.compactions == 0
    assert any("CompactionBudgetError" in r.getMessage() and "ContextFoldMiddleware" in r.getMessage()
               for r in caplog.records), [r.getMessage() for r in caplog.records]
