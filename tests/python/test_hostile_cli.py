"""Hostile input to the command line, run as a user runs it (a fresh interpreter, real pipes):
endless or oversized input, a failing write over the input file, markup and escape sequences in
the data, bad JSONL lines, usage errors and their exit codes, unknown models, missed budgets."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from transcripts import ROOT

EXAMPLE = ROOT / "examples" / "swe-trajectory.json"


def run(*args: str, stdin: str | bytes | None = None, env: dict[str, str] | None = None,
        timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """The console entry point in a fresh interpreter (stdin as given, or closed)."""
    data = stdin.encode() if isinstance(stdin, str) else stdin
    r = subprocess.run([sys.executable, "-m", "contextfold", *args], input=data, capture_output=True,
                       timeout=timeout, env=None if env is None else {**os.environ, **env})
    return subprocess.CompletedProcess(r.args, r.returncode, r.stdout.decode("utf-8", "replace"),
                                       r.stderr.decode("utf-8", "replace"))


def _history(n: int = 6) -> list[dict]:
    h = [{"role": "user", "content": "Fix the test. " * 20}]
    for k in range(n):
        h.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{k}", "type": "function", "function": {"name": "bash", "arguments": json.dumps({"cmd": f"cat f{k}"})}}]})
        h.append({"role": "tool", "tool_call_id": f"c{k}", "content": "output line\n" * 400})
    return h


# -- item 4: a document's size is capped --------------------------------------------------------


def test_dev_zero_stops_at_the_size_cap_with_a_clean_error():
    r = run("estimate", "/dev/zero", "--max-bytes", "1000000", timeout=60)
    assert r.returncode == 1
    assert "larger than the cap of 1,000,000 bytes" in r.stderr and "Traceback" not in r.stderr


def test_an_endless_stdin_stops_at_the_cap_set_in_the_environment():
    # Unbuffered: a write fails at once when the reader has gone, and closing flushes nothing
    # (a buffered close after the reader left raised BrokenPipeError outside the test's hands).
    p = subprocess.Popen([sys.executable, "-m", "contextfold", "estimate", "-"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0,
                         env={**os.environ, "CONTEXTFOLD_MAX_BYTES": "200000"})
    assert p.stdin is not None and p.stderr is not None
    try:
        for _ in range(1000):  # 10 MB offered; the reader stops after 200 KB
            p.stdin.write(b"[" * 10_000)
    except BrokenPipeError:
        pass  # the reader stopped and went away: what this test wants
    finally:
        try:
            p.stdin.close()
        except BrokenPipeError:
            pass
    err = p.stderr.read().decode()
    p.stderr.close()
    if p.stdout is not None:
        p.stdout.close()
    assert p.wait(timeout=60) == 1
    assert "larger than the cap of 200,000 bytes" in err


def test_a_jsonl_line_over_the_cap_is_reported_and_the_next_lines_are_read(tmp_path):
    small = json.dumps(_history(1))
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(small + "\n" + json.dumps(_history(60)) + "\n" + small + "\n")
    r = run("estimate", str(corpus), "--json", "-j", "1", "--max-bytes", str(len(small) + 10))
    assert r.returncode == 1
    assert [json.loads(x).get("line") for x in r.stdout.splitlines()] == [1, 2, 3]
    assert "c.jsonl:2: larger than the cap" in r.stderr


# -- item 7: a write never truncates what it replaces -----------------------------------------


def test_compact_onto_its_own_input_with_an_unencodable_history_leaves_a_valid_file(tmp_path):
    h = _history()
    h[-1]["content"] = "lone surrogate \ud800 here"  # in the tail: kept verbatim
    src = tmp_path / "h.json"
    src.write_text(json.dumps(h))  # ASCII JSON with the \ud800 escape, as a caller's json.dump writes it
    before = src.read_bytes()
    r = run("compact", str(src), "--budget", "2000", "-o", str(src))
    assert r.returncode in (0, 5), r.stderr
    after = src.read_bytes()
    assert after and after != before
    back = json.loads(after)
    assert back[-1]["content"] == "lone surrogate \ud800 here"


def test_an_unwritable_output_exits_2_and_leaves_the_existing_file_whole(tmp_path):
    d = tmp_path / "ro"
    d.mkdir()
    existing = d / "report.html"
    existing.write_text("<p>old report</p>")
    d.chmod(0o500)
    try:
        if os.access(d, os.W_OK):
            pytest.skip("running as a user who can write anywhere (root): no unwritable directory")
        r = run("report", str(EXAMPLE), "-o", str(existing))
    finally:
        d.chmod(0o700)
    assert r.returncode == 2 and "cannot write" in r.stderr and "Traceback" not in r.stderr
    assert existing.read_text() == "<p>old report</p>"


def test_an_output_path_in_a_missing_directory_exits_2_naming_it(tmp_path):
    r = run("report", str(EXAMPLE), "-o", str(tmp_path / "no" / "such" / "r.html"))
    assert r.returncode == 2 and "cannot write" in r.stderr and "Traceback" not in r.stderr


def test_report_over_an_existing_report_replaces_it_whole(tmp_path):
    out = tmp_path / "r.html"
    out.write_text("old")
    assert run("report", str(EXAMPLE), "-o", str(out)).returncode == 0
    text = out.read_text()
    assert text.startswith("<!DOCTYPE html>") and text.rstrip().endswith("</html>")
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_dash_output_writes_to_stdout_and_creates_no_file(tmp_path):
    r = subprocess.run([sys.executable, "-m", "contextfold", "compact", str(EXAMPLE), "--budget", "8000", "-o", "-"],
                       capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert r.returncode == 0, r.stderr
    body = json.loads(r.stdout)
    assert body["messages"]
    assert not (tmp_path / "-").exists()
    r = subprocess.run([sys.executable, "-m", "contextfold", "report", str(EXAMPLE), "-o", "-"],
                       capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert r.returncode == 0 and r.stdout.startswith("<!DOCTYPE html>")
    assert not (tmp_path / "-").exists()


# -- item 13: data is never markup; escape sequences never reach the terminal --------------------

HOSTILE = "[/etc/nginx/nginx.conf] [bold red]x[/] \x1b]0;pwned\x07\x1b[2J\x1b[31mred"


@pytest.mark.parametrize("command", [["estimate"], ["report"], ["compact", "--budget", "300"]])
def test_markup_and_escape_sequences_in_role_text_and_model_are_printed_as_inert_text(tmp_path, command):
    body = {"model": "[/model]\x1b[5m", "messages": [
        {"role": "user", "content": HOSTILE * 20},
        {"role": "assistant", "content": "ok " + HOSTILE},
        {"role": "user", "content": "more " * 300},
    ]}
    p = tmp_path / "[red]x[blink]\x1b[5m.json"
    p.write_text(json.dumps(body))
    r = run(*command[:1], str(p), *command[1:])
    assert r.returncode in (0, 1, 5, 6), r.stderr
    assert "MarkupError" not in r.stderr and "Traceback" not in r.stderr
    assert "\x1b" not in r.stdout and "\x1b" not in r.stderr and "\x07" not in r.stdout


def test_count_with_a_bracketed_role_prints_inert_text(tmp_path):
    p = tmp_path / "b.json"
    p.write_text(json.dumps({"model": "gpt-4o", "messages": [{"role": "user", "content": HOSTILE}]}))
    r = run("count", str(p))
    assert r.returncode == 0 and "\x1b" not in r.stdout and "Traceback" not in r.stderr


# -- item 14: bad JSONL lines are reported and the run goes on -----------------------------------


def _corpus_with(tmp_path: Path, bad: bytes, at: int, n: int) -> Path:
    good = json.dumps(_history(1)).encode()
    lines = [good] * n
    lines[at] = bad
    p = tmp_path / "c.jsonl"
    p.write_bytes(b"\n".join(lines) + b"\n")
    return p


@pytest.mark.parametrize("jobs", ["1", "2"])
@pytest.mark.parametrize(
    ("bad", "says"),
    [(b'[{"role": "user", "content": "caf\xe9"}]', "invalid UTF-8"),
     (b"[" * 100_000 + b"]" * 100_000, "JSON nested too deeply"),
     (b'[{"role": "user", "content": "x"', "invalid JSON")],
    ids=["non-utf8", "deep", "truncated"],
)
def test_one_bad_jsonl_line_is_reported_and_every_other_line_is_read(tmp_path, jobs, bad, says):
    p = _corpus_with(tmp_path, bad, at=400, n=1000)
    r = run("estimate", str(p), "--json", "-j", jobs)
    assert r.returncode == 1
    rows = [json.loads(x) for x in r.stdout.splitlines()]
    assert len(rows) == 1000
    assert [x["line"] for x in rows] == list(range(1, 1001))
    assert "error" in rows[400] and "total" in rows[401]
    assert f"c.jsonl:401: {says}" in r.stderr, r.stderr[-500:]
    assert "1 of 1000 lines failed" in r.stderr


def test_invalid_json_in_a_document_says_its_line_and_column(tmp_path):
    p = tmp_path / "h.json"
    p.write_text('[\n  {"role": "user",\n   "content": "x",,}\n]')
    r = run("estimate", str(p))
    assert r.returncode == 1
    assert "at line 3, column" in r.stderr and "at at" not in r.stderr


# -- item 16: usage errors exit 2, no tracebacks ------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [["estimate", str(EXAMPLE), "-p", "bad"], ["report", str(EXAMPLE), "--budget", "-5"],
     ["estimate", str(EXAMPLE), "--top", "-1"], ["report", str(EXAMPLE), "--window", "0"]],
    ids=["bad-provider", "negative-budget", "negative-top", "zero-window"],
)
def test_usage_errors_exit_2(args):
    r = run(*args)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr


def test_summarizer_without_its_api_key_is_a_usage_error_naming_it(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    r = subprocess.run([sys.executable, "-m", "contextfold", "compact", str(EXAMPLE), "--budget", "8000",
                        "--summarizer", "openai:gpt-4.1-mini"], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "OPENAI_API_KEY" in r.stderr or "api_key" in r.stderr


def test_an_anthropic_summarizer_without_its_api_key_is_a_usage_error_naming_it(tmp_path):
    # The anthropic SDK builds a client without credentials and fails only when it sends: every
    # compaction then fell back to the extractive digest with exit 0, where openai and gemini
    # exit 2 at once.
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env["HOME"] = str(tmp_path)  # no credentials profile of the user's either
    r = subprocess.run([sys.executable, "-m", "contextfold", "compact", str(EXAMPLE), "--budget", "8000",
                        "-o", str(tmp_path / "out.json"), "--summarizer", "anthropic:claude-haiku-4-5"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 2 and "Traceback" not in r.stderr, (r.returncode, r.stderr[-500:])
    assert "ANTHROPIC_API_KEY" in r.stderr
    assert not (tmp_path / "out.json").exists()


def test_a_summarizer_model_of_unknown_window_asks_for_summarizer_window():
    r = run("compact", str(EXAMPLE), "--budget", "8000", "--summarizer", "ollama:my-own-model")
    assert r.returncode == 2 and "--summarizer-window" in r.stderr and "Traceback" not in r.stderr


def test_a_bad_chromium_path_exits_4(tmp_path):
    r = run("report", str(EXAMPLE), "--png", str(tmp_path / "c.png"), env={"CONTEXTFOLD_CHROMIUM": str(tmp_path / "nope")})
    assert r.returncode == 4 and "Traceback" not in r.stderr


def test_piping_into_head_exits_0_quietly(tmp_path):
    corpus = tmp_path / "c.jsonl"
    corpus.write_text((json.dumps(_history(1)) + "\n") * 3000)
    p = subprocess.run(f"{sys.executable} -m contextfold estimate {corpus} --json -j 1 | head -n 2; echo ${{PIPESTATUS[0]}}",
                       shell=True, executable="/bin/bash", capture_output=True, text=True, timeout=120)
    lines = p.stdout.splitlines()
    assert len(lines) == 3 and lines[-1] == "0", p.stdout[-300:] + p.stderr[-500:]
    assert "Traceback" not in p.stderr and "BrokenPipe" not in p.stderr


@pytest.mark.parametrize("command", ["estimate", "report"])
def test_piping_text_output_into_head_exits_0_quietly(command):
    # rich's console answers a closed pipe with exit 1: the text tables did, where --json gave 0.
    p = subprocess.run(f"{sys.executable} -m contextfold {command} {EXAMPLE} | head -n 1; echo ${{PIPESTATUS[0]}}",
                       shell=True, executable="/bin/bash", capture_output=True, text=True, timeout=120)
    lines = p.stdout.splitlines()
    assert len(lines) == 2 and lines[-1] == "0", p.stdout[-300:] + p.stderr[-500:]
    assert "Traceback" not in p.stderr and "BrokenPipe" not in p.stderr


def test_dash_h_and_dash_dash_version_work():
    import contextfold

    assert run("--version").stdout.strip() == contextfold.__version__
    top = run("-h")
    assert top.returncode == 0 and "compact" in top.stdout and "report" in top.stdout
    assert run("compact", "-h").returncode == 0


# -- item 17: unknown models, missed budgets ----------------------------------------------------


def test_a_misspelt_model_is_warned_about_on_stderr_and_refused_with_strict():
    r = run("estimate", str(EXAMPLE), "-m", "gpt4o")
    assert r.returncode == 0 and "unknown model 'gpt4o'" in r.stderr
    r = run("estimate", str(EXAMPLE), "-m", "gpt4o", "--strict")
    assert r.returncode == 3 and "unknown model 'gpt4o'" in r.stderr


def test_mask_over_the_budget_says_so_and_exits_5_unless_allow_over(tmp_path):
    args = ["compact", str(EXAMPLE), "--strategy", "mask", "--budget", "3000", "--json"]
    r = run(*args)
    doc = json.loads(r.stdout)
    assert doc["over_budget"] and doc["tokens_after"] > 3000
    assert r.returncode == 5 and "over the budget of 3,000" in r.stderr
    assert run(*args, "--allow-over").returncode == 0


def test_a_backed_off_compaction_is_said_in_plain_words():
    import contextfold as cf

    h = _history(10)
    big = cf.estimate(h)
    r = cf.Compactor(budget=big - 50, min_free_share=0.5).compact(h)
    assert r.reason and r.reason.startswith("compaction skipped:"), r.reason
    assert "gate" not in r.reason and "backed off" not in r.reason
