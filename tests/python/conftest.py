"""Shared fixtures: an exact o200k counter for the floors that compare against real tokens."""

from __future__ import annotations

import sys as _sys
from pathlib import Path as _Path

# The support modules (transcripts, the replay server, shapes) live in tests/support.
_sys.path.insert(0, str(_Path(__file__).resolve().parent.parent / "support"))

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import contextfold
from contextfold.fold_sources import forget_process_sources


@pytest.fixture(autouse=True)
def _no_spans_of_other_tests() -> None:
    """Each test starts with the process's span memory empty (``fold_sources``): a Compactor of
    one test does not read the turns an earlier test's Compactor filed for an equal history; and
    the process's content store empty (the originals of the ids earlier tests' Compactors named)."""
    forget_process_sources()
    contextfold.default_content_store().clear()


@pytest.fixture(scope="session")
def o200k():
    """Exact o200k_base token count of a string (special-token text counted as text)."""
    return lambda s: contextfold.count_text(s, encoding="o200k_base")


# -- one line at the end: which parts of the suite did not run, and why ----------------------------

#: What a skip needs, read off its reason (first match wins), and what to do about it.
_NEEDS = (
    ("shared/data", "../shared/data (the full transcript sets; see tests/transcripts.py)"),
    ("data sets absent", "../shared/data (the full transcript sets; see tests/transcripts.py)"),
    ("chromium", "chromium (apt-get install chromium)"),
    ("redis-server", "redis-server (apt-get install redis-server)"),
    ("redis-py", "redis-py (pip install '.[redis]')"),
    ("root", "a user who cannot write everywhere (not root)"),
)


def _need(reason: str) -> str:
    low = reason.lower()
    for key, need in _NEEDS:
        if key in low:
            return need
    if any(k in low for k in ("not installed", "pip install", "could not import")):
        # An optional package: "could not import 'x'" or a reason naming the extra.
        return "optional packages (" + reason.strip()[:60] + ")"
    return reason.strip()[:80]


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter, exitstatus, config):  # type: ignore[no-untyped-def]
    """After the run, one line naming what was skipped and what it needs."""
    skipped = terminalreporter.stats.get("skipped", [])
    if not skipped:
        return
    counts: dict[str, int] = {}
    for rep in skipped:
        longrepr = getattr(rep, "longrepr", None)
        reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
        reason = reason.removeprefix("Skipped: ")
        need = _need(reason)
        counts[need] = counts.get(need, 0) + 1
    parts = [f"{n}: {need}" for need, n in sorted(counts.items(), key=lambda kv: -kv[1])]
    terminalreporter.write_line(f"skipped {len(skipped)}: " + "; ".join(parts))


def start_redis_server(workdir: Path) -> tuple[str, "subprocess.Popen[bytes]"]:
    """A real redis-server on a free loopback port (no persistence): its URL and process.
    Skips when Debian's ``redis-server`` is not installed (``.ci/run`` installs it)."""
    binary = shutil.which("redis-server")
    if binary is None:
        pytest.skip("redis-server not installed (Debian: apt-get install redis-server)")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    proc = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", str(workdir)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 10
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return f"redis://127.0.0.1:{port}/0", proc
        except OSError:
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                pytest.fail("redis-server did not start")
            time.sleep(0.02)


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One real redis-server for the run; tests keep to their own key prefixes."""
    url, proc = start_redis_server(tmp_path_factory.mktemp("redis"))
    yield url
    proc.terminate()
    proc.wait(timeout=10)
