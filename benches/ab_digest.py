"""A/B of two builds' extractive digest in one process, on the same objects: paired calls of
``extractive_digest`` over the middle of the synthetic 10,000-message history (what
``bench_compact.py`` folds, at its summary size), alternating which build goes first.

    python benches/ab_digest.py BEFORE.so AFTER.so [PAIRS] [--swe]

Each ``.so`` is a ``cargo build --release --features python --lib`` (or ``--profile
profiling``) of one commit, loaded under its own module name (``ab_two_builds.load``). Prints
each build's fastest time and the median after/before ratio of the pairs (the statistic that
survives a shared, noisy machine), and whether the digests are byte-identical. ``--swe``: the
20 longest real SWE trajectories of ../shared/data instead, digested one after another.
``--peers``: the digests of ``bench_compact_peers.py``'s default ``Compactor`` (no summary cap:
the summary fills the room the budget leaves) instead.
"""

from __future__ import annotations

import gc
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests" / "support"))

from ab_two_builds import load  # noqa: E402
from synthetic import synthetic_history  # noqa: E402


def spans(swe: bool, peers: bool = False) -> list[tuple[list, dict]]:
    """The (messages, keywords) of every digest ``bench_compact.py``'s compaction asks for,
    caught on their way into the core."""
    import contextfold as cf
    from contextfold import _core

    if swe:
        from transcripts import LOCAL, SHARED, load_conversations, shared_available

        root = SHARED if shared_available() else LOCAL
        convs = sorted(load_conversations(root, "mini-swe-agent-gemini3"), key=lambda c: -len(c["messages"]))
        hs = [c["messages"] for c in convs[:20]]
    else:
        hs = [synthetic_history(10_000)]
    caught: list[tuple[list, dict]] = []
    # (The Compactor's digest goes through ``extractive_digest_report``, which a build before it
    # lacks: both builds are timed on ``extractive_digest``, the same walk and packing.)
    real, report = _core.extractive_digest, getattr(_core, "extractive_digest_report", None)

    def spy(messages, **kw):
        # (The Compactor's MessageCache is the installed build's object, which the builds under
        # test do not take: each reads the span afresh.)
        caught.append((messages, {k: v for k, v in kw.items() if k != "cache"}))
        return real(messages, **kw)

    def spy_report(messages, **kw):
        caught.append((messages, {k: v for k, v in kw.items() if k != "cache"}))
        return report(messages, **kw)

    _core.extractive_digest = spy
    if report is not None:
        _core.extractive_digest_report = spy_report
    try:
        for h in hs:
            budget = cf.estimate(h) // 3
            summary = {} if peers else {"summary_tokens": max(256, budget // 10)}
            c = cf.Compactor(budget=budget, tail_tokens=budget // 2, **summary)
            try:
                c.compact(h)
            except cf.CompactionBudgetError:
                continue
    finally:
        _core.extractive_digest = real
        if report is not None:
            _core.extractive_digest_report = report
    if not caught:
        raise SystemExit("no digest was caught: the Compactor calls the digest by another name")
    return caught


def main(before_path: str, after_path: str, pairs: int, swe: bool, peers: bool = False) -> None:
    before, after = load("cf_before", before_path), load("cf_after", after_path)
    work = spans(swe, peers)
    print(f"{len(work)} digests of {sum(len(m) for m, _ in work)} messages")

    def call(mod):
        gc.disable()
        try:
            t = time.perf_counter()
            out = [mod.extractive_digest(m, **kw) for m, kw in work]
            return time.perf_counter() - t, out
        finally:
            gc.enable()

    (_, b), (_, a) = call(before), call(after)
    print("identical digests:", a == b)
    tb, ta, ratios = [], [], []
    for i in range(pairs):
        if i % 2:
            x, _ = call(before)
            y, _ = call(after)
        else:
            y, _ = call(after)
            x, _ = call(before)
        tb.append(x)
        ta.append(y)
        ratios.append(y / x)
    print(f"before min {min(tb) * 1e3:.1f} ms, after min {min(ta) * 1e3:.1f} ms, "
          f"median after/before {statistics.median(ratios):.3f} ({pairs} pairs)")


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    main(args[0], args[1], int(args[2]) if len(args) > 2 else 10, "--swe" in sys.argv, "--peers" in sys.argv)
