"""Medians behind the per-family hidden overheads of src/profile.rs and src/estimate.rs.

    python tools/fit_family_overheads.py          # ../shared/data (CONTEXTFOLD_SHARED_DATA)

For every token family (``contextfold.model_info(model).family``, the provider's default family
for unknown models) over the recorded requests without images, prints with the CURRENT build:
- plain requests (no tools): n and median(usage - estimate): what ``per_request`` still misses;
- requests with tools: n, median(usage - estimate) and median(usage - estimate without tools -
  o200k tokens of the tool JSON): the tool-use prompt at one token per schema token
  (``tools_base`` when ``tool_schema_scale * text_scale`` is ~1);
- provider-hosted tools (``{"type": "web_search"}`` ...): median(usage - estimate without them)
  per (provider, tool types), the constants of ``hosted_tool_tokens``.
A constant is fitted when its median residual is ~0 here.
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
from transcripts import SHARED, estimate_request, load_requests  # noqa: E402

DEFAULT_FAMILY = {"openai": "openai", "anthropic": "anthropic", "gemini": "gemini"}


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


if __name__ == "__main__":
    main()
