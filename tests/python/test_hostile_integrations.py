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

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

        def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> Any:
            self.seen.append(list(messages))
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
