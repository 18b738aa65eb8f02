"""Copy the deterministic subset of ../shared/data that the test suite carries in tests/data.

    python tools/make_test_data.py

The selection is rule-based (no randomness) so re-running it reproduces the same files; it
keeps each source's LICENSE next to its data. Sizes are printed at the end: keep the total to
a few MB.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT.parent / "shared" / "data"
DST = ROOT / "tests" / "data"
BLOB = re.compile(r"<<BLOB:([0-9a-f]{40})>>")

# Per (provider, api) group: the largest request line kept and how many requests at most.
# OpenAI chat requests are kept nearly whole: the exact-count floors are pinned on them.
LIMITS = {
    ("openai", "chat.completions"): (30_000, 10_000),
    ("azure", "chat.completions"): (30_000, 10_000),
    ("anthropic", "messages"): (8_000, 60),
    ("google", "generateContent"): (8_000, 40),
    ("openai", "responses"): (8_000, 40),
}
DEFAULT_LIMIT = (6_000, 8)
# Blobs bigger than this are left out (their requests too), except the one multi-MB image that
# the "one big image stays within 2x" floor needs.
MAX_BLOB = 400_000
KEEP_BIG_BLOBS = {"aaf463e288ce01716e1b64ccae4841b459eed048"}

SWE_TRAJECTORIES = 16
TAU_CONVERSATIONS = 24


def copy_requests(name: str) -> None:
    src = SRC / name
    dst = DST / name
    (dst / "blobs").mkdir(parents=True, exist_ok=True)
    shutil.copy(src / "LICENSE", dst / "LICENSE")
    counts: dict[tuple[str, str], int] = {}
    kept = []
    for line in (src / "requests.jsonl").open():
        r = json.loads(line)
        if r.get("usage_prompt_tokens") is None or r.get("complete_context") is False:
            continue
        key = (r["provider"], r["api"])
        max_len, max_n = LIMITS.get(key, DEFAULT_LIMIT)
        blobs = BLOB.findall(line)
        big = [b for b in blobs if (src / "blobs" / f"{b}.txt").stat().st_size > MAX_BLOB]
        if any(b not in KEEP_BIG_BLOBS for b in big):
            continue
        if len(line) > max_len and not big:
            continue
        if counts.get(key, 0) >= max_n and not big:
            continue
        counts[key] = counts.get(key, 0) + 1
        kept.append(line)
        for b in blobs:
            shutil.copy(src / "blobs" / f"{b}.txt", dst / "blobs" / f"{b}.txt")
    (dst / "requests.jsonl").write_text("".join(kept))


def copy_conversations(name: str, n: int, license_name: str, order_by_size: bool) -> None:
    src = SRC / name
    dst = DST / name
    dst.mkdir(parents=True, exist_ok=True)
    shutil.copy(src / license_name, dst / license_name)
    lines = (src / "conversations.jsonl").read_text().splitlines(keepends=True)
    if order_by_size:
        # Trajectories spread over the lower half of the size distribution: varied, yet small.
        ranked = sorted(lines, key=len)
        step = max(1, len(ranked) // (2 * n))
        lines = ranked[len(ranked) // 8 :: step][:n]
    else:
        lines = lines[:n]
    (dst / "conversations.jsonl").write_text("".join(lines))


def main() -> None:
    if not SRC.exists():
        sys.exit(f"no shared data at {SRC}")
    if DST.exists():
        for p in DST.iterdir():
            if p.is_dir():
                shutil.rmtree(p)
    copy_requests("crewai")
    copy_requests("pydantic-ai")
    copy_conversations("mini-swe-agent-gemini3", SWE_TRAJECTORIES, "LICENSE.md", order_by_size=True)
    copy_conversations("tau-bench-airline", TAU_CONVERSATIONS, "LICENSE", order_by_size=False)
    total = 0
    for p in sorted(DST.rglob("*")):
        if p.is_file():
            total += p.stat().st_size
    print(f"tests/data: {total / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
