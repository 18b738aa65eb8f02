"""How much of the previous request stays byte-identical after pruning, turn after turn.

    python tools/prefix_stability.py [--local]

Replays histories turn by turn, prunes each request with and without cache-aware blocks, and measures the common byte prefix of
consecutive pruned requests (compact JSON of the message list). A provider's prompt cache
only hits on that prefix.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "support"))

import contextfold as cf  # noqa: E402
from transcripts import LOCAL, SHARED, load_conversations  # noqa: E402


def common_prefix(a: bytes, b: bytes) -> int:
    n = min(len(a), len(b))
    lo, hi = 0, n
    while lo < hi:  # binary search on equality of prefixes
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def measure(msgs: list, ends: list[int], *, provider: str, budget: int, block: int) -> list[tuple[float, int]]:
    """(share of the previous request reused, bytes reused) for each request after the first."""
    prev = None
    shares = []
    for n in ends:
        out = cf.prune(msgs[:n], protect_tail_tokens=budget, provider=provider,
                       tool_result_max_tokens=50, cache_block_tokens=block)
        body = json.dumps(out, separators=(",", ":"), ensure_ascii=False).encode()
        if prev is not None:
            same = common_prefix(prev, body)
            shares.append((same / len(prev), same))
        prev = body
    return shares


def report(title: str, msgs: list, ends: list[int], provider: str, budget: int, block: int) -> None:
    print(f"{title}: {len(ends)} consecutive requests, tail budget {budget:,} tokens")
    for label, b in (("plain prune", 0), (f"cache-aware ({block:,}-token blocks)", block)):
        r = measure(msgs, ends, provider=provider, budget=budget, block=b)
        s = [x for x, _ in r]
        full = sum(1 for x in s if x > 0.999)
        print(f"  {label:34s} mean reused prefix {statistics.mean(s):6.1%} ({statistics.mean(n for _, n in r):,.0f} bytes)  "
              f"median {statistics.median(s):6.1%}  requests reusing the whole previous prefix: {full}/{len(s)}")


def main() -> None:
    root = LOCAL if "--local" in sys.argv else SHARED
    # Real tool dialogues: the longest tau-bench conversations, one request per assistant turn.
    tau = sorted(load_conversations(root, "tau-bench-airline"), key=lambda c: -len(c["messages"]))
    msgs = [m for c in tau[:3] for m in (c["messages"] if c is tau[0] else c["messages"][1:])]
    ends = [i for i, m in enumerate(msgs) if m["role"] == "assistant"][:100]
    report("tau-bench (3 longest dialogues chained)", msgs, ends, "openai", 1_500, 1_000)
    # A real SWE trajectory (text protocol: observations are plain user messages, so prune has no
    # tool results to edit and both modes keep the whole prefix: shown for completeness).
    swe = max(load_conversations(root, "mini-swe-agent-gemini3"), key=lambda c: len(c["messages"]))["messages"]
    ends = [i + 1 for i, m in enumerate(swe) if m["role"] == "user"][-100:]
    report("SWE trajectory (longest, text protocol)", swe, ends, "gemini", 8_000, 8_000)
    # The synthetic agent history: 100 turns of tool fan-out with large outputs.
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benches"))
    from synthetic import synthetic_history

    syn = synthetic_history(800, images=0)
    ends = [i for i, m in enumerate(syn) if m["role"] == "user"][-100:]
    report("synthetic agent history", syn, ends, "openai", 20_000, 20_000)


if __name__ == "__main__":
    main()
