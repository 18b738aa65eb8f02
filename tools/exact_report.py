"""How often `contextfold.count` equals the provider's reported prompt tokens, and why it misses.

    python tools/exact_report.py [--local] [--misses] [--model PREFIX]

Counts every recorded OpenAI / Azure chat.completions request with a provider-reported
`usage.prompt_tokens` (../shared/data, or tests/data with --local) the way a user calls the
library (`cf.count(messages, model=, tools=, response_format=)`) and prints:

- per family: `plain` (no tools, no media; `response_format` allowed: the issue's "requests
  without tools or images"), `tools`, `images`, `other-media` (audio, files: not countable);
  with n, exact share, median, p90, p99 and max of |count / reported - 1|;
- per model within each family;
- with --misses, every request that is not exact, grouped by its cause tag (the features it
  carries: response_format strict or not, `$defs`, enums, anyOf, nested objects, parallel
  calls, ...), signed residual `reported - counted` first.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "support"))

import contextfold as cf  # noqa: E402
from transcripts import LOCAL, SHARED, Request, load_requests  # noqa: E402


def openai_chat(root: Path) -> list[Request]:
    return [
        r
        for r in load_requests(root)
        if r.provider in ("openai", "azure") and r.api == "chat.completions" and r.usage
    ]


def family(r: Request) -> str:
    parts = [p for m in r.messages if isinstance(m.get("content"), list) for p in m["content"]]
    kinds = {p.get("type") for p in parts if isinstance(p, dict)}
    if kinds - {"text", "image_url"}:
        return "other-media"
    if "image_url" in kinds:
        return "images"
    if r.tools:
        return "tools"
    return "plain"


def _schema_features(s, out: set[str], depth: int = 0) -> None:
    if isinstance(s, list):
        for v in s:
            _schema_features(v, out, depth)
        return
    if not isinstance(s, dict):
        return
    for k in ("$defs", "definitions", "$ref", "anyOf", "oneOf", "allOf", "enum", "const", "default", "format",
              "pattern", "minimum", "maximum", "minItems", "maxItems", "minLength", "maxLength", "examples"):
        if k in s:
            out.add(k)
    if isinstance(s.get("additionalProperties"), (bool, dict)):
        out.add("additionalProperties")
    if s.get("type") == "object" and s.get("properties") and depth > 0:
        out.add("nested-object")
    if s.get("type") == "array":
        out.add("array")
    if "description" in s and depth > 0:
        out.add("prop-description")
    if "title" in s and depth > 0:
        out.add("title")
    for k, v in s.items():
        if k in ("properties", "$defs", "definitions") and isinstance(v, dict):
            for sub in v.values():
                _schema_features(sub, out, depth + 1)
        elif k in ("items", "additionalProperties", "anyOf", "oneOf", "allOf", "not", "prefixItems"):
            _schema_features(v, out, depth + 1)


def causes(r: Request) -> str:
    """A tag naming what the request carries beyond plain messages."""
    tags: list[str] = []
    rf = r.options.get("response_format")
    if isinstance(rf, dict):
        if rf.get("type") == "json_schema":
            js = rf.get("json_schema") or {}
            tags.append("rf:strict" if js.get("strict") else "rf:non-strict")
            feats: set[str] = set()
            _schema_features(js.get("schema") or {}, feats)
            if js.get("description"):
                feats.add("rf-description")
            tags.extend(sorted(feats))
        else:
            tags.append(f"rf:{rf.get('type')}")
    if r.tools:
        feats = set()
        for t in r.tools:
            f = t.get("function", t)
            if f.get("strict"):
                feats.add("strict")
            _schema_features(f.get("parameters") or {}, feats)
        tags.append(f"tools:{len(r.tools)}")
        tags.extend(sorted("t:" + f for f in feats))
        if r.options.get("tool_choice") not in (None, "auto"):
            tags.append(f"tool_choice:{r.options['tool_choice'] if isinstance(r.options['tool_choice'], str) else 'named'}")
    if any(len(m.get("tool_calls") or []) > 1 for m in r.messages):
        tags.append("parallel-calls")
    elif any(m.get("tool_calls") for m in r.messages):
        tags.append("calls")
    if any(m.get("name") for m in r.messages if m.get("role") != "tool"):
        tags.append("names")
    roles = {m.get("role") for m in r.messages}
    if not roles & {"system", "developer"}:
        tags.append("no-system")
    return " ".join(tags) or "messages only"


def stats(rows: list[tuple[int, int]]) -> dict[str, float]:
    errs = sorted(abs(c - u) / u for c, u in rows)

    def q(p: float) -> float:
        return errs[min(len(errs) - 1, int(p * len(errs)))]

    return {
        "n": len(rows),
        "exact": sum(c == u for c, u in rows) / len(rows),
        "median": statistics.median(errs),
        "p90": q(0.9),
        "p99": q(0.99),
        "max": errs[-1],
    }


def line(label: str, s: dict[str, float]) -> str:
    return (
        f"{label:34s} {s['n']:4d} {s['exact']:7.1%} {s['median']:8.2%} {s['p90']:7.2%} {s['p99']:7.2%} "
        f"{s['max']:7.2%}"
    )


def measure(root: Path, model_prefix: str = "") -> list[tuple[Request, str, int]]:
    """(request, family, count) for every countable recorded request."""
    out = []
    for r in openai_chat(root):
        if not r.model.startswith(model_prefix):
            continue
        try:
            c = cf.count(r.messages, model=r.model, tools=r.tools, response_format=r.options.get("response_format"))
        except cf.UnknownModelError:
            continue
        out.append((r, family(r), c))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--local", action="store_true", help="tests/data instead of ../shared/data")
    ap.add_argument("--misses", action="store_true", help="list every miss grouped by cause")
    ap.add_argument("--model", default="", help="only models starting with this")
    a = ap.parse_args()
    root = LOCAL if a.local else SHARED
    rows = measure(root, a.model)
    print(f"data: {root} ({len(rows)} OpenAI chat.completions requests with reported prompt_tokens)")
    print(f"{'family / model':34s} {'n':>4s} {'exact':>7s} {'median':>8s} {'p90':>7s} {'p99':>7s} {'max':>7s}")
    for fam in ("plain", "tools", "images", "other-media"):
        fr = [(r, c) for r, f, c in rows if f == fam]
        if not fr:
            continue
        print(line(fam, stats([(c, r.usage) for r, c in fr])))
        by_model: dict[str, list[tuple[int, int]]] = defaultdict(list)
        for r, c in fr:
            by_model[r.model].append((c, r.usage))
        for m in sorted(by_model, key=lambda m: -len(by_model[m])):
            print(line("  " + m, stats(by_model[m])))
    if a.misses:
        groups: dict[tuple[str, str], list[tuple[Request, int]]] = defaultdict(list)
        for r, f, c in rows:
            if c != r.usage:
                groups[(f, causes(r))].append((r, c))
        print("\nmisses (reported - counted), grouped by family and cause:")
        for (f, cause), ms in sorted(groups.items(), key=lambda kv: (kv[0][0], -len(kv[1]))):
            print(f"\n[{f}] {cause}  ({len(ms)})")
            for r, c in sorted(ms, key=lambda rc: rc[0].model):
                print(f"  {r.usage - c:+5d} {r.usage:6d} {r.model:26s} {r.source[:110]}")


if __name__ == "__main__":
    main()
