"""Every ```python block of the README and the docs site runs as written.

A page's blocks run top to bottom in one fresh interpreter started from the repository root, as
a reader pasting them in order would run them (a later block may use a name an earlier block of
the same page defined). Shell commands (```bash) and output (```text) are not run here: the
README's two set-up commands are what `.ci/run` itself runs.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from conftest import start_redis_server

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^```python[^\n]*\n(.*?)^```", re.M | re.S)


def pages() -> list[Path]:
    found = [ROOT / "README.md"]
    docs = ROOT / "docs"
    if docs.is_dir():
        found += sorted(docs.rglob("*.md"))
    return found


def blocks(page: Path) -> list[str]:
    return FENCE.findall(page.read_text(encoding="utf-8"))


PAGES = [p for p in pages() if blocks(p)]


@contextmanager
def redis_server(workdir: Path) -> Iterator[str]:
    """A real redis-server for the pages whose examples read REDIS_URL."""
    url, proc = start_redis_server(workdir)
    try:
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_every_python_block_of_the_page_runs_as_written(page: Path, tmp_path: Path):
    parts = blocks(page)
    script = "\n\n".join(f"# --- block {k + 1} of {page.name}\n{code}" for k, code in enumerate(parts))
    path = tmp_path / f"{page.stem}_examples.py"
    path.write_text(script, encoding="utf-8")
    env = dict(os.environ)
    # Warnings the examples raise would surface as a failure of the example, as under pytest.
    env["PYTHONWARNINGS"] = "error"
    with redis_server(tmp_path) if "REDIS_URL" in script else _nothing() as url:
        if url:
            env["REDIS_URL"] = url
        done = subprocess.run(
            [sys.executable, str(path)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
        )
    assert done.returncode == 0, f"{page.relative_to(ROOT)}: an example failed\n{done.stderr[-4000:]}"


@contextmanager
def _nothing() -> Iterator[str]:
    yield ""
