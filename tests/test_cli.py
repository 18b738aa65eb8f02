"""The README's main job: `contextfold report` on the bundled trajectory."""

from __future__ import annotations

from contextfold.cli import main
from transcripts import ROOT


def test_report_on_the_bundled_example(capsys):
    assert main(["report", str(ROOT / "examples" / "swe-trajectory.json")]) == 0
    out = capsys.readouterr().out
    assert "estimated prompt tokens" in out
    assert "compaction plan" in out and "protected tail" in out
    assert "recorded calls" in out


def test_report_names_the_bad_message(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text('[{"role": "user", "content": "ok"}, {"role": "user", "content": 3}]')
    assert main(["report", str(bad)]) == 2
    assert "message 1" in capsys.readouterr().err
