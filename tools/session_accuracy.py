"""Accuracy of contextfold.Session on the SWE trajectories, as README's sessions table reports it.

Call k of each trajectory sent messages[:n_messages]; the usage of call k-1 is recorded before
call k is estimated. Prints median / p90 / p99 of |estimate / real - 1| for later calls and the
first calls (no usage yet) separately, for the default sampled text estimate and for
text_encoding="o200k_base".

    python tools/session_accuracy.py [DATA_ROOT]   # default: ../shared/data, else tests/data
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "support"))

import contextfold as cf
from transcripts import LOCAL, SHARED, session_errors, shared_available


def quantile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def errors(root: Path, **kw) -> tuple[list[float], list[float]]:
    return session_errors(cf, root, **kw)


def main() -> None:
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else (SHARED if shared_available() else LOCAL)
    print(f"{root}\n")
    print("| mode | later calls | median | p90 | p99 | first calls: n, median / max |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for label, kw in (("sampled text (default)", {}), ('text_encoding="o200k_base"', {"text_encoding": "o200k_base"})):
        first, later = errors(root, **kw)
        print(
            f"| {label} | {len(later):,} | {statistics.median(later):.2%} | {quantile(later, 0.9):.2%} "
            f"| {quantile(later, 0.99):.2%} | {len(first)}, {statistics.median(first):.1%} / {max(first):.1%} |"
        )


if __name__ == "__main__":
    main()
