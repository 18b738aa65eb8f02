"""Anthropic programmatic tool calling: a code-execution ``server_tool_use`` whose code calls the
client's tools (``tool_use`` blocks with ``caller.tool_id`` naming it, answered by user turns of
``tool_result`` blocks), and whose own result comes turns later. Such histories were refused
with UnpairedToolCallsError; a cut inside a run would send a client call whose caller is gone."""

from __future__ import annotations

import copy
from typing import Any

import pytest

import contextfold as cf

TOOLS = [
    {"type": "code_execution_20250825", "name": "code_execution"},
    {"name": "query_database", "description": "Run a SQL query against the sales database.",
     "input_schema": {"type": "object", "properties": {"sql": {"type": "string"}}, "required": ["sql"]},
     "allowed_callers": ["code_execution_20250825"]},
]

REGIONS = ("west", "east", "central")


def run(k: int, *, return_code: int = 0) -> list[dict[str, Any]]:
    """Round ``k``: a code run that queries each region through the client, then prints."""
    sid = f"srvtoolu_01Run{k:02d}"
    out: list[dict[str, Any]] = []
    for j, region in enumerate(REGIONS):
        call = {"type": "tool_use", "id": f"toolu_01Q{k:02d}{j}", "name": "query_database",
                "input": {"sql": f"SELECT SUM(revenue) FROM sales_{region} WHERE quarter = 'Q{k + 1}'"},
                "caller": {"type": "code_execution_20250825", "tool_id": sid}}
        blocks: list[dict[str, Any]] = [call]
        if j == 0:
            blocks = [{"type": "text", "text": f"I'll query the three regions for Q{k + 1}."},
                      {"type": "server_tool_use", "id": sid, "name": "code_execution",
                       "input": {"code": "for r in regions:\n    print(r, await query_database(sql=q(r)))"}},
                      call]
        out.append({"role": "assistant", "content": blocks})
        rows = "\n".join(f"{region},{1000 * (k + 1) + 17 * j + i},store_{i}" for i in range(120))
        out.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": call["id"], "content": rows}]})
    stdout = f"west 1204{k}\neast 9981{k}\ncentral 4410{k}\n"
    out.append({"role": "assistant", "content": [
        {"type": "code_execution_tool_result", "tool_use_id": sid,
         "content": {"type": "code_execution_result", "stdout": stdout,
                     "stderr": "" if return_code == 0 else "KeyError: 'quarter'", "return_code": return_code, "content": []}},
        {"type": "text", "text": f"East leads Q{k + 1} with revenue 9981{k}."}]})
    return out


def budget(h: list[dict[str, Any]], share: float) -> int:
    """``share`` of what the history adds to the tools' own price (code execution's is ~5,000
    tokens), plus that price."""
    floor = cf.estimate(h[:1], provider="anthropic", tools=TOOLS)
    return int(floor + share * (cf.estimate(h, provider="anthropic", tools=TOOLS) - floor))


def history(rounds: int = 5) -> list[dict[str, Any]]:
    h: list[dict[str, Any]] = [{"role": "user", "content": "Find the top region by revenue for each quarter. Never query the archive tables."}]
    for k in range(rounds):
        h += run(k)
        h.append({"role": "user", "content": f"Now quarter Q{k + 2}, please."})
    return h


def blocks(m: dict[str, Any]) -> list[dict[str, Any]]:
    c = m["content"]
    return [{"type": "text", "text": c}] if isinstance(c, str) else list(c)


def assert_valid_run(msgs: list[dict[str, Any]], *, pending: bool = False) -> None:
    """What the Messages API holds a history with programmatic calls to: turns alternate, each
    client call is answered in the next turn, a programmatic call's server call and a server
    result's call come before them, and the turn answering programmatic calls holds only results."""
    roles = [m["role"] for m in msgs]
    assert roles[0] == "user" and all(a != b for a, b in zip(roles, roles[1:])), roles
    servers: dict[str, bool] = {}  # server call id -> answered yet
    for i, m in enumerate(msgs):
        bs = blocks(m)
        for b in bs:
            if b["type"] == "server_tool_use":
                servers[b["id"]] = False
            if b["type"] == "code_execution_tool_result":
                assert servers.get(b["tool_use_id"]) is False, (i, b["tool_use_id"])
                servers[b["tool_use_id"]] = True
            if b["type"] == "tool_use":
                caller = (b.get("caller") or {}).get("tool_id")
                if caller:
                    assert servers.get(caller) is False, (i, caller)
                if i + 1 < len(msgs):
                    answers = blocks(msgs[i + 1])
                    assert any(a.get("tool_use_id") == b["id"] for a in answers), (i, b["id"])
                    if caller:
                        assert all(a["type"] == "tool_result" for a in answers), i + 1
    open_runs = [s for s, done in servers.items() if not done]
    assert bool(open_runs) == pending, open_runs


@pytest.mark.parametrize("share", [1.1, 0.6, 0.4, 0.25, 0.15])
def test_a_programmatic_tool_calling_run_is_folded_or_kept_whole(share: float) -> None:
    h = history()
    before = copy.deepcopy(h)
    b = budget(h, share)
    r = cf.Compactor(provider="anthropic", tools=TOOLS, budget=b).compact(h)
    assert h == before
    assert_valid_run(r.messages)
    assert cf.estimate(r.messages, provider="anthropic", tools=TOOLS) <= b
    if share <= 0.4:
        # Runs are folded, and what they printed is in the summary.
        assert r.summary and "99810" in r.summary


@pytest.mark.parametrize("end", [-1, -2, -3])
def test_a_history_ending_inside_a_run_keeps_the_run_whole(end: int) -> None:
    """The history is sent while the code still runs: the last turn answers (or makes) a
    programmatic call, and the server call that the run's calls name has no result yet."""
    h = history(4) + run(4)[:end]
    assert h[-1]["content"][-1]["type"] in ("tool_use", "tool_result")
    for share in (0.7, 0.45):
        r = cf.Compactor(provider="anthropic", tools=TOOLS, budget=budget(h, share)).compact(h)
        assert_valid_run(r.messages, pending=True)
        # The whole open run is kept, from its server call on.
        opened = next(i for i, m in enumerate(h) if any(b.get("id") == "srvtoolu_01Run04" for b in blocks(m)))
        assert len(r.messages) >= len(h) - opened
    assert cf.repair(h, provider="anthropic").changes == ()


def test_a_code_execution_result_is_read_as_what_the_run_printed() -> None:
    h = history(3)
    h[len(run(0)) + 1:len(run(0)) * 2 + 1] = run(1, return_code=1)
    r = cf.Compactor(provider="anthropic", tools=TOOLS, budget=budget(h, 0.3)).compact(h)
    assert r.summary
    assert "west 12040" in r.summary and "central 44100" in r.summary
    # A run that exited non-zero is an error, its stderr and exit code shown.
    errors = r.summary.split("## Errors", 1)[1].split("##", 1)[0]
    assert "KeyError: 'quarter'" in errors and "rc=1" in errors
    assert "Never query the archive tables." in r.summary or "Never query the archive tables." in str(r.messages[0])



def test_a_run_carried_by_langchain_messages_is_kept_or_folded_whole() -> None:
    """langchain-anthropic keeps the run's blocks in each ``AIMessage``'s content and the client
    calls in ``tool_calls``, answered by ``ToolMessage``s."""
    from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

    lc: list[BaseMessage] = []
    for m in history(5):
        c = m["content"]
        if m["role"] == "user" and isinstance(c, list):
            lc += [ToolMessage(content=b["content"], tool_call_id=b["tool_use_id"]) for b in c]
        elif m["role"] == "user":
            lc.append(HumanMessage(content=c))
        else:
            calls = [{"name": b["name"], "args": b["input"], "id": b["id"], "type": "tool_call"}
                     for b in c if b["type"] == "tool_use"]
            lc.append(AIMessage(content=c, tool_calls=calls))
    full = cf.estimate(lc)
    for share in (0.5, 0.15):
        r = cf.Compactor(budget=int(full * share), tools=TOOLS).compact(lc)
        kinds = [type(m).__name__ for m in r.messages]
        # Whatever was folded, the kept tail opens on a run's first turn or on a user's.
        server_ids = [b["id"] for m in r.messages if isinstance(m, AIMessage) and isinstance(m.content, list)
                      for b in m.content if isinstance(b, dict) and b.get("type") == "server_tool_use"]
        results = [b["tool_use_id"] for m in r.messages if isinstance(m, AIMessage) and isinstance(m.content, list)
                   for b in m.content if isinstance(b, dict) and b.get("type") == "code_execution_tool_result"]
        assert sorted(server_ids) == sorted(results), kinds
        assert kinds[-1] == "HumanMessage"
        if share < 0.2:
            assert r.summary and "99810" in r.summary
