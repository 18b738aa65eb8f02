"""Derive (and re-measure) what a json_schema `response_format` adds to an OpenAI chat prompt.

    CONTEXTFOLD_SHARED_DATA=../shared/data python tools/derive_response_format.py [--schemas]

For every recorded OpenAI / Azure chat.completions request with a json_schema `response_format`
and a reported `usage.prompt_tokens`, the tokens the format adds are
`usage - contextfold.count(messages, tools=...)` (the rest of the request is counted exactly:
the requests without a format are exact). This script renders the format the way
src/tool_render.rs / src/exact.rs do (the pure-Python reference of `render_response_format`
and `Counter::structured_output`), prints how many requests and schemas each variant gets
exact, and with --schemas the residual of each schema.

The rules, and what each one is worth (`ablation` rows: the rule turned off):
- the schema as compact JSON without `required` and `additionalProperties: false` (a strict
  schema implies both; a prompt leak of gpt-4.1 showed them missing, see
  https://ghost.ai.moda/openai-structured-outputs-to-system-prompt), without `default`,
  `minimum`, `maximum`, `maxItems`; property titles kept, the root title left out;
- non-ASCII characters escaped (`\\u2014`), as Python's json.dumps does by default;
- the root title billed apart: 2 x tokens(title) + 1;
- the block appended after a blank line to the tool block when the request has tools (+0),
  else to the first system message (+4); + 4 for each earlier assistant text reply.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "support"))
sys.path.insert(0, str(ROOT / "tools"))
_DATA = Path(os.environ.get("CONTEXTFOLD_SHARED_DATA", ROOT.parent / "shared" / "data"))
os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(_DATA / "tiktoken-cache"))

import tiktoken  # noqa: E402

import contextfold as cf  # noqa: E402
from openai_tool_render import comment_lines, encoding_name, render_tools  # noqa: E402
from exact_report import openai_chat  # noqa: E402
from transcripts import SHARED  # noqa: E402

_NAME_MAPS = {"properties", "$defs", "definitions", "patternProperties"}
_SCHEMA_LISTS = {"anyOf", "oneOf", "allOf", "prefixItems"}
_SUBSCHEMAS = {"items", "additionalProperties", "not", "if", "then", "else", "contains"}

RULES = {
    "hide_required": True,
    "hide_additional_false": True,
    "hide_default": True,
    "hide_min_max": True,
    "hide_max_items": True,
    "show_property_titles": True,
    "root_title_apart": True,
    "ascii": True,
    "join_seam": True,
}


def shown(k: str, v, root: bool, rules: dict) -> bool:
    if k == "title":
        return not (root and rules["root_title_apart"]) and (root or rules["show_property_titles"])
    if k == "required":
        return not rules["hide_required"]
    if k == "additionalProperties":
        return not (rules["hide_additional_false"] and v is False)
    if k == "default":
        return not rules["hide_default"]
    if k in ("minimum", "maximum"):
        return not rules["hide_min_max"]
    if k in ("minItems", "maxItems"):
        return not rules["hide_max_items"]
    return True


def schema_shown(s, rules: dict, root: bool = True):
    if not isinstance(s, dict):
        return s
    out = {}
    for k, v in s.items():
        if not shown(k, v, root, rules):
            continue
        if k in _NAME_MAPS and isinstance(v, dict):
            out[k] = {name: schema_shown(sub, rules, False) for name, sub in v.items()}
        elif k in _SCHEMA_LISTS and isinstance(v, list):
            out[k] = [schema_shown(sub, rules, False) for sub in v]
        elif k in _SUBSCHEMAS:
            out[k] = schema_shown(v, rules, False)
        else:
            out[k] = v
    return out


def render(js: dict, rules: dict) -> str:
    out = f"# Response Formats\n\n## {js.get('name', '')}\n\n"
    d = js.get("description")
    if isinstance(d, str):
        out += "".join(line + "\n" for line in comment_lines(d, ""))
    body = schema_shown(js.get("schema") or {}, rules)
    return out + json.dumps(body, separators=(",", ":"), ensure_ascii=rules["ascii"])


def system_text(messages) -> str | None:
    for m in messages:
        if m.get("role") in ("system", "developer"):
            c = m.get("content") or ""
            return c if isinstance(c, str) else "".join(p.get("text", "") for p in c if p.get("type") == "text")
    return None


def added(r, rules: dict) -> int:
    """Tokens the format adds to recorded request `r` under `rules`."""
    return added_tokens(r.model, r.messages, r.tools, r.options["response_format"], rules)


def added_tokens(model: str, messages, tools, response_format, rules: dict = RULES) -> int:
    """Tokens a `response_format` adds to a request (0 for `text` / `json_object`)."""
    if not isinstance(response_format, dict) or response_format.get("type") != "json_schema":
        return 0
    e = tiktoken.get_encoding(encoding_name(model))
    T = lambda s: len(e.encode(s, disallowed_special=()))  # noqa: E731
    js = response_format.get("json_schema") or {}
    text = render(js, rules)
    system = system_text(messages)
    if not rules["join_seam"]:
        n = T(text) + 1 + (0 if tools else 4)
    elif tools:
        block = render_tools(tools)
        n = T(block + "\n\n" + text) - T(block)
    elif system is not None:
        n = T(system + "\n\n" + text) - T(system) + 4
    else:
        n = T(text) + 8  # no recording: a system message of its own, like the tool block
    title = (js.get("schema") or {}).get("title")
    if rules["root_title_apart"] and isinstance(title, str) and title:
        n += 2 * T(title) + 1
    replies = sum(1 for m in messages if m.get("role") == "assistant" and m.get("content") and not m.get("tool_calls"))
    return n + 4 * replies


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--schemas", action="store_true", help="the residual of every schema")
    a = ap.parse_args()
    rows = []
    for r in openai_chat(SHARED):
        rf = r.options.get("response_format")
        if not (isinstance(rf, dict) and rf.get("type") == "json_schema"):
            continue
        if any(isinstance(m.get("content"), list) and any(p.get("type") != "text" for p in m["content"]) for m in r.messages):
            continue  # media: counted by other meters
        need = r.usage - cf.count(r.messages, model=r.model, tools=r.tools)
        key = json.dumps(rf["json_schema"], sort_keys=True)
        rows.append((r, need, key))
    n_schemas = len({k for _, _, k in rows})
    print(f"{len(rows)} requests with a json_schema response_format, {n_schemas} schemas ({SHARED})")

    def score(rules: dict) -> tuple[int, int, int]:
        ok = [k for r, need, k in rows if added(r, rules) == need]
        bad = {k for r, need, k in rows if added(r, rules) != need}
        return len(ok), n_schemas - len(bad), len(bad)

    ex, schemas, _ = score(RULES)
    print(f"{'all rules':24s} {ex:3d}/{len(rows)} requests exact, {schemas}/{n_schemas} schemas all exact")
    for name in RULES:
        rules = dict(RULES, **{name: not RULES[name]})
        ex, schemas, broken = score(rules)
        print(f"  without {name:22s} {ex:3d}/{len(rows)} exact, {broken} schemas with a miss")
    if a.schemas:
        by = defaultdict(list)
        for r, need, k in rows:
            by[k].append(need - added(r, RULES))
        for k, res in by.items():
            js = json.loads(k)
            print(f"  {js.get('name', '')[:30]:30s} n={len(res):2d} residuals={sorted(set(res))}")


if __name__ == "__main__":
    main()
