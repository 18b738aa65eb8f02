"""The Responses API's client-run tools (shell, local shell, apply_patch, computer use,
programs, MCP approvals): each call item and its output item are one pair, kept or folded
together, shown in the summary as a call, and repaired in kind."""

from __future__ import annotations

import base64
import copy
import json
import struct
import zlib
from typing import Any

import pytest

import contextfold as cf

KINDS = ("shell", "local_shell", "apply_patch", "computer", "program", "mcp_approval")


def png_data_url(width: int, height: int, pad: int) -> str:
    """A data URL of a PNG whose header says ``width`` x ``height``, padded to ``pad`` bytes of
    image data (a screenshot's size, without drawing one)."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    chunk = b"IHDR" + ihdr
    png = b"\x89PNG\r\n\x1a\n" + struct.pack(">I", len(ihdr)) + chunk + struct.pack(">I", zlib.crc32(chunk))
    return "data:image/png;base64," + base64.b64encode(png + b"\0" * pad).decode()


def pair(kind: str, i: int, out: str) -> list[dict[str, Any]]:
    """Round ``i``: a call item of ``kind`` and its output item, the output's text ``out``."""
    cid = f"c{i}"
    if kind == "shell":
        return [{"type": "shell_call", "call_id": cid, "action": {"commands": [f"pytest -k t{i}"]}, "status": "completed"},
                {"type": "shell_call_output", "call_id": cid,
                 "output": [{"stdout": out, "stderr": "", "outcome": {"type": "exit", "exit_code": i % 2}}]}]
    if kind == "local_shell":
        return [{"type": "local_shell_call", "id": f"ls{i}", "call_id": cid, "status": "completed",
                 "action": {"type": "exec", "command": ["pytest", f"-k t{i}"], "env": {}}},
                {"type": "local_shell_call_output", "id": cid, "output": json.dumps({"output": out})}]
    if kind == "apply_patch":
        return [{"type": "apply_patch_call", "call_id": cid, "status": "completed",
                 "operation": {"type": "update_file", "path": f"src/m{i}.py", "diff": out[:2000]}},
                {"type": "apply_patch_call_output", "call_id": cid, "status": "completed", "output": out}]
    if kind == "computer":
        return [{"type": "computer_call", "id": f"cu{i}", "call_id": cid, "status": "completed",
                 "action": {"type": "click", "x": 10 * i, "y": 20, "button": "left"}, "pending_safety_checks": []},
                {"type": "computer_call_output", "call_id": cid,
                 "output": {"type": "computer_screenshot", "image_url": png_data_url(1024, 768, 3000)}}]
    if kind == "program":
        return [{"type": "program", "id": f"g{i}", "call_id": cid, "code": f"return run({i})", "fingerprint": "fp"},
                {"type": "program_output", "id": f"go{i}", "call_id": cid, "result": out, "status": "completed"}]
    return [{"type": "mcp_approval_request", "id": cid, "server_label": "git", "name": "push", "arguments": "{}"},
            {"type": "mcp_approval_response", "approval_request_id": cid, "approve": True}]


def history(kind: str, rounds: int = 8) -> list[dict[str, Any]]:
    h: list[dict[str, Any]] = [{"role": "user", "content": "Fix the failing tests in repo x; never push to main."}]
    for i in range(rounds):
        h += pair(kind, i, (f"line {i} of the output " * 300).strip())
        h.append({"role": "assistant", "content": f"Step {i} done."})
    h.append({"role": "user", "content": "Go on."})
    return h


def call_ids(items: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    """(the call ids of the call items, the ids the output items answer), in order."""
    calls, outputs = [], []
    for m in items:
        kind = m.get("type", "")
        if kind == "mcp_approval_request":
            calls.append(m["id"])
        elif kind == "mcp_approval_response":
            outputs.append(m["approval_request_id"])
        elif kind == "local_shell_call_output":
            outputs.append(m["id"])
        elif kind.endswith("_output"):
            outputs.append(m["call_id"])
        elif kind.endswith("_call") or kind == "program":
            calls.append(m["call_id"])
    return calls, outputs


@pytest.mark.parametrize("kind", KINDS)
def test_a_client_run_call_and_its_output_are_kept_or_folded_together(kind):
    h = history(kind)
    before = copy.deepcopy(h)
    whole = cf.estimate(h, provider="openai")
    checked = 0
    for share in [k / 40 for k in range(4, 36)]:
        try:
            r = cf.Compactor(budget=int(whole * share), provider="openai").compact(h)
        except cf.CompactionBudgetError:
            continue
        calls, outputs = call_ids(list(r.messages))
        assert calls == outputs, (share, [m.get("type") or m.get("role") for m in r.messages])
        assert r.tokens_after <= int(whole * share)
        checked += 1
    assert checked >= 25
    assert h == before


def test_the_items_are_valid_input_items_for_the_openai_sdk_after_a_compaction():
    types = pytest.importorskip("openai.types.responses")
    from pydantic import TypeAdapter

    from openai.types.responses import response_input_item_param as item_param

    if not all(hasattr(item_param, t) for t in ("ShellCall", "ApplyPatchCall", "Program", "McpApprovalResponse")):
        pytest.skip("this openai SDK predates the shell, apply_patch and program items")

    adapter = TypeAdapter(list[types.ResponseInputItemParam])
    for kind in KINDS:
        h = history(kind)
        r = cf.Compactor(budget=cf.estimate(h, provider="openai") // 3, provider="openai").compact(h)
        adapter.validate_python(list(r.messages))


def test_a_folded_shell_call_shows_in_the_summary_with_its_command_and_exit_code():
    h = history("shell")
    r = cf.Compactor(budget=cf.estimate(h, provider="openai") // 3, provider="openai").compact(h)
    assert 'shell(commands=["pytest -k t0"]) -> ok: rc=0' in r.summary
    # A failed patch reads as an error in the summary.
    h = history("apply_patch")
    h[2] = dict(h[2], status="failed", output="context not found in src/m0.py")
    r = cf.Compactor(budget=cf.estimate(h, provider="openai") // 3, provider="openai").compact(h)
    assert "context not found in src/m0.py" in r.summary.split("## Errors", 1)[1]


def test_a_screenshot_is_priced_as_the_image_it_is():
    small = [{"type": "computer_call_output", "call_id": "c",
              "output": {"type": "computer_screenshot", "image_url": png_data_url(1024, 768, 100)}}]
    large = [{"type": "computer_call_output", "call_id": "c",
              "output": {"type": "computer_screenshot", "image_url": png_data_url(1024, 768, 400_000)}}]
    # The same picture's tokens do not grow with the bytes that encode it.
    assert cf.estimate(large, provider="openai") == cf.estimate(small, provider="openai")
    assert cf.estimate(large, provider="openai") < 2_000


def test_repair_answers_each_unanswered_call_in_kind_or_drops_it():
    h = [{"role": "user", "content": "go"},
         {"type": "custom_tool_call", "call_id": "k1", "name": "grammar", "input": "x"},
         *pair("shell", 2, "")[:1],
         {"role": "user", "content": "and then?"},
         {"type": "function_call", "call_id": "f3", "name": "ls", "arguments": "{}"},
         {"type": "function_call_output", "call_id": "f3", "output": "a.py"},
         {"role": "user", "content": "thanks"}]
    r = cf.repair(h, provider="openai")
    out = list(r.messages)
    kinds = [m.get("type") or m.get("role") for m in out]
    assert "shell_call" not in kinds, kinds
    assert {"type": "custom_tool_call_output", "call_id": "k1"}.items() <= next(
        m for m in out if m.get("type") == "custom_tool_call_output").items()
    assert any("shell_call" in c and "dropped" in c for c in r.changes), r.changes
    calls, outputs = call_ids([m for m in out if m.get("type") != "custom_tool_call"
                               and m.get("type") != "custom_tool_call_output"])
    assert calls == outputs == ["f3"]


def test_a_client_run_tool_search_and_its_output_stay_together():
    h: list[dict[str, Any]] = [{"role": "user", "content": "Find the deploy tool and deploy."}]
    for t in range(6):
        h.append({"type": "tool_search_call", "id": f"ts_{t}", "call_id": f"tsc_{t}", "execution": "client",
                  "arguments": {"query": f"deploy {t}"}, "status": "completed"})
        h.append({"type": "tool_search_output", "id": f"tso_{t}", "call_id": f"tsc_{t}", "execution": "client",
                  "status": "completed", "tools": [{"type": "function", "name": f"deploy_{t}",
                                                    "description": f"deploys stage {t} " * 300, "parameters": {}}]})
        h.append({"role": "assistant", "content": f"Loaded deploy_{t}."})
    h.append({"role": "user", "content": "Go on."})
    whole = cf.estimate(h, provider="openai")
    for share in [k / 40 for k in range(4, 36)]:
        r = cf.Compactor(budget=int(whole * share), provider="openai").compact(h)
        kinds = [(m.get("type") or m.get("role"), m.get("call_id")) for m in r.messages]
        calls = [c for k, c in kinds if k == "tool_search_call"]
        assert calls == [c for k, c in kinds if k == "tool_search_output"], (share, kinds)


def test_a_generated_image_sent_back_is_priced_as_an_image():
    image = png_data_url(1024, 1024, 3_000_000).split(",", 1)[1]
    h = [{"role": "user", "content": "Draw a cat."},
         {"type": "image_generation_call", "id": "ig_1", "status": "completed", "result": image},
         {"role": "user", "content": "Make it blue."}]
    as_input = [{"role": "user", "content": [{"type": "input_image", "image_url": "data:image/png;base64," + image}]}]
    assert cf.estimate(h[1:2], provider="openai") <= cf.estimate(as_input, provider="openai") + 20
    # A history the budget holds once the image is priced as one (it was priced at ~1M tokens).
    r = cf.Compactor(budget=4_000, provider="openai").compact(h)
    assert r.tokens_after <= 4_000


def test_a_chat_custom_tool_call_is_read_and_its_input_never_edited():
    h: list[dict[str, Any]] = [{"role": "user", "content": "Patch the files."}]
    for i in range(6):
        h.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{i}", "type": "custom", "custom": {"name": "apply_patch", "input": "*** Begin Patch\n" + "+x\n" * 3000}}]})
        h.append({"role": "tool", "tool_call_id": f"c{i}", "content": "Done."})
    h.append({"role": "user", "content": "Next."})
    before = copy.deepcopy(h)
    whole = cf.estimate(h, provider="openai")
    for share in (0.2, 0.5, 0.9):
        r = cf.Compactor(budget=int(whole * share), provider="openai").compact(h)
        for m in r.messages:
            for c in m.get("tool_calls") or []:
                assert c == next(x for b in before for x in b.get("tool_calls") or [] if x["id"] == c["id"])
    assert h == before


def test_plain_messages_and_role_less_items_read_as_a_responses_input():
    h = [{"role": "user", "content": "patch it"},
         {"type": "custom_tool_call", "call_id": "k1", "name": "patcher", "input": "*** Begin Patch"},
         {"role": "user", "content": "never mind"}]
    assert cf.detect_wire_format(h) == "responses"
    out = list(cf.repair(h, provider="openai").messages)
    assert out[2] == {"type": "custom_tool_call_output", "call_id": "k1", "output": out[2]["output"]}


def test_calls_sent_by_reference_pair_with_their_inline_outputs():
    # With `store: true` a stored function_call may be sent by its item id alone.
    h: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    for t in range(6):
        h += [{"type": "item_reference", "id": f"fc_{t}"},
              {"type": "function_call_output", "call_id": f"call_{t}", "output": f"o{t}-line value={t} " * 400}]
    h.append({"role": "user", "content": "continue"})
    before = copy.deepcopy(h)
    whole = cf.estimate(h, provider="openai")
    for share in (0.25, 0.5, 0.9):
        r = cf.Compactor(budget=int(whole * share), provider="openai").compact(h)
        kinds = [m.get("type") or m.get("role") for m in r.messages]
        # Each output kept has its reference right before it.
        for i, k in enumerate(kinds):
            if k == "function_call_output":
                assert kinds[i - 1] == "item_reference", (share, kinds)
    repaired = cf.repair(h, provider="openai")
    assert list(repaired.messages) == h and list(repaired.changes) == []
    assert h == before


def test_items_that_stand_for_the_rest_of_the_conversation_are_never_folded():
    # `configuration_update` settings last until a later update; `additional_tools` declares the
    # tools later calls name.
    update = {"type": "configuration_update", "reasoning": {"effort": "high"}}
    tools = {"type": "additional_tools", "role": "developer",
             "tools": [{"type": "function", "name": "extra_tool", "description": "Runs the extra step. " * 40,
                        "parameters": {"type": "object", "properties": {}}, "strict": False}]}
    h: list[dict[str, Any]] = [{"role": "user", "content": "Use extra_tool repeatedly."}]
    for t in range(8):
        if t == 3:
            h += [copy.deepcopy(update), copy.deepcopy(tools)]
        h.append({"type": "function_call", "call_id": f"call_{t}", "name": "extra_tool", "arguments": "{}"})
        h.append({"type": "function_call_output", "call_id": f"call_{t}", "output": f"o{t}-line value={t} " * 400})
        h.append({"role": "user", "content": f"Step {t} done, continue."})
    without = [m for m in h if m.get("type") != "additional_tools"]
    assert cf.estimate(h, provider="openai") > cf.estimate(without, provider="openai") + 150
    whole = cf.estimate(h, provider="openai")
    for share in (0.15, 0.3, 0.6):
        out = list(cf.Compactor(budget=int(whole * share), provider="openai").compact(h).messages)
        assert update in out and tools in out, share
        assert out.index(update) < out.index(tools)


def logs(i: int) -> str:
    return "\n".join(f"svc-{i}-{k} request id=req_{1000 * i + k} timed out after {k}ms" for k in range(40))


def test_a_tail_that_opens_on_a_generated_image_takes_a_summary_of_its_own():
    """The summary was merged into an `image_generation_call` (read as its image, it has no
    `content` to write into) and the compaction raised `InvalidMessageError`."""
    items: list[dict[str, Any]] = [{"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "You are an agent."}]},
                                   {"role": "user", "content": "Investigate the latency regression and draw a chart."}]
    for k in range(6):
        items.append({"type": "function_call", "id": f"fc_{k}", "call_id": f"call_{k}", "name": "query_db", "arguments": '{"q": "latency"}'})
        items.append({"type": "function_call_output", "call_id": f"call_{k}", "output": logs(k)})
    items.append({"type": "image_generation_call", "id": "ig_1", "status": "completed",
                  "result": png_data_url(1024, 1024, 4_000).split(",", 1)[1]})
    items.append({"type": "message", "role": "assistant", "id": "msg_1", "status": "completed",
                  "content": [{"type": "output_text", "text": "Here is the chart.", "annotations": []}]})
    items.append({"role": "user", "content": "Thanks, now write the postmortem."})
    est = cf.estimate(items, model="gpt-4o")
    checked = 0
    for share in (0.15, 0.17, 0.2, 0.3, 0.5, 0.7):
        try:
            r = cf.Compactor(model="gpt-4o", budget=int(est * share)).compact(items)
        except cf.CompactionBudgetError:
            continue
        assert any(m.get("type") == "image_generation_call" for m in r.messages) or "ig_1" not in json.dumps(r.messages)
        assert all("content" not in m for m in r.messages if m.get("type") == "image_generation_call")
        checked += 1
    assert checked >= 4


def test_a_summary_merged_into_an_assistant_message_is_an_output_text_with_annotations():
    from contextfold import _core

    block = json.loads(_core.summary_block("Earlier: ...", format="responses", role="assistant"))
    assert block == {"type": "output_text", "text": "Earlier: ...", "annotations": []}
    assert json.loads(_core.summary_block("x", format="responses", role="user")) == {"type": "input_text", "text": "x"}


def test_repair_drops_a_reasoning_item_left_without_the_item_it_precedes():
    for kind in ("apply_patch", "shell", "computer", "local_shell"):
        call = pair(kind, 1, "ok")[0]
        items = [{"role": "user", "content": "go"},
                 {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAA"},
                 call, {"role": "user", "content": "stop"}]
        r = cf.repair(items, provider="openai")
        assert [m.get("type", m.get("role")) for m in r.messages] == ["user", "user"], kind
        assert any("reasoning item" in c for c in r.changes), r.changes
    trailing = [{"role": "user", "content": "go"}, {"type": "reasoning", "id": "rs_1", "summary": []}]
    assert [m.get("role") for m in cf.repair(trailing, provider="openai").messages] == ["user"]


def test_repair_makes_duplicate_ids_of_client_run_calls_unique():
    for kind in ("shell", "apply_patch", "computer"):
        items = [{"role": "user", "content": "go"}, *pair(kind, 1, "a"), *pair(kind, 1, "b"), {"role": "user", "content": "next"}]
        r = cf.repair(items, provider="openai")
        calls, outputs = call_ids(list(r.messages))
        assert len(set(calls)) == 2 and sorted(calls) == sorted(outputs), (kind, calls, outputs)


def test_references_to_reasoning_items_never_pair_with_outputs():
    """Each round sent by reference, its reasoning first (`rs_`), then its call (`fc_`), its
    output inline: the output answers the call's reference, not the reasoning's, so the rounds
    do not chain and the history compacts."""
    items: list[dict[str, Any]] = [{"role": "user", "content": "Collect the logs of every service."}]
    for k in range(15):
        items += [{"type": "item_reference", "id": f"rs_{k}"}, {"type": "item_reference", "id": f"fc_{k}"},
                  {"type": "function_call_output", "call_id": f"call_{k}", "output": logs(k)}]
    items.append({"role": "user", "content": "Summarize them."})
    est = cf.estimate(items, model="gpt-4o")
    r = cf.Compactor(model="gpt-4o", budget=est // 2).compact(items)
    assert r.tokens_after <= est // 2
    kept = list(r.messages)
    for k, m in enumerate(kept):
        if m.get("id", "").startswith("rs_"):
            assert kept[k + 1].get("id", "").startswith("fc_"), kept[k:k + 2]


def test_hosted_tool_runs_show_in_the_summary_as_calls_with_their_results():
    """Web search, file search, code interpreter and MCP items sent back: each is its call and
    its result, so a folded span says what was searched or run (it said "0 tool calls")."""
    items: list[dict[str, Any]] = [{"role": "user", "content": "Find why checkout is slow."}]
    for k in range(4):
        items += [
            {"type": "web_search_call", "id": f"ws_{k}", "status": "completed",
             "action": {"type": "search", "query": f"checkout outage postmortem {k}"}},
            {"type": "file_search_call", "id": f"fs_{k}", "status": "completed", "queries": [f"runbook {k}"],
             "results": [{"file_id": f"file-{k}", "filename": f"runbook_{k}.pdf", "score": 0.8, "text": logs(k)}]},
            {"type": "code_interpreter_call", "id": f"ci_{k}", "status": "completed", "container_id": "cntr_1",
             "code": f"df{k} = load('q{k}.csv')", "outputs": [{"type": "logs", "logs": logs(k)}]},
            {"type": "mcp_call", "id": f"mcp_{k}", "server_label": "tracker", "name": "get_issue",
             "arguments": json.dumps({"number": 100 + k}), "output": f"issue {100 + k}: p99 up " * 30},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": f"Finding {k}.", "annotations": []}]},
            {"role": "user", "content": "Go on."},
        ]
    est = cf.estimate(items, model="gpt-4o")
    r = cf.Compactor(model="gpt-4o", budget=est // 3).compact(items)
    summary = r.summary or ""
    assert 'web_search(query="checkout outage postmortem 0"' in summary, summary
    assert "file_search(queries=" in summary and "get_issue(number=100)" in summary, summary
    assert "code_interpreter(code=" in summary, summary
    assert "0 tool calls" not in summary
    # Kept items are the caller's, untouched.
    originals = {json.dumps(m, sort_keys=True) for m in items}
    assert all(json.dumps(m, sort_keys=True) in originals for m in r.messages if m.get("type", "").endswith("_call"))
