"""What the continuation needed (`tools/future_report.py`): facts read off what each real agent
wrote after a cut, not written by hand, so they are not biased toward the folded span the way
the probe sets are (their facts were checked to sit there)."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

from future_report import needed  # noqa: E402
from transcripts import shared_available  # noqa: E402


@functools.cache
def _report() -> dict[str, Any]:
    """`future_report.py --json` over the first 60 conversations of each data set."""
    out = subprocess.run([sys.executable, str(ROOT / "tools" / "future_report.py"), "--json", "--limit", "60"],
                         capture_output=True, text=True, check=True, cwd=ROOT)
    report: dict[str, Any] = json.loads(out.stdout)
    return report


def _call(i: int, name: str, args: str) -> dict:
    return {"role": "assistant", "content": None,
            "tool_calls": [{"id": f"c{i}", "type": "function", "function": {"name": name, "arguments": args}}]}


def _result(i: int, text: str) -> dict:
    return {"role": "tool", "tool_call_id": f"c{i}", "content": text}


def test_a_fact_is_a_token_the_agent_wrote_later_that_only_the_history_showed() -> None:
    history = [
        {"role": "system", "content": "You are an airline agent. Policy ref POL-2024."},
        {"role": "user", "content": "Cancel reservation XEHM4B please, user mia_li_3668."},
        _call(1, "get_user_details", '{"user_id": "mia_li_3668"}'),
        _result(1, '{"reservations": ["XEHM4B", "3EMQJ6"], "payment": "credit_card_4421"}'),
        {"role": "assistant", "content": "You have XEHM4B and 3EMQJ6."},
        {"role": "user", "content": "Also the other one."},
    ]
    future = [
        _call(2, "get_reservation_details", '{"reservation_id": "3EMQJ6"}'),
        _result(2, '{"flight": "HAT229", "paid_with": "credit_card_4421"}'),
        # HAT229 was shown by the continuation first; XEHM4B and mia_li_3668 are the task's
        # (every strategy keeps the head); "other" and "one" are not specific tokens.
        {"role": "assistant", "content": "Flight HAT229 of XEHM4B's companion 3EMQJ6 refunds to "
                                         "credit_card_4421 for mia_li_3668; the other one too."},
    ]
    head = "\n".join(str(m["content"]) for m in history[:2])
    assert needed(history, future, head) == ["3EMQJ6"]


def test_the_compactor_keeps_more_of_what_the_continuation_needed_than_the_naive_cut() -> None:
    """At the naive cut's budget, over every data set (the first 60 conversations of each in
    ../shared/data, the subset in tests/data without it): the Compactor keeps at least 1.15x the
    facts the naive cut keeps (measured over all 269 conversations: 1.24x tau-bench, 1.26x SWE;
    the first 60 of each: 1.28x and 1.30x; the subset: 1.38x and 1.41x), never raises where what
    it must keep fits (the system prompt, tools, task and last user turn, and a marker between
    two user turns: one tau-bench cut of the first 60 is 2 tokens short of it, where the naive
    cut drops the last user turn), and keeps fewer than the naive cut at under a fifth of the
    cuts."""
    report = _report()
    assert set(report) == {"tau-bench-airline", "mini-swe-agent-gemini3"}
    for name, t in report.items():
        assert t["cuts"] >= 20 and t["facts"] >= 200, (name, t)
        assert t["raised where the floor fits"] == 0 and t["raised"] <= 1, (name, t)
        assert t["compactor"] >= 1.15 * t["naive"], (name, t)
        assert t["fewer"] < 0.2 * t["cuts"], (name, t)
        assert t["budget_used_median"] >= 0.95, (name, t)


def test_the_code_names_a_swe_agent_used_stay_in_the_index() -> None:
    """The names a SWE agent wrote next (a class it edits, a field it sets) are kept over the
    naive cut by a margin that needs the identifier index to rank the code symbols the run used
    with its paths: ranked after every other kind, the file names of one `ls` took their
    place. Measured at the naive budget, the build before -> this rule: the first 60 runs of
    ../shared/data 1.355x -> 1.461x the naive cut's facts, the subset in tests/data 1.587x ->
    1.714x."""
    t = _report()["mini-swe-agent-gemini3"]
    floor = 1.42 if shared_available() else 1.65
    assert t["compactor"] >= floor * t["naive"], t
