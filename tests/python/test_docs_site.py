"""The documentation site builds with `mkdocs build --strict`: a broken link, a missing page in
the navigation or an API reference that no longer resolves fails the suite."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_the_docs_site_builds_strictly(tmp_path: Path):
    pytest.importorskip("mkdocs", reason="the docs toolchain: pip install '.[docs]'")
    pytest.importorskip("mkdocstrings_handlers.python", reason="the docs toolchain: pip install '.[docs]'")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(ROOT / "mkdocs.yml"), "-d", str(tmp_path / "site")],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
        env={"NO_MKDOCS_2_WARNING": "1", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr[-4000:]
    # Each guide and the API reference were rendered.
    for page in ("index.html", "guides/compaction/index.html", "reference/api/index.html"):
        assert (tmp_path / "site" / page).is_file(), page
    assert "class=\"doc doc-object" in (tmp_path / "site" / "reference/api/index.html").read_text()
