"""The first estimate of a process, with and without ``contextfold.preload``, in fresh
interpreters (the vocabulary is built once per process, so nothing can be timed twice in one).

    python benches/first_call.py [--runs 5]

Per model, the median over ``--runs`` fresh processes of:

- the first ``estimate`` of a small request (a system prompt, a user turn, one tool) in a cold
  process, and the same after ``preload(model=...)`` (the preload's own time beside it);
- what the process's resident size grew by over that first estimate (Linux), the vocabulary
  the estimate counts with included;
- how long the main thread stalls while a second thread makes that first estimate, against
  while it runs ``preload``: the longest gap between two steps of a Python loop on the main
  thread (the estimate builds the vocabulary holding the GIL; ``preload`` releases it).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

FIRST_CALL = """
import json, time, contextfold as cf
def resident():
    # (Linux: the resident set in kB, as the kernel counts it.)
    return next(int(l.split()[1]) for l in open("/proc/self/smaps_rollup") if l.startswith("Rss:"))
kw = {kw!r}
history = [{{"role": "system", "content": "You are a helpful assistant."}}, {{"role": "user", "content": "hi"}}]
tools = [{{"type": "function", "function": {{"name": "f", "description": "d", "parameters": {{"type": "object"}}}}}}]
r0 = resident()
t0 = time.perf_counter()
if {preload!r}:
    cf.preload(**kw)
t1 = time.perf_counter()
cf.estimate(history, tools=tools, **kw)
t2 = time.perf_counter()
print(json.dumps({{"preload": t1 - t0, "first": t2 - t1, "grown": (resident() - r0) / 1000}}))
"""

STALL = """
import json, threading, time, contextfold as cf
kw = {kw!r}
history = [{{"role": "system", "content": "You are a helpful assistant."}}, {{"role": "user", "content": "hi"}}]
work = (lambda: cf.preload(**kw)) if {preload!r} else (lambda: cf.estimate(history, **kw))
go = threading.Event()
# (The thread waits for the loop to run: a thread that starts working at once takes the GIL
# while `start()` waits for it, and its stall would fall before the loop.)
t = threading.Thread(target=lambda: (go.wait(), work()))
t.start()
go.set()
gap, last = 0.0, time.perf_counter()
while t.is_alive():
    now = time.perf_counter()
    gap, last = max(gap, now - last), now
t.join()
# (A thread that held the GIL to its end stalls the loop's last step, seen only here.)
gap = max(gap, time.perf_counter() - last)
print(json.dumps({{"stall": gap}}))
"""


def fresh(code: str) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300)
    return json.loads(out.stdout.strip().splitlines()[-1])


def median_of(template: str, runs: int, key: str, **fields: object) -> float:
    return statistics.median(fresh(template.format(**fields))[key] for _ in range(runs))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=5)
    args = p.parse_args()
    print("| model | first estimate, cold | resident size grown by it | preload | first estimate after it "
          "| main thread stalled: estimate in a thread | preload in a thread |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for kw in ({"model": "gpt-4o"}, {"model": "gpt-4"}, {"provider": "anthropic", "model": "claude-sonnet-4-5"}):
        colds = [fresh(FIRST_CALL.format(kw=kw, preload=False)) for _ in range(args.runs)]
        cold = statistics.median(c["first"] for c in colds)
        grown = statistics.median(c["grown"] for c in colds)
        warm = [fresh(FIRST_CALL.format(kw=kw, preload=True)) for _ in range(args.runs)]
        pre = statistics.median(w["preload"] for w in warm)
        after = statistics.median(w["first"] for w in warm)
        stall_est = median_of(STALL, args.runs, "stall", kw=kw, preload=False)
        stall_pre = median_of(STALL, args.runs, "stall", kw=kw, preload=True)
        print(f"| {kw['model']} | {cold * 1e3:.1f} ms | {grown:.0f} MB | {pre * 1e3:.1f} ms | {after * 1e3:.2f} ms "
              f"| {stall_est * 1e3:.1f} ms | {stall_pre * 1e3:.1f} ms |")


if __name__ == "__main__":
    main()
