"""RSS of a process making 10^5 calls on a growing conversation (issue #14): prints one line per
10,000 calls. The history grows by one message a call, is trimmed back (as a compactor would)
every 2,000 messages, and every call goes through the public API: Session estimate and usage,
a state round trip, estimate, shrink_json and, every 100 calls, count and prune.

    python tools/rss_curve.py [--calls 100000] [--every 10000]

Flat means: after the first samples (allocator warm-up, BPE tables), RSS stays within a few MB
while 10^5 calls run (a leak of one message's copy a call would add hundreds of MB).
"""

from __future__ import annotations

import argparse
import gc
import time

import contextfold as cf


def rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def message(i: int) -> dict:
    k = i % 3
    if k == 0:
        return {"role": "user", "content": f"step {i}: " + "please run the tests " * (1 + i % 9)}
    if k == 1:
        return {"role": "assistant", "content": None, "tool_calls": [{
            "id": f"call_{i}", "type": "function",
            "function": {"name": "bash", "arguments": '{"cmd": "pytest -x tests/ -k %d"}' % i}}]}
    return {"role": "tool", "tool_call_id": f"call_{i - 1}", "content": "ok\n" * (20 + i % 50)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=100_000)
    ap.add_argument("--every", type=int, default=10_000)
    a = ap.parse_args()
    s = cf.Session(model="gpt-4o")
    ms: list[dict] = [{"role": "system", "content": "You are a coding agent."}]
    start = time.perf_counter()
    print(f"{'calls':>8} {'messages':>8} {'rss_mb':>8} {'seconds':>8}")
    for i in range(1, a.calls + 1):
        ms.append(message(i))
        s.estimate(ms)
        if i % 3 == 0:
            s.record_usage({"prompt_tokens": 100 + 40 * len(ms)})
        cf.estimate(ms[-20:])
        cf.shrink_json(ms[-1].get("content") or "{}", max_chars=64)
        if i % 100 == 0:
            cf.count(ms[-50:], model="gpt-4o")
            cf.prune(ms, protect_tail_tokens=2_000)
            s = cf.Session.from_state(s.to_state())
        if len(ms) > 2_000:
            ms = ms[:1] + ms[-200:]
        if i % a.every == 0 or i == 1:
            gc.collect()
            print(f"{i:>8} {len(ms):>8} {rss_mb():>8.1f} {time.perf_counter() - start:>8.1f}", flush=True)


if __name__ == "__main__":
    main()
