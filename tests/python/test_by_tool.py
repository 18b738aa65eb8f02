"""`breakdown(...).by_tool` / `by_server`: where the tool schemas' tokens go."""

from __future__ import annotations

import contextfold as cf
from contextfold.breakdown import RESPONSE_FORMAT_KEY, TOOL_PROMPT_KEY
from transcripts import LOCAL, SHARED, load_conversations, load_requests, shared_available

ROOT = SHARED if shared_available() else LOCAL


def test_by_tool_adds_up_to_the_tool_schemas_on_every_recorded_request() -> None:
    checked = 0
    for r in load_requests(ROOT):
        if not isinstance(r.tools, list) or not r.tools or r.profile == "gemini":
            continue
        b = cf.breakdown(r.messages, provider=r.profile, model=r.model, tools=r.tools)
        assert sum(b.by_tool.values()) == b.by_kind["tool_schemas"], r.source
        assert sum(b.by_server.values()) + b.by_tool.get(TOOL_PROMPT_KEY, 0) == b.by_kind["tool_schemas"]
        checked += 1
    assert checked >= 10


def test_the_largest_schema_costs_the_most_and_mcp_tools_group_by_server() -> None:
    conv = load_conversations(ROOT, "tau-bench-airline")
    tools = conv[0]["tools"] if conv else [
        {"type": "function", "function": {"name": "small", "parameters": {"type": "object"}}},
        {"type": "function", "function": {"name": "big", "description": "x " * 300, "parameters": {"type": "object"}}},
    ]
    b = cf.breakdown([{"role": "user", "content": "hi"}], model="gpt-4o", tools=tools)
    sizes = {t["function"]["name"]: len(str(t)) for t in tools}
    assert max(b.by_tool, key=b.by_tool.__getitem__) == max(sizes, key=sizes.__getitem__)
    mcp = [{"name": "mcp__github__create_issue", "input_schema": {"type": "object", "properties": {"title": {"type": "string"}}}},
           {"name": "mcp__github__list_prs", "input_schema": {"type": "object"}},
           {"name": "read_file", "input_schema": {"type": "object"}},
           {"name": "search", "input_schema": {"type": "object"}}]
    rf = {"type": "json_schema", "schema": {"type": "object", "properties": {"a": {"type": "string"}}}}
    b = cf.breakdown([{"role": "user", "content": "hi"}], provider="anthropic", model="claude-sonnet-4-5", tools=mcp,
                     response_format=rf, tool_servers={"search": "web"})
    assert set(b.by_server) == {"github", "web", "(local)"}
    assert b.by_server["github"] == b.by_tool["mcp__github__create_issue"] + b.by_tool["mcp__github__list_prs"]
    assert b.by_tool[RESPONSE_FORMAT_KEY] > 0 and b.by_tool[TOOL_PROMPT_KEY] > 0
    assert sum(b.by_tool.values()) == b.by_kind["tool_schemas"]
