"""Types: the hand-written stubs match the built module (mypy.stubtest) and the package is mypy-strict clean."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


def test_core_stubs_match_the_extension():
    pytest.importorskip("mypy.stubtest")
    r = subprocess.run([sys.executable, "-m", "mypy.stubtest", "contextfold._core"], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_package_type_checks_under_mypy_strict():
    pytest.importorskip("mypy")
    package = Path(__file__).resolve().parents[2] / "python" / "contextfold"
    if not package.is_dir():
        pytest.skip(f"package sources not found at {package}")
    r = subprocess.run([sys.executable, "-m", "mypy", "--strict", str(package)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
