"""Hostile input to the report, checked in a real headless Chromium: markup in the data stays
text (no navigation, no injected style), the CSP allows nothing inline but the page's own
stylesheet, and the chart of a history far above its window stays legible at several sizes."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import contextfold as cf
from contextfold import report as rep
from contextfold.inputs import read_request

needs_chromium = pytest.mark.skipif(
    rep.find_browser() is None,
    reason="chromium not installed (Debian: apt-get install chromium; .ci/run installs it)",
)

REFRESH = '<meta http-equiv="refresh" content="0;url=data:text/html,<title>navigated away</title>">'
STYLE = "<style>body{display:none!important}h1{color:red}</style>"


def _dump_dom(page: Path, *, budget_ms: int = 3000, width: int = 1100, height: int = 900) -> str:
    """The DOM after ``budget_ms`` of virtual time (a meta refresh would have navigated by then)."""
    browser = rep.find_browser()
    assert browser is not None
    import tempfile

    with tempfile.TemporaryDirectory() as profile:
        r = subprocess.run(
            [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-dev-shm-usage",
             f"--user-data-dir={profile}", f"--window-size={width},{height}", f"--virtual-time-budget={budget_ms}",
             "--dump-dom", page.resolve().as_uri()],
            capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-500:]
    return r.stdout


def _hostile_history() -> list[dict]:
    h = [{"role": "user", "content": "task " * 100}]
    for k in range(6):
        h.append({"role": REFRESH + STYLE, "content": f"reply {k} " * 50})
        h.append({"role": "user", "content": f"{REFRESH}{STYLE} observation {k} " * 40})
    return h


def test_every_value_from_the_data_is_escaped_in_the_page():
    with pytest.warns(cf.UnknownModelWarning):
        d = rep.analyze(read_request(_hostile_history(), model=REFRESH))
    page = rep.render_html(d, title=STYLE)
    assert "<meta http-equiv=\"refresh\"" not in page and "<style>body{display:none" not in page
    # one stylesheet, ours; no inline style attribute anywhere
    assert page.count("<style>") == 1 and " style=" not in page


def test_the_csp_allows_only_the_pages_own_stylesheet_by_hash():
    page = rep.render_html(rep.analyze(read_request(_hostile_history())))
    csp = re.search(r"Content-Security-Policy' content=\"([^\"]+)\"", page)
    assert csp is not None
    policy = csp.group(1)
    assert "'unsafe-inline'" not in policy and "script-src" not in policy  # default-src 'none' covers scripts
    for directive in ("default-src 'none'", "base-uri 'none'", "form-action 'none'", "style-src 'sha256-"):
        assert directive in policy


@needs_chromium
def test_injected_refresh_and_style_in_roles_do_nothing_in_chromium(tmp_path):
    out = tmp_path / "r.html"
    src = tmp_path / "h.json"
    src.write_text(json.dumps({"model": "gpt-4o", "messages": _hostile_history()}))
    r = subprocess.run([sys.executable, "-m", "contextfold", "report", str(src), "-o", str(out)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    dom = _dump_dom(out)
    assert "<title>navigated away</title>" not in dom
    assert "<title>contextfold report:" in dom
    assert '<meta http-equiv="refresh"' not in dom
    assert dom.count("<style>") == 1 and "<style>body{display:none" not in dom  # escaped text only


# -- item 18: the chart of a history far above the window -------------------------------------------

# Measures the chart in the browser (a copy of the SVG in a page that may run a script): every
# pair of text boxes that overlap, and the tick labels' text.
_MEASURE = """
<script>
const boxes = [...document.querySelectorAll('#growth text, #per-message text')].map(t => {
  const b = t.getBoundingClientRect();
  return {text: t.textContent, svg: t.closest('svg').id, cls: t.getAttribute('class') || '', x0: b.left, y0: b.top, x1: b.right, y1: b.bottom};
});
const overlaps = [];
for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
  const a = boxes[i], b = boxes[j];
  if (a.x0 < b.x1 - 1 && b.x0 < a.x1 - 1 && a.y0 < b.y1 - 1 && b.y0 < a.y1 - 1) overlaps.push([a.text, b.text]);
}
const pre = document.createElement('pre');
pre.id = 'measure';
pre.textContent = JSON.stringify({overlaps, ticks: boxes.filter(b => b.cls === 'tick' && b.svg === 'growth').map(b => b.text),
                                  axis: boxes.filter(b => b.cls === 'axis-title').map(b => b.text),
                                  limits: boxes.filter(b => b.cls === 'limit-label').map(b => b.text)});
document.body.appendChild(pre);
</script>
"""


def _far_above_window() -> rep.ReportData:
    """~2.4M estimated tokens against gpt-4o's 128k window (19x over)."""
    h = [{"role": "user", "content": "task " * 200}]
    for k in range(300):
        h.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"c{k}", "type": "function", "function": {"name": "bash", "arguments": json.dumps({"cmd": f"cat {k}"})}}]})
        h.append({"role": "tool", "tool_call_id": f"c{k}", "content": f"line {k} of a long file\n" * 1200})
    return rep.analyze(read_request({"model": "gpt-4o", "messages": h}))


def test_axis_ticks_use_one_unit_and_never_read_10000k():
    from contextfold.report.svg import _fmt, _ticks

    for top in (7_600, 12_000, 999_999, 2_400_000, 11_000_000):
        ticks = _ticks(top)
        labels = [_fmt(t, ticks[-1]) for t in ticks]
        units = {re.sub(r"[\d.,]", "", x) for x in labels[1:]}
        assert len(units) == 1, labels
        assert not any(re.fullmatch(r"\d{4,}k", x) for x in labels), labels


@needs_chromium
@pytest.mark.parametrize("size", [(1100, 1400), (800, 1400), (1600, 1400)])
def test_a_history_far_above_the_window_draws_legible_labels_at_several_sizes(tmp_path, size):
    d = _far_above_window()
    assert d.window is not None and d.breakdown.total > 10 * d.window
    page = rep.render_html(d, title="far above the window")
    # The measuring copy drops the CSP (it must run a script); the page itself has none.
    measured = re.sub(r"<meta http-equiv='Content-Security-Policy'[^>]*>", "", page).replace("</body>", _MEASURE + "</body>")
    f = tmp_path / "m.html"
    f.write_text(measured, encoding="utf-8")
    dom = _dump_dom(f, width=size[0], height=size[1])
    m = re.search(r'<pre id="measure">(.*?)</pre>', dom, re.S)
    assert m is not None, dom[-2000:]
    import html as _html

    facts = json.loads(_html.unescape(m.group(1)))
    assert facts["overlaps"] == [], facts["overlaps"]
    assert sorted(facts["axis"]) == ["prompt tokens (cumulative)", "tokens"]
    assert len(facts["limits"]) == 2 and any(x.startswith("context window") for x in facts["limits"])
    assert facts["ticks"][0] == "0" and all(x.endswith("M") for x in facts["ticks"][1:]), facts["ticks"]
    plain_page = tmp_path / "p.html"
    plain_page.write_text(page, encoding="utf-8")
    shot = tmp_path / f"far-{size[0]}.png"
    rep.screenshot(plain_page, shot, width=size[0], height=size[1])
    assert shot.stat().st_size > 10_000


def test_the_plan_table_shows_tokens_before_and_after():
    d = _far_above_window()
    page = rep.render_html(d)
    assert "tokens before" in page and "tokens after" in page and "tokens now" not in page
    r = d.plan.result
    assert r is not None and r.changed
    row = re.search(r"<td class=\"\">total</td><td class=\"n\">[\d,]+</td><td class=\"n\">([\d,]+)</td><td class=\"n\">([\d,]+)</td>", page)
    assert row is not None
    assert int(row.group(1).replace(",", "")) == d.breakdown.total
    assert int(row.group(2).replace(",", "")) == r.tokens_after


def test_a_50_mb_message_is_previewed_without_splitting_it_whole(tmp_path):
    p = tmp_path / "big.json"
    p.write_text(json.dumps([{"role": "user", "content": "word " * 10_000_000}, {"role": "assistant", "content": "ok"}]))
    code = (
        "import resource, sys, json\n"
        "from contextfold import report as rep\n"
        "from contextfold.inputs import read_request\n"
        "doc = json.loads(open(sys.argv[1]).read())\n"
        "base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "for m in doc: rep.preview(m, 90)\n"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base)\n"
    )
    r = subprocess.run([sys.executable, "-c", code, str(p)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    grown_kib = int(r.stdout.strip())
    # Splitting 50 MB into 10M words takes ~900 MB; a preview needs a few KB.
    assert grown_kib < 50_000, f"preview grew the process by {grown_kib:,} KiB"
    assert rep.preview({"role": "user", "content": "word " * 1000}, 20) == "word word word word…"
