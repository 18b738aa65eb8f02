"""`breakdown(...).by_tool` / `by_server`: where the tool schemas' tokens go."""

from __future__ import annotations

import contextfold as cf
import pytest
from contextfold.breakdown import (
    RESPONSE_FORMAT_KEY,
    TOOL_PROMPT_KEY,
    Breakdown,
    mcp_server_key,
    server_of,
)
from transcripts import (
    LOCAL,
    SHARED,
    load_conversations,
    load_requests,
    request_body,
    shared_available,
)

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


def test_tools_the_history_never_calls_are_flagged() -> None:
    conv = load_conversations(ROOT, "tau-bench-airline")
    if not conv:
        pytest.skip("no tau-bench dialogues in the data")
    ms, tools = conv[0]["messages"], conv[0]["tools"]
    b = cf.breakdown(ms, model="gpt-4o", tools=tools)
    called = {c["function"]["name"] for m in ms for c in m.get("tool_calls") or []}
    assert called and set(b.unused_tools) == {t["function"]["name"] for t in tools} - called


def _assert_tool_sums(b: Breakdown, source: str = "") -> None:
    schemas = b.by_kind["tool_schemas"]
    assert sum(b.by_tool.values()) == schemas, source
    beside = b.by_tool.get(TOOL_PROMPT_KEY, 0) + b.by_tool.get(RESPONSE_FORMAT_KEY, 0)
    assert sum(b.by_server.values()) + beside == schemas, source


MCP_BODY = {
    "model": "claude-sonnet-4-5",
    "max_tokens": 1024,
    "messages": [{"role": "user", "content": "What do the docs say about retries?"}],
    "tools": [{"name": "get_weather", "description": "Get the weather",
               "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}],
    "mcp_servers": [{"type": "url", "url": "https://mcp.example.com/sse", "name": "docs"},
                    {"type": "url", "url": "https://crm.example.com/sse", "name": "crm"}],
}


def test_a_sized_mcp_server_shows_in_by_tool_and_by_server_so_both_add_up() -> None:
    plain = cf.breakdown_request(MCP_BODY)
    b = cf.breakdown_request(MCP_BODY, mcp_sizes={"docs": 500})
    assert b.total == plain.total + 500 == cf.estimate_request(MCP_BODY, mcp_sizes={"docs": 500})
    assert b.by_kind["tool_schemas"] == plain.by_kind["tool_schemas"] + 500
    assert b.by_tool[mcp_server_key("docs")] == b.by_server["docs"] == 500
    assert server_of(mcp_server_key("docs")) == "docs" and server_of(mcp_server_key("my__docs")) == "my__docs"
    # The unsized server stays unmeasured and out of the sums; the defined tool keeps its share.
    assert mcp_server_key("crm") not in b.by_tool and "crm" not in b.by_server
    assert [u.kind for u in b.unmeasured] == ["mcp_server:crm"]
    assert b.by_tool["get_weather"] == plain.by_tool["get_weather"]
    assert mcp_server_key("docs") not in b.unused_tools
    _assert_tool_sums(plain)
    _assert_tool_sums(b)


def test_the_recorded_mcp_conversation_prices_its_server_under_its_name() -> None:
    rows = [r for r in load_requests(ROOT) if r.source.endswith("test_anthropic_mcp_servers.yaml#1")]
    if not rows:
        pytest.skip("the recorded MCP conversation is in ../shared/data only")
    r = rows[0]
    # The recorder kept the history (mcp_tool_use on server "deepwiki"), not the mcp_servers
    # field: put it back as pydantic-ai sent it, sized as the recorded prompt leaves room for.
    body = {**request_body(r), "mcp_servers": [{"type": "url", "url": "https://mcp.deepwiki.com/mcp", "name": "deepwiki"}]}
    size = r.usage - cf.estimate_request(body)
    assert size > 0
    b = cf.breakdown_request(body, mcp_sizes={"deepwiki": size})
    assert b.total == r.usage
    assert b.by_tool[mcp_server_key("deepwiki")] == b.by_server["deepwiki"] == size
    _assert_tool_sums(b, r.source)


def test_by_tool_and_by_server_add_up_on_every_recorded_anthropic_body_with_a_sized_server() -> None:
    checked = 0
    for r in load_requests(ROOT):
        if r.api != "messages":
            continue
        body = {**request_body(r), "mcp_servers": [{"type": "url", "url": "https://mcp.example.com/sse", "name": "docs"}]}
        b = cf.breakdown_request(body, mcp_sizes={"docs": 1_200})
        assert b.total == cf.estimate_request(body, mcp_sizes={"docs": 1_200}), r.source
        assert b.by_server["docs"] == 1_200, r.source
        _assert_tool_sums(b, r.source)
        checked += 1
    assert checked >= 10
