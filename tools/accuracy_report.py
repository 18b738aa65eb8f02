"""Estimate accuracy against provider-reported prompt tokens (shared/data or tests/data).

    python tools/accuracy_report.py [--local] [--platform] [--body] [-v]

Calls the library the way a user does: ``provider=`` is the wire format of the recorded API
(OpenAI chat / Responses, Anthropic Messages, Gemini), ``model=`` the model name as sent; the
SWE trajectories (Gemini 3 Pro through an OpenAI-compatible router) are estimated as
``provider="openai", model="google/gemini-3-pro-preview"``, every model call, no calibration.
Prints median |err|, p90 |err| and the signed median of ``estimate / real - 1`` per data set,
per recorded provider, and overall (requests and trajectory calls pooled).

``--body``: each recorded request is priced as the body its caller sent (``estimate_request``:
the request options, thinking and tool_choice included, read by the core's body readers)
instead of its parts passed to ``estimate``.

``--platform``: the Gemini requests' model names carry their serving platform as a caller who
knows it spells it (``gemini/...`` for the recorded ``google``, ``vertex_ai/...`` for
``google-vertex``): the two platforms bill the same request differently, which a bare model
name cannot say (``contextfold.model_info(name).unknown_overheads`` lists "serving platform").
"""

from __future__ import annotations

import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "support"))

import contextfold as cf  # noqa: E402
from transcripts import (  # noqa: E402
    LOCAL,
    SHARED,
    estimate_request,
    estimate_request_body,
    load_conversations,
    load_requests,
    swe_call_kwargs,
    swe_calls,
)


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def row(label: str, errs: list[float]) -> str:
    a = [abs(x) for x in errs]
    return (
        f"| {label} | {len(errs)} | {statistics.median(a):.1%} | {pct(a, 0.9):.1%} "
        f"| {statistics.median(errs):+.1%} |"
    )


def collect(
    root: Path, verbose: bool = False, name_platform: bool = False, body: bool = False
) -> tuple[dict, dict, list[float]]:
    """(errors by data set, errors by recorded provider, SWE call errors)."""
    by_set: dict[str, list[float]] = defaultdict(list)
    by_provider: dict[str, list[float]] = defaultdict(list)
    price = estimate_request_body if body else estimate_request
    for r in load_requests(root):
        err = price(cf, r, name_platform=name_platform) / r.usage - 1
        by_set[r.dataset].append(err)
        by_provider[r.provider].append(err)
        if verbose and abs(err) > 0.5:
            print(f"  {r.source[:90]:90s} {r.model} real={r.usage} err={err:+.2f}")
    swe = [
        cf.estimate(ms, **swe_call_kwargs(conv)) / u - 1
        for conv, _, ms, u in swe_calls(load_conversations(root, "mini-swe-agent-gemini3"))
    ]
    return by_set, by_provider, swe


def main() -> None:
    root = LOCAL if "--local" in sys.argv else SHARED
    by_set, by_provider, swe = collect(root, "-v" in sys.argv, "--platform" in sys.argv, "--body" in sys.argv)
    head = "| {} | n | median abs | p90 abs | signed median |\n| --- | ---: | ---: | ---: | ---: |"
    print(head.format("data set"))
    for k in sorted(by_set):
        print(row(k, by_set[k]))
    if swe:
        print(row("mini-swe-agent-gemini3 (every call)", swe))
    everything = [e for v in by_set.values() for e in v] + swe
    print(row("**all requests and calls**", everything))
    print()
    print(head.format("recorded provider (requests)"))
    for k in sorted(by_provider, key=lambda k: -len(by_provider[k])):
        print(row(k, by_provider[k]))
    if swe:
        print(row("openrouter: SWE trajectory calls", swe))
    small = [k for k, v in by_provider.items() if len(v) >= 5 and abs(statistics.median(v)) > 0.15]
    print(f"\nproviders with 5+ requests and |signed median| > 15%: {', '.join(sorted(small)) or 'none'}")


if __name__ == "__main__":
    main()
