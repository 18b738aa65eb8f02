"""Medians behind the per-family hidden overheads of src/profile.rs and src/estimate.rs.

    python tools/fit_family_overheads.py          # ../shared/data (CONTEXTFOLD_SHARED_DATA)

For every token family (``contextfold.model_info(model).family``, the provider's default family
for unknown models) over the recorded requests without images, prints with the CURRENT build:
- plain requests (no tools): n and median(usage - estimate): what ``per_request`` still misses;
- requests with tools: n, median(usage - estimate) and median(usage - estimate without tools -
  o200k tokens of the tool JSON): the tool-use prompt at one token per schema token
  (``tools_base`` when ``tool_schema_scale * text_scale`` is ~1);
- provider-hosted tools (``{"type": "web_search"}`` ...): median(usage - estimate without them)
  per (provider, tool types), the constants of ``hosted_tool_tokens``; then the same over the
  Anthropic exchanges of ../shared/data/replay that requests.jsonl lacks (streamed twins) added,
  the set the advisor prior is fitted on.
A constant is fitted when its median residual is ~0 here.

The label is the prompt of the request as sent: for Anthropic usage with ``iterations`` (a
server-side tool loop such as the advisor tool, compaction) the first iteration's, as
``contextfold.usage`` reads it; the top-level ``input_tokens`` sum every executor iteration.
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import defaultdict
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "support"))

import contextfold as cf  # noqa: E402
from transcripts import SHARED, Request, estimate_request, load_requests  # noqa: E402

DEFAULT_FAMILY = {"openai": "openai", "anthropic": "anthropic", "gemini": "gemini"}


def sent_prompt(r: Request) -> int:
    """The recorded prompt of the request as sent (see the module docstring)."""
    raw = r.raw.get("usage")
    if isinstance(raw, dict) and raw.get("iterations"):
        return cf.usage.usage_of(raw).prompt_tokens
    return r.usage or 0


def main() -> None:
    plain: dict[str, list[float]] = defaultdict(list)
    tools: dict[str, list[tuple[float, float]]] = defaultdict(list)
    hosted: dict[tuple[str, tuple[str, ...]], list[float]] = defaultdict(list)
    for r in load_requests(SHARED):
        if r.has_image:
            continue
        fam = cf.model_info(r.model).family
        if fam == "unknown":
            fam = DEFAULT_FAMILY.get(r.profile, "unknown")
        r = replace(r, usage=sent_prompt(r))
        est = estimate_request(cf, r)
        defs = r.tools if isinstance(r.tools, list) else []
        kinds = tuple(sorted({t.get("type") for t in defs if isinstance(t, dict)} - {"function", "custom", None}))
        if kinds:
            functions = [t for t in defs if isinstance(t, dict) and t.get("type") in ("function", "custom", None)]
            hosted[(r.provider, kinds)].append(r.usage - estimate_request(cf, replace(r, tools=functions or None)))
            continue
        if not defs:
            plain[fam].append(r.usage - est)
            continue
        bare = estimate_request(cf, replace(r, tools=None))
        schema = sum(cf.count_text(json.dumps(t, separators=(",", ":")), encoding="o200k_base") for t in defs)
        tools[fam].append((r.usage - est, r.usage - bare - schema))
    print("| family | plain n | plain median(real-est) | tools n | tools median(real-est) | tool prompt at 1/schema token |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for fam in sorted(set(plain) | set(tools)):
        p, t = plain.get(fam, []), tools.get(fam, [])
        pm = f"{statistics.median(p):+.0f}" if p else ""
        tm = f"{statistics.median(x for x, _ in t):+.0f}" if t else ""
        bm = f"{statistics.median(y for _, y in t):.0f}" if t else ""
        print(f"| {fam} | {len(p)} | {pm} | {len(t)} | {tm} | {bm} |")
    print("\n| provider | hosted tools | n | median(real - est without them) |\n| --- | --- | ---: | ---: |")
    for (prov, kinds), v in sorted(hosted.items()):
        print(f"| {prov} | {', '.join(kinds)} | {len(v)} | {statistics.median(v):.0f} |")
    for kinds, v in replay_hosted().items():
        hosted[("anthropic", kinds)].extend(v)
    print("\n| with the replay exchanges | hosted tools | n | median(real - est without them) |\n| --- | --- | ---: | ---: |")
    for (prov, kinds), v in sorted(hosted.items()):
        if prov == "anthropic":
            print(f"| {prov} | {', '.join(kinds)} | {len(v)} | {statistics.median(v):.0f} |")


def replay_hosted() -> dict[tuple[str, ...], list[float]]:
    """usage - estimate without the hosted tools, per tool types, of the Anthropic exchanges in
    replay/exchanges.jsonl whose source requests.jsonl does not hold (a stream's usage is its
    final message_delta's, iterations included)."""
    known = {r.source.split(":", 1)[-1] for r in load_requests(SHARED, with_usage=False)}
    out: dict[tuple[str, ...], list[float]] = defaultdict(list)
    with (SHARED / "replay" / "exchanges.jsonl").open() as f:
        for line in f:
            x = json.loads(line)
            body = x.get("request_body")
            if x["provider"] != "anthropic" or x["source"] in known or x["status"] != 200 or not isinstance(body, dict):
                continue
            defs = [t for t in body.get("tools") or [] if isinstance(t, dict)]
            kinds = tuple(sorted({t.get("type") for t in defs} - {"function", "custom", None}))
            if not kinds:
                continue
            resp = x["response_body"]
            if isinstance(resp, str):  # a stream: the final message_delta carries the usage
                events = [json.loads(ln[5:]) for ln in resp.splitlines() if ln.startswith("data:")]
                usage = next((e["usage"] for e in reversed(events) if e.get("type") == "message_delta"), None)
            else:
                usage = resp.get("usage")
            if not usage:
                continue
            functions = [t for t in defs if t.get("type") in ("function", "custom", None)]
            bare = {k: v for k, v in body.items() if k != "tools"} | ({"tools": functions} if functions else {})
            out[kinds].append(cf.usage.usage_of(usage).prompt_tokens - cf.estimate_request(bare))
    return out


if __name__ == "__main__":
    main()
