"""The `contextfold` command line: the README's main job, every input shape, JSONL corpora on
a process pool (order kept, bad lines reported and skipped), exact counts, exit codes, help."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

import contextfold as cf
from contextfold.cli import main
from transcripts import LOCAL, ROOT, load_conversations, load_requests, system_text

EXAMPLE = ROOT / "examples" / "swe-trajectory.json"


def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """The console entry point in a fresh interpreter, as a user runs it."""
    return subprocess.run([sys.executable, "-m", "contextfold", *args], input=stdin, capture_output=True, text=True, timeout=120)


def test_readme_main_job_reports_the_bundled_trajectory(capsys):
    assert main(["report", str(EXAMPLE)]) == 0
    out = capsys.readouterr().out
    assert "estimated prompt tokens" in out
    assert "compaction plan" in out and "protected tail" in out
    assert "recorded calls" in out and "median error" in out


def test_estimate_json_total_is_the_library_estimate(capsys):
    assert main(["estimate", str(EXAMPLE), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    data = json.loads(EXAMPLE.read_text())
    assert doc["provider"] == "gemini" and doc["model"] == data["model"]
    assert doc["total"] == cf.estimate(data["messages"], provider="gemini", model=data["model"])
    assert sum(doc["by_kind"].values()) == doc["total"] == sum(doc["by_role"].values())
    assert [m["tokens"] for m in doc["per_message"]] == cf.estimate_each(data["messages"], provider="gemini", model=data["model"])


def test_estimate_prints_kinds_roles_and_largest_messages(capsys):
    assert main(["estimate", str(EXAMPLE), "--top", "3"]) == 0
    out = capsys.readouterr().out
    assert "by kind" in out and "by role" in out and "largest 3 messages" in out


def _body(r) -> dict:
    """The request body a recorded request was sent as, in its own wire format."""
    if r.api == "generateContent":
        body = {"contents": r.messages, "tools": r.tools}
        if r.system is not None:
            body["systemInstruction"] = r.system
        return body
    if r.api == "responses":
        return {"model": r.model, "input": r.messages, "tools": r.tools, "instructions": r.system}
    body = {"model": r.model, "messages": r.messages, "tools": r.tools}
    if r.system is not None:
        body["system"] = r.system
    return body


WIRE = {("openai", "chat.completions"): "openai", ("anthropic", "messages"): "anthropic", ("google", "generateContent"): "gemini", ("openai", "responses"): "openai"}


@pytest.fixture(scope="module")
def recorded_bodies(tmp_path_factory):
    """A JSONL corpus of real request bodies in four wire formats, with what the library says."""
    rows = []
    for r in load_requests(LOCAL, with_usage=False):
        if (r.provider, r.api) not in WIRE or not isinstance(r.tools, (list, type(None))):
            continue
        body = _body(r)
        from contextfold.inputs import read_request

        try:
            req = read_request(body)
            expected = cf.estimate(req.messages, **req.options())
        except (ValueError, TypeError):
            continue
        rows.append((body, WIRE[(r.provider, r.api)], expected, r))
    path = tmp_path_factory.mktemp("corpus") / "bodies.jsonl"
    path.write_text("".join(json.dumps(b) + "\n" for b, *_ in rows))
    return path, rows


def test_wire_format_of_real_request_bodies_is_detected(recorded_bodies):
    from contextfold.inputs import read_request

    _, rows = recorded_bodies
    assert {w for _, w, _, _ in rows} == {"openai", "anthropic", "gemini"}
    for body, wire, _, r in rows:
        req = read_request(body)
        assert req.provider == wire, r.source
        if r.api == "messages" and isinstance(r.system, str):
            assert req.system == r.system


def test_jsonl_on_two_processes_keeps_input_order_and_matches_the_library(recorded_bodies, capsys):
    path, rows = recorded_bodies
    assert len(rows) > 100
    assert main(["estimate", str(path), "--json", "--jobs", "2"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [x["line"] for x in lines] == list(range(1, len(rows) + 1))
    assert [x["total"] for x in lines] == [expected for _, _, expected, _ in rows]


def test_recorded_estimate_matches_the_accuracy_loader(recorded_bodies):
    """The CLI's reading of a Gemini body prices like the accuracy report's loader (except
    server tools such as googleSearch, which carry no schema: the CLI does not price them)."""
    from contextfold.inputs import read_request
    from transcripts import estimate_request

    _, rows = recorded_bodies
    for body, wire, expected, r in rows:
        if wire == "gemini" and all("functionDeclarations" in t for t in r.tools or []):
            assert expected == estimate_request(cf, r), r.source
            assert read_request(body).system == system_text(r.system)


def _corpus_with_bad_lines(tmp_path):
    good = load_conversations(LOCAL, "tau-bench-airline")[:4]
    lines = [json.dumps({"model": "gpt-4o", "messages": c["messages"], "tools": c["tools"]}) for c in good]
    lines.insert(1, '{"messages": [ {"role": "user"')  # line 2: cut JSON
    lines.insert(3, json.dumps([{"role": "user", "content": "hi"}, {"role": "user", "content": 3}]))  # line 4
    lines.insert(4, "")  # line 5: blank, skipped
    p = tmp_path / "corpus.jsonl"
    p.write_text("\n".join(lines) + "\n")
    return p, good


def test_bad_lines_are_reported_with_file_line_index_and_field_and_the_run_goes_on(tmp_path):
    p, good = _corpus_with_bad_lines(tmp_path)
    r = run("estimate", str(p), "--json", "--jobs", "2")
    assert r.returncode == 1, r.stderr
    assert f"{p}:2: invalid JSON" in r.stderr
    assert f"{p}:4: message 1, field 'content'" in r.stderr
    assert "2 of 6 lines failed" in r.stderr
    out = [json.loads(x) for x in r.stdout.splitlines()]
    assert [x["line"] for x in out] == [1, 2, 3, 4, 6, 7]
    assert out[3] == {"line": 4, "index": 1, "field": "content", "error": "expected a string, a list of parts or None, got int"}
    ok = [x for x in out if "total" in x]
    assert [x["total"] for x in ok] == [cf.estimate(c["messages"], model="gpt-4o", tools=c["tools"]) for c in good]


def test_fail_fast_stops_at_the_first_bad_line(tmp_path):
    p, _ = _corpus_with_bad_lines(tmp_path)
    r = run("estimate", str(p), "--json", "--fail-fast", "--jobs", "1")
    assert r.returncode == 1
    assert [json.loads(x)["line"] for x in r.stdout.splitlines()] == [1, 2]
    assert "--fail-fast" in r.stderr


def test_corpus_summary_without_json(tmp_path, capsys):
    p, good = _corpus_with_bad_lines(tmp_path)
    assert main(["estimate", str(p), "--jobs", "1"]) == 1
    out = capsys.readouterr().out
    assert "4 histories" in out and "tool outputs" in out


def test_stdin_is_read_with_a_dash():
    history = [{"role": "user", "content": "What is the capital of France?"}]
    r = run("estimate", "-", "--json", stdin=json.dumps(history))
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["total"] == cf.estimate(history)
    r = run("estimate", "-", "--json", "--jobs", "1", stdin=json.dumps(history) + "\n" + json.dumps(history) + "\n")
    assert [json.loads(x)["line"] for x in r.stdout.splitlines()] == [1, 2]


def test_count_is_exact_for_openai_models(tmp_path, capsys):
    c = load_conversations(LOCAL, "tau-bench-airline")[0]
    p = tmp_path / "req.json"
    p.write_text(json.dumps({"model": "gpt-4o", "messages": c["messages"], "tools": c["tools"]}))
    assert main(["count", str(p), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["total"] == cf.count(c["messages"], model="gpt-4o", tools=c["tools"])
    assert doc["encoding"] == "o200k_base"


def test_a_body_with_a_structured_output_schema_is_priced_with_it(tmp_path, capsys):
    schema = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"],
              "additionalProperties": False}
    rf = {"type": "json_schema", "json_schema": {"name": "Answer", "strict": True, "schema": schema}}
    messages = [{"role": "system", "content": "Answer in JSON."}, {"role": "user", "content": "What is 2 + 2?"}]
    p = tmp_path / "req.json"
    p.write_text(json.dumps({"model": "gpt-4o", "messages": messages, "response_format": rf}))
    assert main(["estimate", str(p), "--json"]) == 0
    est = json.loads(capsys.readouterr().out)["total"]
    assert est == cf.estimate(messages, model="gpt-4o", response_format=rf) > cf.estimate(messages, model="gpt-4o")
    assert main(["count", str(p), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["total"] == cf.count(messages, model="gpt-4o", response_format=rf)
    # The Responses API's `text` parameter and Gemini's generation config are read as well.
    from contextfold.inputs import read_request
    assert read_request({"model": "gpt-4o", "input": "hi", "text": {"format": {"type": "json_schema", "name": "A", "schema": schema}}}).response_format
    assert read_request({"contents": [], "generationConfig": {"responseJsonSchema": schema}}).response_format


def test_count_names_a_model_without_public_tokenizer(tmp_path):
    p = tmp_path / "h.json"
    p.write_text(json.dumps([{"role": "user", "content": "hi"}]))
    r = run("count", str(p), "--model", "claude-sonnet-4-5")
    assert r.returncode == 3
    assert "claude-sonnet-4-5" in r.stderr and "estimate" in r.stderr


def test_a_single_invalid_history_exits_1_naming_the_message(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('[{"role": "user", "content": "ok"}, {"role": "user", "content": 3}]')
    assert main(["report", str(bad)]) == 1
    assert "message 1" in capsys.readouterr().err


def test_report_of_one_json_document_refuses_a_line_other_than_the_first(capsys):
    # Before, --line 5 was ignored and the one document reported, exit 0.
    assert main(["report", str(EXAMPLE), "--line", "5"]) == 2
    assert "one JSON document, not JSONL: it has no line 5" in capsys.readouterr().err
    assert main(["report", str(EXAMPLE), "--line", "1"]) == 0


def test_missing_file_is_a_usage_error():
    assert main(["estimate", "/nonexistent/file.json"]) == 2


@pytest.mark.parametrize("command", ["estimate", "count", "report", "bench", "version"])
def test_every_command_has_help_with_an_example(command, capsys):
    assert main([command, "--help"]) == 0
    out = capsys.readouterr().out
    assert "Example" in out and "contextfold " + command in out


def test_the_command_list_gives_each_command_its_first_paragraph_on_one_line(capsys):
    # The docstrings' own line breaks made ragged rows in the list (`images,` / `reasoning`).
    from contextfold.cli import app

    for info in app.registered_commands:
        assert info.short_help and "\n" not in info.short_help and "``" not in info.short_help, info.name
    assert main(["--help"]) == 0
    out = " ".join(line.strip("│ ") for line in capsys.readouterr().out.splitlines())
    assert "tool outputs, images, reasoning, media" in " ".join(out.split())


def test_version_as_python_m():
    r = run("version")
    assert r.returncode == 0 and r.stdout.strip() == cf.__version__


def test_progress_bar_goes_to_stderr_only_on_a_terminal(tmp_path):
    """Under a pseudo-terminal the corpus run draws rich's bar (lines, rate, ETA) on stderr;
    stdout stays machine-readable. Without one (every other test) stderr has no bar."""
    import os
    import pty

    p, _ = _corpus_with_bad_lines(tmp_path)
    master, slave = pty.openpty()
    try:
        r = subprocess.run([sys.executable, "-m", "contextfold", "estimate", str(p), "--json", "--jobs", "1"],
                           stdout=subprocess.PIPE, stderr=slave, text=True, timeout=120, env=dict(os.environ, COLUMNS="120"))
        os.close(slave)
        chunks = []
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:
                break
            if not data:
                break
            chunks.append(data)
    finally:
        os.close(master)
    err = b"".join(chunks).decode("utf-8", "replace")
    assert r.returncode == 1
    assert "lines" in err and "ETA" in err
    assert [json.loads(x)["line"] for x in r.stdout.splitlines()] == [1, 2, 3, 4, 6, 7]
    plain = run("estimate", str(p), "--json", "--jobs", "1")
    assert "ETA" not in plain.stderr


# --- compact ---------------------------------------------------------------------------------


def test_compact_writes_the_input_format_within_budget_and_says_what_was_folded(tmp_path, capsys):
    out = tmp_path / "small.json"
    assert main(["compact", str(EXAMPLE), "--budget", "8000", "-o", str(out), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    data = json.loads(EXAMPLE.read_text())
    new = json.loads(out.read_text())
    # the same body shape: only the history is replaced, everything else as it was
    assert set(new) == set(data) and new["model"] == data["model"]
    assert report["tokens_after"] <= 8000 < report["tokens_before"]
    assert report["messages_after"] == len(new["messages"]) < len(data["messages"])
    assert report["folded"] and report["strategy_used"] in ("mask", "summarize")
    # the task and the recent tail are verbatim
    assert new["messages"][:2] == data["messages"][:2]
    assert new["messages"][-3:] == data["messages"][-3:]
    # the written history passes the core's own check of a request
    assert cf.estimate(new["messages"], model=data["model"]) <= 8000


def test_compact_keeps_only_the_recorded_calls_whose_prefix_it_left_unchanged(tmp_path, capsys):
    # A recorded call k sent messages[:n_messages] of the history as it was: after a fold those
    # prefixes are other messages, and `report` of the written file compared their estimate
    # with the old usage (median error +26%, worst +194% at a budget of 6,000).
    out = tmp_path / "small.json"
    assert main(["compact", str(EXAMPLE), "--budget", "6000", "-o", str(out)]) == 0
    data = json.loads(EXAMPLE.read_text())
    new = json.loads(out.read_text())
    same = next(i for i, (a, b) in enumerate(zip([*new["messages"], None], data["messages"])) if a != b)
    assert 0 < same < len(data["messages"])
    assert new["requests"] == [r for r in data["requests"] if r["n_messages"] <= same]
    capsys.readouterr()
    assert main(["report", str(out)]) == 0
    report = capsys.readouterr().out
    if new["requests"]:
        errors = [float(e.rstrip("%")) for e in re.findall(r"worst ([+-][\d.]+)%", report)]
        assert errors and all(abs(e) < 20 for e in errors), report[-400:]


def test_compact_exact_writes_a_body_whose_exact_count_is_within_the_budget(tmp_path, capsys):
    """`--exact`: the written file's `contextfold count` is within the budget, and the report's
    tokens are exact counts (the bundled trajectory's history sent to gpt-4o; without
    `--exact` it compacts to 7,760 estimated tokens that count 8,099)."""
    data = json.loads(EXAMPLE.read_text())
    body = tmp_path / "gpt4o.json"
    body.write_text(json.dumps({"model": "gpt-4o", "messages": data["messages"]}))
    out = tmp_path / "small.json"
    assert main(["compact", str(body), "--budget", "8000", "--exact", "-o", str(out), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    new = json.loads(out.read_text())
    assert report["tokens_after"] == cf.count(new["messages"], model="gpt-4o") <= 8000
    assert report["tokens_before"] == cf.count(data["messages"], model="gpt-4o")
    assert any("exact" in n for n in report["notes"])
    # A body whose model has no public tokenizer (the trajectory as Gemini's): a usage error,
    # nothing written.
    other = tmp_path / "other.json"
    assert main(["compact", str(EXAMPLE), "--budget", "8000", "--exact", "-o", str(other)]) == 2
    assert "--exact" in capsys.readouterr().err
    assert not other.exists()


def test_model_option_prices_a_body_that_names_another_model(tmp_path, capsys):
    # `estimate -m gpt-4o` of a body naming gemini-2.5-pro said gpt-4o but gave Gemini's price,
    # while `compact -m` used gpt-4o: the two disagreed on the same file.
    msgs = json.loads(EXAMPLE.read_text())["messages"][:30]
    body = tmp_path / "body.json"
    body.write_text(json.dumps({"model": "gemini-2.5-pro", "messages": msgs}))
    for model in ("gpt-4o", "claude-sonnet-4-5"):
        assert main(["estimate", str(body), "-m", model, "-p", "openai", "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["model"] == model and out["total"] == cf.estimate(msgs, model=model), out


def test_compact_with_a_store_it_cannot_make_is_a_usage_error_naming_it(tmp_path, capsys):
    # A --store path that is a file: one line naming it, exit 2 (was a traceback, exit 1),
    # and no output written.
    data = json.loads(EXAMPLE.read_text())
    not_a_dir = tmp_path / "spans"
    not_a_dir.write_text("")
    out = tmp_path / "out.json"
    budget = cf.estimate(data["messages"], model=data["model"]) // 3
    assert main(["compact", str(EXAMPLE), "-b", str(budget), "-o", str(out), "--store", str(not_a_dir)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: --store {not_a_dir}") and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1 and not out.exists()


def test_compact_with_a_store_reads_the_turns_behind_its_summary_next_time(tmp_path, capsys):
    # A shell loop compacts the grown history with a new process each time: with --store, the
    # second compaction reads the turns behind the first summary, as a Compactor kept across the
    # loop does; without it, it can only summarize the summary.
    from contextfold.fold_sources import forget_process_sources

    data = json.loads(EXAMPLE.read_text())
    msgs = data["messages"]
    first_part = msgs[:60]
    budget = cf.estimate(first_part, model=data["model"]) // 3
    step1 = tmp_path / "step1.json"
    store = tmp_path / "spans"
    (tmp_path / "in1.json").write_text(json.dumps({**data, "messages": first_part}))
    assert main(["compact", str(tmp_path / "in1.json"), "-b", str(budget), "-o", str(step1), "--store", str(store)]) == 0
    grown = {**data, "messages": json.loads(step1.read_text())["messages"] + msgs[60:90]}
    (tmp_path / "in2.json").write_text(json.dumps(grown))
    outs = {}
    for name, extra in (("stored", ["--store", str(store)]), ("alone", [])):
        forget_process_sources()  # (as a new process: nothing of the first run in memory)
        out = tmp_path / f"{name}.json"
        assert main(["compact", str(tmp_path / "in2.json"), "-b", str(budget), "-o", str(out), *extra]) == 0
        outs[name] = json.loads(out.read_text())["messages"]
    capsys.readouterr()
    assert any(f.read_text().startswith('{"summary"') for f in store.iterdir() if f.suffix == ".txt")
    # The same two compactions by two Compactors sharing nothing but a store, the history
    # read back from JSON in between (as the second process reads the file).
    forget_process_sources()
    shared = cf.MemoryContentStore()

    def apart() -> cf.Compactor:
        # (The provider the CLI reads from the file, as its estimate is the one the CLI plans with.)
        c = cf.Compactor(provider=data["provider"], model=data["model"], budget=budget, store=shared)
        c.sources.shared = False
        return c
    first = json.loads(json.dumps(list(apart().compact(first_part).messages)))
    again = apart().compact(first + msgs[60:90])
    assert outs["stored"] == json.loads(json.dumps(list(again.messages)))
    assert outs["alone"] != outs["stored"]


def test_compact_anthropic_body_keeps_system_and_tools(tmp_path, capsys):
    conv = max(load_conversations(LOCAL, "tau-bench-airline"), key=lambda c: len(c["messages"]))
    from compaction_shapes import convert

    msgs, system = convert(conv["messages"], "anthropic")
    tools = [{"name": t["function"]["name"], "description": t["function"].get("description", ""),
              "input_schema": t["function"]["parameters"]} for t in conv["tools"]]
    body = {"model": "claude-sonnet-4-5", "system": system, "tools": tools, "messages": msgs, "max_tokens": 1024}
    src, out = tmp_path / "body.json", tmp_path / "out.json"
    src.write_text(json.dumps(body))
    before = cf.estimate(msgs, provider="anthropic", model=body["model"], system=system, tools=tools)
    budget = before // 2
    assert main(["compact", str(src), "--budget", str(budget), "-o", str(out)]) == 0
    new = json.loads(out.read_text())
    assert new["system"] == system and new["tools"] == tools and new["max_tokens"] == 1024
    assert new["messages"][0]["role"] == "user"
    assert cf.estimate(new["messages"], provider="anthropic", model=body["model"], system=system, tools=tools) <= budget
    assert "->" in capsys.readouterr().out


def _recorded_bedrock_bodies():
    """Recorded Bedrock Converse bodies (crewai, pydantic-ai) as their callers sent them: all of
    ../shared/data when present, else the committed subset."""
    from transcripts import SHARED, request_body, shared_available

    rows = load_requests(SHARED if shared_available() else LOCAL, with_usage=False)
    bodies = [request_body(r) for r in rows if r.api in ("converse", "count_tokens")]
    assert bodies, "no recorded Bedrock body"
    return bodies


def test_compact_keeps_every_key_of_recorded_bedrock_bodies(tmp_path, capsys):
    """Nothing to fold on these short bodies: the written body must be the input itself, with
    modelId, system, toolConfig and any inferenceConfig (was: a bare list of messages)."""
    for i, body in enumerate(_recorded_bedrock_bodies()):
        src, out = tmp_path / f"b{i}.json", tmp_path / f"o{i}.json"
        src.write_text(json.dumps(body))
        assert main(["compact", str(src), "--budget", "100000", "-o", str(out), "--json"]) == 0
        capsys.readouterr()
        assert json.loads(out.read_text()) == body


def _bedrock_agent_body():
    """A hand-made Bedrock Converse agent loop: 12 file reads, a tool choice and inference settings."""
    msgs: list = [{"role": "user", "content": [{"text": "Fix the failing test in the repo."}]}]
    for i in range(12):
        msgs.append({"role": "assistant", "content": [
            {"text": f"step {i}"}, {"toolUse": {"toolUseId": f"t{i}", "name": "read_file", "input": {"path": f"src/m{i}.py"}}}]})
        msgs.append({"role": "user", "content": [
            {"toolResult": {"toolUseId": f"t{i}", "content": [{"text": f"def f():\n    return {i}\n" * 60}]}}]})
    msgs.append({"role": "assistant", "content": [{"text": "done"}]})
    tool = {"toolSpec": {"name": "read_file", "description": "Read a file",
                         "inputSchema": {"json": {"type": "object", "properties": {"path": {"type": "string"}}}}}}
    return {"modelId": "us.anthropic.claude-sonnet-4-6", "system": [{"text": "You are careful."}],
            "toolConfig": {"tools": [tool], "toolChoice": {"any": {}}}, "inferenceConfig": {"maxTokens": 512},
            "messages": msgs}


def test_compact_bedrock_body_replaces_only_its_messages(tmp_path, capsys):
    body = _bedrock_agent_body()
    src, out = tmp_path / "body.json", tmp_path / "out.json"
    src.write_text(json.dumps(body))
    code = main(["compact", str(src), "--budget", "3000", "--strategy", "summarize", "-o", str(out), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["folded"]
    new = json.loads(out.read_text())
    assert {k: v for k, v in new.items() if k != "messages"} == {k: v for k, v in body.items() if k != "messages"}
    assert len(new["messages"]) == report["messages_after"] < len(body["messages"])
    # still Converse messages: content blocks, the task first and the last turn verbatim
    assert new["messages"][0] == body["messages"][0] and new["messages"][-1] == body["messages"][-1]
    assert all(isinstance(m["content"], list) for m in new["messages"])


@pytest.mark.parametrize(
    "args",
    [["--strategy", "fold"], ["--summarizer", "gpt-4o"], ["--summarizer", "acme:model"]],
)
def test_compact_rejects_bad_options_with_usage_exit(args):
    r = run("compact", str(EXAMPLE), "--budget", "8000", *args)
    assert r.returncode == 2, r.stderr


@pytest.mark.parametrize("extra", [[], ["--allow-over"]])
def test_compact_to_an_unreachable_budget_exits_6_with_one_line_and_a_json_error(tmp_path, extra):
    """Was exit 1 (the code for unreadable input) and nothing on stdout with --json."""
    out = tmp_path / "small.json"
    r = run("compact", str(EXAMPLE), "--budget", "500", "--json", "-o", str(out), *extra)
    assert r.returncode == 6, r.stderr
    (line,) = r.stderr.splitlines()
    assert line.startswith("error: cannot compact to 500 tokens:") and "Traceback" not in r.stderr
    doc = json.loads(r.stdout)
    assert doc["budget"] == 500 and doc["floor_tokens"] > 500 and doc["output"] is None and doc["error"]
    assert doc["tokens_before"] == cf.estimate_request(json.loads(EXAMPLE.read_text()))
    assert not out.exists()


def test_exit_6_is_in_the_documented_exit_codes():
    doc = (ROOT / "docs" / "guides" / "cli-report.md").read_text()
    assert "| 6 | `compact` cannot reach the budget at all" in doc
    shown = " ".join(run("compact", "--help").stdout.replace("│", " ").split())  # rich wraps it in a box
    assert "6 compact cannot reach the budget at all" in shown


def test_compact_on_jsonl_is_a_usage_error(tmp_path):
    corpus = tmp_path / "c.jsonl"
    line = json.dumps(json.loads(EXAMPLE.read_text())["messages"])
    corpus.write_text(line + "\n" + line + "\n")
    r = run("compact", str(corpus), "--budget", "8000")
    assert r.returncode == 2 and "one document" in r.stderr


def test_compact_names_a_broken_history_and_repair_fixes_it(tmp_path):
    """A history whose kept call has arguments cut off (not valid JSON) exits 1 naming the
    message and ``--repair``; with ``--repair`` it is compacted, the change said, every
    argument written valid JSON. Without ``--store``, the ids the notes name are said to live
    in the process only."""
    h = [{"role": "system", "content": "You read files."}, {"role": "user", "content": "Read them all."}]
    for k in range(8):
        args = '{"path": "f.py"' if k == 7 else json.dumps({"path": f"f{k}.py"})
        h += [{"role": "assistant", "content": None, "tool_calls": [
                  {"id": f"c{k}", "type": "function", "function": {"name": "read", "arguments": args}}]},
              {"role": "tool", "tool_call_id": f"c{k}", "content": f"line {k}\n" * 300}]
    h.append({"role": "user", "content": "and?"})
    src = tmp_path / "h.json"
    src.write_text(json.dumps(h))
    budget = str(cf.estimate(h) // 3)
    broken = run("compact", str(src), "--budget", budget, "--strategy", "mask", "-o", str(tmp_path / "o.json"))
    assert broken.returncode == 1 and "message 16" in broken.stderr and "--repair" in broken.stderr, broken.stderr
    fixed = run("compact", str(src), "--budget", budget, "--strategy", "mask", "--repair", "-o", str(tmp_path / "o.json"))
    assert fixed.returncode == 0, fixed.stderr
    assert "invalid_json" in fixed.stdout
    # (Measured: masking cuts message 13's middle under an id, which no later process can recall.)
    assert "id=cf" in fixed.stdout and "--store DIR keeps it" in fixed.stdout, fixed.stdout
    kept = run("compact", str(src), "--budget", budget, "--strategy", "mask", "--repair", "--store",
               str(tmp_path / "store"), "-o", str(tmp_path / "o.json"))
    assert kept.returncode == 0 and "--store DIR keeps it" not in kept.stdout, kept.stdout
    out = json.loads((tmp_path / "o.json").read_text())
    assert all(json.loads(c["function"]["arguments"]) is not None for m in out for c in m.get("tool_calls") or [])
