"""contextfold.langchain: the drop-in token counter on real LangChain message classes, and the
middleware inside LangChain's own `create_agent` loop driven by LangChain's fake chat model."""

from __future__ import annotations

import functools
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
    compactor = cf.Compactor(model="gpt-4o", budget=14_000, tail_tokens=6_000, strategy="hybrid")
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
