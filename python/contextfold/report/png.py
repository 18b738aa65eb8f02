"""The growth chart as a PNG, screenshotted by a headless Chromium."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from contextfold.breakdown import KINDS
from contextfold.report.analysis import ReportData
from contextfold.report.html import _CSS, _legend
from contextfold.report.svg import growth_svg


class BrowserMissing(RuntimeError):
    """No headless Chromium / Chrome on PATH (needed by ``write_png``)."""


class BrowserFailed(BrowserMissing):
    """The browser started but gave no screenshot (it exited non-zero, timed out, or exited 0
    without writing the PNG): for the command line, as missing as no browser at all."""


def find_browser() -> str | None:
    """A headless-capable Chromium / Chrome: ``$CONTEXTFOLD_CHROMIUM`` or the first on PATH."""
    env = os.environ.get("CONTEXTFOLD_CHROMIUM")
    if env:
        return env
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def screenshot(html_path: Path, png_path: Path, *, width: int, height: int, timeout: float = 120.0) -> None:
    """Render a local HTML file in headless Chromium and save a ``width`` x ``height`` PNG."""
    browser = find_browser()
    if browser is None:
        raise BrowserMissing("no chromium on PATH (Debian: apt-get install chromium; or set CONTEXTFOLD_CHROMIUM)")
    with tempfile.TemporaryDirectory() as profile:
        # The browser writes into the temporary directory: a PNG there is one this run made (an
        # older file at png_path would pass for one), and png_path is replaced only by a whole one.
        shot = Path(profile) / "shot.png"
        cmd = [
            browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
            "--disable-dev-shm-usage", f"--user-data-dir={Path(profile) / 'profile'}", f"--window-size={width},{height}",
            f"--screenshot={shot}", html_path.resolve().as_uri(),
        ]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except OSError as e:
            # A CONTEXTFOLD_CHROMIUM that does not exist or cannot run.
            raise BrowserMissing(f"cannot run the browser {browser!r}: {e.strerror or e}") from e
        except subprocess.TimeoutExpired:
            raise BrowserFailed(f"the browser {browser!r} wrote no screenshot within {timeout:g} s") from None
        if r.returncode != 0 or not shot.is_file() or shot.stat().st_size == 0:
            # One line: the browser's last word on stderr, if it said any.
            last = next((line.strip() for line in reversed((r.stderr or "").splitlines()) if line.strip()), "")
            raise BrowserFailed(
                f"the browser {browser!r} exited {r.returncode} without writing the screenshot"
                + (f": {last[:300]}" if last else ""))
        shutil.move(str(shot), png_path)


def write_png(d: ReportData, png_path: Path) -> None:
    """The growth chart (with its legend) as a PNG, rendered by headless Chromium."""
    page = (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><style>{_CSS}body{{margin:8px;max-width:none}}</style></head><body>"
        + _legend([(k.replace("_", " "), k) for k in KINDS if d.breakdown.by_kind.get(k)])
        + growth_svg(d)
        + "</body></html>"
    )
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "chart.html"
        src.write_text(page, encoding="utf-8")
        screenshot(src, png_path, width=1020, height=430)
