"""Dump the extractive digests and identifier indexes of many spans, to compare two builds
byte for byte.

    python benches/dump_digests.py OUT.jsonl            # write one line per (span, budget, call)
    python benches/dump_digests.py OUT.jsonl --compare BEFORE.jsonl

Spans: every real conversation of ``../shared/data`` (tau-bench airline dialogues, SWE
trajectories; whole and their middles), every recorded request's messages (pydantic-ai,
crewai; in their own wire format), and the middle of the synthetic 10k-message history that
``benches/bench_compact.py`` folds. Each span is digested at several budgets, with and without
a previous digest (iterative compaction) and a focus string; its identifier index too.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests" / "support"))

import contextfold as cf  # noqa: E402
from contextfold import _core  # noqa: E402
from synthetic import synthetic_history  # noqa: E402
from transcripts import SHARED, load_conversations, load_requests, shared_available  # noqa: E402


def spans() -> list[tuple[str, list, str]]:
    """(name, messages, provider) of every span to digest."""
    out: list[tuple[str, list, str]] = []
    if shared_available():
        for name in ("tau-bench-airline", "mini-swe-agent-gemini3"):
            for i, conv in enumerate(load_conversations(SHARED, name)):
                msgs = conv["messages"]
                out.append((f"{name}/{i}", msgs, "openai"))
                n = len(msgs)
                if n > 8:
                    out.append((f"{name}/{i}/middle", msgs[2 : n - n // 4], "openai"))
        for r in load_requests(SHARED, with_usage=False):
            if len(r.messages) >= 2:
                out.append((f"req/{r.dataset}/{r.source}", r.messages, r.profile))
    h = synthetic_history(10_000)
    out.append(("synthetic/10k/middle", h[1 : 6_700], "openai"))
    out.append(("synthetic/1k", synthetic_history(1_000), "openai"))
    return out


def budgets(msgs: list, provider: str) -> list[int]:
    try:
        size = cf.estimate(msgs, provider=provider)
    except Exception:  # noqa: BLE001 - a span the estimator rejects is digested at fixed budgets
        size = 4_000
    return sorted({64, 300, 1_200, max(256, size // 30), max(256, size // 10)})


def dump(path: str) -> None:
    t0 = time.perf_counter()
    n = 0
    with open(path, "w") as f:
        for name, msgs, provider in spans():
            prev = None
            for b in budgets(msgs, provider):
                try:
                    d = _core.extractive_digest(msgs, max_tokens=b, provider=provider)
                    half = len(msgs) // 2
                    first = _core.extractive_digest(msgs[:half], max_tokens=b, provider=provider)
                    second = _core.extractive_digest(msgs[half:], max_tokens=b, provider=provider, previous=first)
                    focus = _core.extractive_digest(
                        msgs, max_tokens=b, provider=provider, instructions="keep the file paths and errors"
                    )
                    idx = _core.identifier_index(msgs, max_tokens=b, provider=provider, previous=prev)
                except Exception as e:  # noqa: BLE001 - the error is part of the output
                    d = first = second = focus = idx = f"raised {type(e).__name__}: {e}"
                rec = {"span": name, "budget": b, "digest": d, "second": second, "focus": focus, "index": idx}
                f.write(json.dumps(rec) + "\n")
                prev = d if not d.startswith("raised") else None
                n += 1
    print(f"{n} records from {path} in {time.perf_counter() - t0:.1f} s")


def compare(new: str, old: str) -> int:
    a = Path(new).read_text().splitlines()
    b = Path(old).read_text().splitlines()
    bad = 0
    for x, y in zip(a, b):
        if x != y:
            bad += 1
            if bad <= 5:
                rx, ry = json.loads(x), json.loads(y)
                for k in rx:
                    if rx[k] != ry[k]:
                        print(f"DIFF {rx['span']} budget={rx['budget']} field={k}")
                        break
    if len(a) != len(b):
        print(f"record counts differ: {len(a)} vs {len(b)}")
        bad += 1
    digest = hashlib.sha256(Path(new).read_bytes()).hexdigest()[:16]
    print(f"{len(a)} records, {bad} differ (sha256 {digest})")
    return 1 if bad else 0


if __name__ == "__main__":
    print("contextfold from", cf.__file__, file=sys.stderr)
    dump(sys.argv[1])
    if len(sys.argv) > 3 and sys.argv[2] == "--compare":
        sys.exit(compare(sys.argv[1], sys.argv[3]))
