"""`contextfold bench`: runs the side-by-side benchmarks (benches/bench_peers.py, pytest-benchmark)
and prints each group's medians with their ratio to contextfold's.

A development command: the benchmarks and their fixtures live in a source checkout, not in the
installed package. It finds them under the current directory or in ``--benches DIR``; the
package never guesses where a checkout is from its own install path."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: The contextfold implementation each operation's ratios are relative to.
BASELINES = {"count": "contextfold estimate", "trim": "contextfold prune + tail walk", "per-turn growth": "contextfold Session.estimate"}


def find_benches(explicit: Path | None = None) -> Path | None:
    """``benches/`` of a source checkout holding ``bench_peers.py``: ``explicit``, else
    ``./benches`` (run from the checkout's root)."""
    candidates = [explicit] if explicit else [Path.cwd() / "benches"]
    for c in candidates:
        if c is not None and (c / "bench_peers.py").exists():
            return c
    return None


def run(*, quick: bool, notice: Callable[[str], None], benches: Path | None = None) -> dict[str, Any]:
    """Run the benchmarks in a child pytest; returns ``{"groups": {group: {impl: median_s}},
    "skipped": [reasons], "machine": {...}}``."""
    where = find_benches(benches)
    if where is None:
        raise FileNotFoundError("benches/bench_peers.py not found: `contextfold bench` is a development command: run it from the root of a source checkout of contextfold, or pass --benches DIR")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "bench.json"
        env = dict(os.environ, CONTEXTFOLD_BENCH_QUICK="1" if quick else "0")
        cmd = [sys.executable, "-m", "pytest", str(where / "bench_peers.py"), "--benchmark-enable", f"--benchmark-json={out}",
               "-q", "-rs", "-p", "no:cacheprovider", "--benchmark-min-rounds=3", "-o", "addopts="]
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=where.parent)
        skipped = [line.split(": ", 1)[-1] for line in r.stdout.splitlines() if line.startswith("SKIPPED")]
        for s in dict.fromkeys(skipped):
            notice(f"skipped: {s}")
        if r.returncode not in (0, 5) or not out.exists():
            raise RuntimeError(f"benchmarks failed (exit {r.returncode}):\n{r.stdout[-3000:]}\n{r.stderr[-2000:]}")
        data = json.loads(out.read_text())
    groups: dict[str, dict[str, float]] = {}
    for b in data["benchmarks"]:
        impl = b["params"]["impl"]
        groups.setdefault(b["group"], {})[impl] = b["stats"]["median"]
    return {"groups": groups, "skipped": list(dict.fromkeys(skipped)), "machine": data.get("machine_info", {})}


def _fmt_time(s: float) -> str:
    if s >= 1:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.2f} ms"
    return f"{s * 1e6:.1f} µs"


def markdown(result: dict[str, Any]) -> str:
    """The same table as Markdown (for the README)."""
    lines = ["| operation / workload | implementation | median | vs contextfold |", "| --- | --- | ---: | ---: |"]
    for group, impls in result["groups"].items():
        base = impls.get(BASELINES.get(group.split("/")[0], ""))
        for k, (impl, med) in enumerate(sorted(impls.items(), key=lambda kv: kv[1])):
            ratio = f"{med / base:,.2f}x" if base else ""
            lines.append(f"| {group if k == 0 else ''} | {impl} | {_fmt_time(med)} | {ratio} |")
    return "\n".join(lines)


def print_table(result: dict[str, Any], console: Any) -> None:
    """One table per group: median time and ratio to the contextfold baseline of the group."""
    from rich.table import Table

    t = Table(title="median time per call, and ratio to contextfold (x slower: > 1)", title_justify="left")
    for col in ("operation / workload", "implementation", "median", "vs contextfold"):
        t.add_column(col, justify="right" if col in ("median", "vs contextfold") else "left", no_wrap=True)
    for group, impls in result["groups"].items():
        base = impls.get(BASELINES.get(group.split("/")[0], ""))
        for k, (impl, med) in enumerate(sorted(impls.items(), key=lambda kv: kv[1])):
            ratio = f"{med / base:,.2f}x" if base else ""
            t.add_row(group if k == 0 else "", impl, _fmt_time(med), ratio, end_section=k == len(impls) - 1)
    console.print(t)
    m = result.get("machine", {})
    if m:
        console.print(f"machine: {m.get('cpu', {}).get('brand_raw', '?')}, {m.get('cpu', {}).get('count', '?')} cores; python {m.get('python_version', '?')}")
