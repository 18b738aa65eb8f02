"""The hand-written stubs of the extension match the built module (mypy.stubtest)."""

from __future__ import annotations

import subprocess
import sys

import pytest


def test_core_stubs_match_the_extension():
    pytest.importorskip("mypy.stubtest")
    r = subprocess.run([sys.executable, "-m", "mypy.stubtest", "contextfold._core"], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
