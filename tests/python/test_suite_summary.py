"""The suite says at its end, in one line, which parts it skipped and what they need."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path


def test_the_last_line_of_a_run_names_what_was_skipped_and_why(tmp_path):
    shutil.copy(Path(__file__).parent / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "test_parts.py").write_text(
        "import pytest\n"
        "def test_ok():\n    pass\n"
        "@pytest.mark.skip(reason='full data sets absent (../shared/data): subset only')\n"
        "def test_a():\n    pass\n"
        "@pytest.mark.skip(reason='full data sets absent (../shared/data): subset only')\n"
        "def test_b():\n    pass\n"
        "@pytest.mark.skip(reason='chromium not installed (Debian: apt-get install chromium)')\n"
        "def test_c():\n    pass\n"
        "@pytest.mark.skip(reason='redis-server not installed (Debian: apt-get install redis-server)')\n"
        "def test_d():\n    pass\n"
    )
    r = subprocess.run([sys.executable, "-m", "pytest", str(tmp_path), "-q", "-p", "no:cacheprovider", "-o", "addopts=",
                        "--rootdir", str(tmp_path)], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    lines = [x for x in r.stdout.splitlines() if x.strip()]
    summary = next(x for x in lines if x.startswith("skipped 4:"))
    assert "2: ../shared/data" in summary
    assert "1: chromium (apt-get install chromium)" in summary
    assert "1: redis-server (apt-get install redis-server)" in summary
    # It comes after pytest's own summary: the end of the run.
    assert lines.index(summary) >= len(lines) - 2
