"""The token report: what it computes, a self-contained page, and the chart as a real headless
Chromium renders it (skipped, visibly, only where chromium is not installed)."""

from __future__ import annotations

import json
import re
import struct
import warnings
import zlib
from pathlib import Path

import pytest

import contextfold as cf
from contextfold import report as rep
from contextfold.cli import main
from contextfold.inputs import read_request
from rich.console import Console
from transcripts import LOCAL, ROOT, load_conversations

EXAMPLE = ROOT / "examples" / "swe-trajectory.json"

needs_chromium = pytest.mark.skipif(
    rep.find_browser() is None,
    reason="chromium not installed (Debian: apt-get install chromium; .ci/run installs it)",
)


@pytest.fixture(scope="module")
def tau(tmp_path_factory) -> Path:
    """The longest real tau-bench dialogue (tool calls, outputs, schemas) as a request body."""
    c = max(load_conversations(LOCAL, "tau-bench-airline"), key=lambda c: len(c["messages"]))
    p = tmp_path_factory.mktemp("report") / "tau.json"
    p.write_text(json.dumps({"model": "gpt-4o", "messages": c["messages"], "tools": c["tools"]}))
    return p


def _compact(msgs, budget, **kw):
    return cf.Compactor(budget=budget, summarizer=cf.ExtractiveSummarizer(), **kw).compact(msgs)


def test_plan_is_what_the_compactor_does_and_totals_agree_with_the_library(tau):
    body = json.loads(tau.read_text())
    msgs = body["messages"]
    strategies = set()
    # A budget that masking alone reaches, and one that takes a summary.
    for budget in (8000, 5000):
        d = rep.analyze(read_request(body), budget=budget)
        assert d.breakdown.total == cf.estimate(msgs, model="gpt-4o", tools=body["tools"])
        want = _compact(msgs, budget, model="gpt-4o", tools=body["tools"])
        got = d.plan.result
        assert got is not None and d.plan.budget == budget
        assert (got.strategy_used, got.tokens_after, got.removed, got.pruned) == (want.strategy_used, want.tokens_after, want.removed, want.pruned)
        assert got.messages == want.messages
        states = d.plan.states(len(msgs))
        assert [i for i, s in enumerate(states) if s == "fold"] == list(got.removed)
        # shortened: what masking pruned, and a message the result changed (one cut in the middle)
        masked = {i for i, s in enumerate(states) if s == "masked"}
        assert masked >= {p.index for p in got.pruned}
        assert all(not any(m is msgs[i] for m in got.messages) for i in masked)
        assert all(s == "head" for s in states[: got.removed[0]]) if got.removed else "head" not in states
        strategies.add(got.strategy_used)
    assert strategies == {"mask", "summarize"}
    assert d.window == cf.context_window("gpt-4o") and d.gate == cf.Session(model="gpt-4o").trigger_tokens
    assert [m.tokens for m in d.top] == sorted(cf.estimate_each(msgs, model="gpt-4o"), reverse=True)[: len(d.top)]


def test_plan_of_a_text_agent_folds_as_deep_as_the_compactor(capsys):
    """A text-protocol agent (observations as user messages, no tool results): the old plan
    (tail walk + prune) said pruning saves nothing; the report now shows the compactor's fold."""
    body = json.loads(EXAMPLE.read_text())
    req = read_request(body)
    d = rep.analyze(req)
    total = d.breakdown.total
    assert d.plan.budget == total // 2  # far under the 1M window's own budget: half the history
    want = _compact(req.messages, total // 2, provider=req.provider, model=req.model, tools=req.tools, system=req.system)
    got = d.plan.result
    assert got is not None and got.changed and got.tokens_after <= total // 2 < total
    assert (got.removed, got.tokens_after, got.strategy_used) == (want.removed, want.tokens_after, want.strategy_used)
    rep.print_text(d, "x", Console(width=200))
    out = capsys.readouterr().out
    first, last = got.removed[0], got.removed[-1]
    assert f"folded into one summary: {len(got.removed)} messages ({first}..{last})" in out
    assert f"protected tail: messages {last + 1}..{len(req.messages) - 1}" in out
    assert f"{total:,} tokens -> {len(got.messages)} messages / {got.tokens_after:,} tokens" in out


def test_a_budget_the_compactor_cannot_reach_is_reported_not_raised(tau):
    d = rep.analyze(read_request(json.loads(tau.read_text())), budget=50)
    assert d.plan.result is None and d.plan.error
    assert set(d.plan.states(len(d.breakdown.per_message))) == {"kept"}
    page = rep.render_html(d)
    assert "cannot compact to 50 tokens" in page


def test_estimate_and_report_print_the_breakdown_from_one_place(capsys):
    """`contextfold estimate` prints exactly the first part of `contextfold report`."""
    assert main(["estimate", str(EXAMPLE), "--top", "8"]) == 0
    estimate_out = capsys.readouterr().out
    assert main(["report", str(EXAMPLE), "--top", "8"]) == 0
    report_out = capsys.readouterr().out
    assert "largest 8 messages" in estimate_out and "by kind" in estimate_out
    assert report_out.startswith(estimate_out)


def test_duplicated_tool_outputs_are_found():
    out = "x" * 50 + " the same long listing " * 20
    msgs = [{"role": "user", "content": "go"}]
    for i in range(3):
        msgs.append({"role": "assistant", "content": None, "tool_calls": [{"id": f"c{i}", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]})
        msgs.append({"role": "tool", "tool_call_id": f"c{i}", "content": out})
    d = rep.analyze(read_request(msgs))
    (dup,) = d.duplicates
    assert dup.indices == (2, 4, 6)
    assert dup.wasted_tokens == 2 * cf.estimate_each(msgs)[6]


def test_html_is_one_self_contained_page(tau, tmp_path):
    out = tmp_path / "r.html"
    assert main(["report", str(tau), "-o", str(out)]) == 0
    page = out.read_text()
    assert "<script" not in page and "<link" not in page
    assert not re.search(r"""(src|href)\s*=\s*["']?https?:""", page)
    assert page.count("<svg") == 3 and 'id="growth"' in page and 'id="tools"' in page
    for k in ("tool outputs", "tool calls", "tool schemas", "Compaction plan", "Duplicated tool outputs", "Biggest"):
        assert k in page


def read_png(path: Path) -> tuple[int, int, list[bytes]]:
    """Width, height and RGB rows of an 8-bit RGB/RGBA PNG (what Chromium writes)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + n]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and color in (2, 6), (depth, color)
            bpp = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line) if bpp == 3 else bytes(v for j, v in enumerate(line) if j % 4 != 3))
        prev = line
    return width, height, rows


def color_box(rows: list[bytes], hex_color: str) -> tuple[int, int, int, int, int]:
    """(pixels, x0, y0, x1, y1) of the pixels exactly of ``hex_color``."""
    rgb = bytes.fromhex(hex_color[1:])
    n, xs, ys = 0, [], []
    for y, row in enumerate(rows):
        x = row.find(rgb)
        while x != -1:
            if x % 3 == 0:
                n += 1
                xs.append(x // 3)
                ys.append(y)
            x = row.find(rgb, x + 1)
    return (n, min(xs), min(ys), max(xs), max(ys)) if n else (0, 0, 0, 0, 0)


@needs_chromium
def test_chart_renders_in_headless_chromium(tau, tmp_path):
    """The page as a browser draws it: the growth chart's kind bands are painted over a wide
    area (not just the 12-px legend swatches), and the per-message plan strip is there."""
    page, shot = tmp_path / "r.html", tmp_path / "page.png"
    assert main(["report", str(tau), "-o", str(page)]) == 0
    rep.screenshot(page, shot, width=1100, height=1400)
    width, height, rows = read_png(shot)
    assert (width, height) == (1100, 1400)
    for kind in ("tool_outputs", "tool_calls", "text", "tool_schemas"):
        n, x0, y0, x1, y1 = color_box(rows, rep.COLORS[kind])
        assert n > 2000, (kind, n)
        assert x1 - x0 > 600 and y1 - y0 > 100, (kind, x0, y0, x1, y1)
    assert color_box(rows, rep.PLAN_COLORS["kept"])[0] > 300


@needs_chromium
def test_png_option_writes_the_chart(tau, tmp_path):
    png = tmp_path / "chart.png"
    assert main(["report", str(tau), "--png", str(png)]) == 0
    _, _, rows = read_png(png)
    n, x0, _, x1, _ = color_box(rows, rep.COLORS["tool_outputs"])
    assert n > 2000 and x1 - x0 > 600


def test_png_without_chromium_exits_4(tau, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("CONTEXTFOLD_CHROMIUM", raising=False)
    assert main(["report", str(tau), "--png", str(tmp_path / "c.png")]) == 4


@pytest.mark.parametrize("browser", ["/bin/false", "/bin/true"])
def test_png_with_a_browser_that_runs_but_writes_nothing_exits_4_in_one_line(tau, tmp_path, browser):
    """/bin/false exits 1, /bin/true exits 0 without a screenshot: both were a RuntimeError
    traceback with exit 1 (/bin/true's only because no PNG was there before)."""
    import os
    import subprocess
    import sys

    png = tmp_path / "chart.png"
    png.write_bytes(b"last week's chart")
    r = subprocess.run([sys.executable, "-m", "contextfold", "report", str(tau), "--png", str(png)],
                       capture_output=True, text=True, timeout=120, env={**os.environ, "CONTEXTFOLD_CHROMIUM": browser})
    assert r.returncode == 4, r.stderr
    assert "Traceback" not in r.stderr
    (line,) = r.stderr.splitlines()
    assert line.startswith("error: the browser") and "without writing the screenshot" in line
    assert png.read_bytes() == b"last week's chart"  # left as it was


def test_the_plan_legend_names_only_the_states_the_strip_shows():
    from contextfold.inputs import read_request
    from contextfold.report import analyze, render_html

    # A chat without tool output: the plan folds and keeps, and masks nothing. (Each turn says
    # something of its own: turns that repeat one phrase digest to a few lines, and the room they
    # leave goes to the tail, whose newest folded round then comes back cut, shown as masked.)
    history = [{"role": "user" if i % 2 == 0 else "assistant",
                "content": f"turn {i}: " + " ".join(f"item_{i}_{j} costs {i * j} units" for j in range(30))}
               for i in range(40)]
    d = analyze(read_request(history), budget=cf.estimate(history) // 3)
    states = set(d.plan.states(len(history)))
    assert "masked" not in states and "fold" in states
    page = render_html(d)
    assert "plan: masked" not in page
    assert "plan: fold" in page and "plan: kept" in page


# --- request settings (thinking, tool_choice, a provider's preamble) -------------------------


def test_report_total_is_estimates_on_every_recorded_request():
    """The report prices a body as `estimate_request` does, settings included: on the recorded
    requests with thinking, tool_choice or a DeepSeek Responses preamble the report's total was
    the history's alone (48 of them on ../shared/data)."""
    from transcripts import SHARED, load_requests, request_body, shared_available

    with_settings = 0
    for r in load_requests(SHARED if shared_available() else LOCAL, with_usage=False):
        body = request_body(r)
        req = read_request(body)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", cf.UnknownModelWarning)  # recorded names such as "test"
            d = rep.analyze(req, top=1)
        assert d.breakdown.total == cf.estimate_request(body), r.source
        with_settings += cf.read_request(body).settings_tokens > 0
    assert with_settings >= 10


def _anthropic_thinking_body(turns: int = 30) -> dict:
    msgs: list = [{"role": "user", "content": "Fix the bug in parser.py; never push to main."}]
    for k in range(turns):
        msgs.append({"role": "assistant", "content": [{"type": "tool_use", "id": f"t{k}", "name": "run", "input": {"cmd": f"pytest -k case{k}"}}]})
        msgs.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{k}",
                                                  "content": f"case{k} FAILED: assertion error in parser line {k}\n" * 8}]})
    msgs.append({"role": "user", "content": "Now fix it."})
    return {"model": "claude-sonnet-4-5", "max_tokens": 16000, "thinking": {"type": "enabled", "budget_tokens": 8000},
            "tool_choice": {"type": "any"}, "messages": msgs,
            "tools": [{"name": "run", "description": "Run a shell command",
                       "input_schema": {"type": "object", "properties": {"cmd": {"type": "string"}}}}]}


def test_report_text_and_html_show_the_total_with_the_settings(tmp_path, capsys):
    body = {"model": "claude-sonnet-4-5", "max_tokens": 8000, "thinking": {"type": "enabled", "budget_tokens": 5000},
            "messages": [{"role": "user", "content": "What is 2+2?"}]}
    src, page = tmp_path / "body.json", tmp_path / "r.html"
    src.write_text(json.dumps(body))
    want = cf.estimate_request(body)
    assert want > cf.estimate(body["messages"], provider="anthropic", model=body["model"])
    assert main(["report", str(src)]) == 0
    assert f"estimated prompt tokens: {want:,}" in capsys.readouterr().out
    assert main(["report", str(src), "-o", str(page)]) == 0
    assert f"<b>{want:,}</b>estimated prompt tokens" in page.read_text()


def test_compact_budget_counts_the_settings_so_estimate_of_the_output_is_within_it(tmp_path, capsys):
    """Was: tokens_after 1,984 at budget 2,000 (exit 0) while `estimate` of the written body
    gave 2,119: thinking and tool_choice=any were left out of the budget check."""
    body = _anthropic_thinking_body()
    src, out = tmp_path / "big.json", tmp_path / "out.json"
    src.write_text(json.dumps(body))
    assert main(["compact", str(src), "--budget", "2000", "-o", str(out), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["tokens_before"] == cf.estimate_request(body)
    assert report["tokens_after"] == cf.estimate_request(json.loads(out.read_text())) <= 2000
    # the report's plan is the same run
    d = rep.analyze(read_request(body), budget=2000)
    assert d.plan.result is not None and d.plan.result.tokens_after == report["tokens_after"]


# --- the compaction-plan table reads what the result did ---------------------------------------


def _plan_rows(page: str) -> dict[str, list[int]]:
    """The plan table's rows: label -> [messages, tokens before, tokens after]."""
    table = page[page.index("<h2>Compaction plan"):]
    table = table[: table.index("</table>")]
    rows = {}
    for label, cells in re.findall(r"<tr><td[^>]*>([^<]*)</td>(.*?)</tr>", table):
        nums = [int(c.replace(",", "")) if c.replace(",", "").isdigit() else 0 for c in re.findall(r">([^<]*)</td>", cells)]
        rows[label.split(" (")[0] if not label.startswith("head") else "head"] = nums
    return rows


def _summary_tokens(d) -> int:
    r = d.plan.result
    after = cf.breakdown(r.messages, **d.request.options()).per_message
    from contextfold._core import SUMMARY_MARKERS

    (i,) = [k for k, m in enumerate(r.messages) if SUMMARY_MARKERS[0] in json.dumps(m, ensure_ascii=False)]
    return after[i].tokens


def test_plan_table_books_a_tail_message_cut_in_the_middle_as_shortened():
    """At 11,000 tokens the plan cuts the middle of tail message 88 (at 8,000 it did, where the
    default tail was half of every budget; at 10,000 while a deep fold's tail was 35% of it; at
    10,500 while it was 25%; at 11,000 while a shallow fold's tail was half the budget; with
    15% at every depth, the message cut at 9,000-10,000 hosts the summary, merged, and is booked
    with it; at 11,000 since the digest prices its text as the history does, and at 12,500 the
    summary leaves it room whole): the table said "kept verbatim 29 msgs 4,726 -> 4,726",
    "shortened 0" and a 1,404-token summary (really 2,218)."""
    req = read_request(json.loads(EXAMPLE.read_text()))
    d = rep.analyze(req, budget=11_000)
    r = d.plan.result
    assert r is not None and any("middle cut" in n for n in r.notes)
    rows = _plan_rows(rep.render_html(d))
    before = [m.tokens for m in d.breakdown.per_message]
    verbatim = [i for i, m in enumerate(r.messages) if any(m is x for x in req.messages)]
    assert rows["kept verbatim"][1] == rows["kept verbatim"][2]
    assert rows["shortened"][0] >= 1 and rows["shortened"][2] < rows["shortened"][1]
    assert rows["folded into one summary"][2] == _summary_tokens(d)
    assert rows["kept verbatim"][0] + rows["head"][0] == len(verbatim)
    parts = ("head", "folded into one summary", "shortened", "kept verbatim", "system, tools and framing")
    assert sum(rows[p][2] for p in parts) == rows["total"][2] == r.tokens_after
    assert sum(rows[p][1] for p in parts) == rows["total"][1] == sum(before) + sum(d.breakdown.request_overhead.values())
    assert "masked" in d.plan.states(len(req.messages))


def test_plan_table_books_a_summary_merged_into_a_message_with_the_summary():
    """A role seam makes the compactor merge the summary into a kept message: that message is
    no longer verbatim, and the summary costs the merged message (was booked as verbatim).
    (A synthetic history of alternating turns merged where the fold's digest came short of its
    room and a round it moved into the tail opened on the summary's role; since the digest
    prices its text as the history does, it fills its room there and none does. The bundled
    SWE request merges at 21 of 56 budgets from 5,000 to 18,750 tokens.)"""
    req = read_request(json.loads(EXAMPLE.read_text()))
    # The first budget (from 5,000 tokens up) where a turn of the summary's role follows it.
    plans = (rep.analyze(req, budget=b) for b in range(5_000, 19_000, 250))
    d = next((p for p in plans if p.plan.merged is not None), None)
    assert d is not None, "no budget from 5,000 to 18,750 tokens merges the summary"
    r = d.plan.result
    assert r is not None and len(r.messages) == len(req.messages) - len(r.removed)  # merged
    rows = _plan_rows(rep.render_html(d))
    assert rows["folded into one summary"][2] == _summary_tokens(d)
    assert rows["folded into one summary"][0] == len(d.plan.result.removed) + 1
    assert rows["kept verbatim"][1] == rows["kept verbatim"][2]
    parts = ("head", "folded into one summary", "shortened", "kept verbatim", "system, tools and framing")
    assert sum(rows[p][2] for p in parts) == rows["total"][2] == d.plan.result.tokens_after
