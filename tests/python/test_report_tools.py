"""The report's tool listing: the schema cost of each tool, grouped by MCP server, exact for
OpenAI models, unused tools flagged (text, HTML table and chart, and the CLI's mapping file)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import contextfold as cf
from contextfold import report as rep
from contextfold.cli import main
from contextfold.inputs import read_request
from rich.console import Console
from transcripts import LOCAL, SHARED, load_conversations, load_requests, shared_available

ROOT = SHARED if shared_available() else LOCAL


def _tau_body() -> dict:
    c = max(load_conversations(LOCAL, "tau-bench-airline"), key=lambda c: len(c["messages"]))
    return {"model": "gpt-4o", "messages": c["messages"], "tools": c["tools"]}


def _openai_requests_with_tools() -> list:
    out = []
    for r in load_requests(ROOT):
        if r.provider not in ("openai", "azure") or r.api != "chat.completions" or not r.tools:
            continue
        try:
            cf.encoding_for(r.model)
        except cf.UnknownModelError:
            continue
        out.append(r)
    return out


def test_openai_tool_costs_are_exact_on_every_recorded_request_with_tools() -> None:
    """For OpenAI models the listed costs add up to what `count` says the tool block adds."""
    rs = _openai_requests_with_tools()
    assert len(rs) >= 10
    for r in rs:
        req = read_request({"model": r.model, "messages": r.messages, "tools": r.tools})
        ts = rep.tool_schemas(cf.breakdown(req.messages, **req.options()), req)
        assert ts.exact, r.source
        want = cf.count(r.messages, model=r.model, tools=r.tools) - cf.count(r.messages, model=r.model)
        assert ts.total == want, r.source
        assert {t.name for t in ts.tools} == {t["function"]["name"] for t in r.tools}, r.source


def test_every_tool_is_listed_costliest_first_with_the_unused_flagged() -> None:
    body = _tau_body()
    d = rep.analyze(read_request(body))
    ts = d.tool_schemas
    assert ts.exact
    names = {t["function"]["name"] for t in body["tools"]}
    called = {c["function"]["name"] for m in body["messages"] for c in m.get("tool_calls") or []}
    assert {t.name for t in ts.tools} == names
    assert {t.name for t in ts.unused} == names - called and called
    assert [t.tokens for t in ts.tools] == sorted((t.tokens for t in ts.tools), reverse=True)
    assert set(ts.by_server) == {"(local)"}
    # The costliest schema is the longest definition.
    longest = max(body["tools"], key=lambda t: len(json.dumps(t)))["function"]["name"]
    assert ts.tools[0].name == longest


def test_text_report_lists_each_tool_and_says_which_are_never_called(capsys) -> None:
    body = _tau_body()
    d = rep.analyze(read_request(body))
    rep.print_text(d, "tau", Console(width=200))
    out = capsys.readouterr().out
    ts = d.tool_schemas
    assert f"tool schemas: {ts.total:,} tokens (exact) for {len(ts.tools)} tools" in out
    assert f"{len(ts.unused)} never called ({sum(t.tokens for t in ts.unused):,} tokens on every call)" in out
    for t in ts.tools:
        row = next(line for line in out.splitlines() if f" {t.name} " in line)
        assert f"{t.tokens:,}" in row and ("UNUSED" in row) == (not t.called)


def test_mcp_tools_group_by_server_in_text_and_html(tmp_path: Path, capsys) -> None:
    """Tools named mcp__SERVER__tool group by their server; a mapping file names the rest."""
    body = _tau_body()
    tools = json.loads(json.dumps(body["tools"]))
    for t in tools[: len(tools) // 2]:
        t["function"]["name"] = "mcp__airline__" + t["function"]["name"]
    renamed = {t["function"]["name"] for t in tools[: len(tools) // 2]}
    for m in body["messages"]:
        for c in m.get("tool_calls") or []:
            if "mcp__airline__" + c["function"]["name"] in renamed:
                c["function"]["name"] = "mcp__airline__" + c["function"]["name"]
    body["tools"] = tools
    rest = [t["function"]["name"] for t in tools[len(tools) // 2 :]]
    mapping = tmp_path / "servers.json"
    mapping.write_text(json.dumps({rest[0]: "search"}))
    src = tmp_path / "body.json"
    src.write_text(json.dumps(body))
    d = rep.analyze(read_request(body), tool_servers={rest[0]: "search"})
    ts = d.tool_schemas
    assert set(ts.by_server) == {"airline", "search", "(local)"}
    assert ts.by_server["airline"] == sum(t.tokens for t in ts.tools if t.name in renamed)
    assert list(ts.by_server.values()) == sorted(ts.by_server.values(), reverse=True)
    # Grouped: each server's tools are contiguous, in the servers' order.
    assert [t.server for t in ts.tools] == sorted((t.server for t in ts.tools), key=list(ts.by_server).index)

    assert main(["report", str(src), "--tool-servers", str(mapping)]) == 0
    out = capsys.readouterr().out
    assert f"airline ({ts.by_server['airline']:,})" in out and f"search ({ts.by_server['search']:,})" in out
    page = tmp_path / "r.html"
    assert main(["report", str(src), "--tool-servers", str(mapping), "-o", str(page)]) == 0
    html = page.read_text()
    assert "Tool schemas, by MCP server" in html
    for t in ts.tools:
        assert f"<td class=\"\">{t.name}</td><td class=\"n\">{t.tokens:,}</td>" in html
    svg = html[html.index('<svg id="tools"') :]
    svg = svg[: svg.index("</svg>")]
    assert len(re.findall(r'class="tool-unused"', svg)) == len(ts.unused)
    assert len(re.findall(r'class="tool-(?:called|unused)"', svg)) == len(ts.tools)


def test_a_bad_mapping_file_is_a_usage_error(tmp_path: Path, capsys) -> None:
    src = tmp_path / "body.json"
    src.write_text(json.dumps(_tau_body()))
    bad = tmp_path / "servers.json"
    bad.write_text(json.dumps(["not", "an", "object"]))
    assert main(["report", str(src), "--tool-servers", str(bad)]) == 2
    assert "expected a JSON object" in capsys.readouterr().err


def test_other_providers_list_the_estimated_costs_of_breakdown() -> None:
    """Anthropic: not exact; the listing is ``by_tool`` (the hidden tool-use prompt apart)."""
    body = _tau_body()
    tools = [{"name": t["function"]["name"], "description": t["function"].get("description", ""),
              "input_schema": t["function"]["parameters"]} for t in body["tools"]]
    msgs = [{"role": "user", "content": "Change my flight, please."}]
    req = read_request({"model": "claude-sonnet-4-5", "max_tokens": 100, "messages": msgs, "tools": tools})
    b = cf.breakdown(req.messages, **req.options())
    ts = rep.tool_schemas(b, req)
    assert not ts.exact and ts.prompt > 0
    assert {t.name: t.tokens for t in ts.tools} == {k: v for k, v in b.by_tool.items() if not k.startswith("(")}
    assert ts.total == b.by_kind["tool_schemas"]
    assert len(ts.unused) == len(tools)


def test_a_history_without_tools_has_no_tool_section(capsys) -> None:
    d = rep.analyze(read_request({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}))
    assert d.tool_schemas.tools == () and d.tool_schemas.total == 0
    rep.print_text(d, "x", Console(width=120))
    assert "tool schemas" not in capsys.readouterr().out
    assert "Tool schemas, by MCP server" not in rep.render_html(d)
