"""The reference rendering of OpenAI tool definitions, as the model reads them (TypeScript-like
`namespace functions`), shared by the derivation scripts. Pure Python over tiktoken: the
yardstick the core's `tool_render.rs` is checked against, not a copy of it.

Ground floor of tools/: imports no other script, so `derive_openai_rendering.py` and
`derive_response_format.py` both build on it without importing each other.
"""

from __future__ import annotations

import json

import tiktoken


def encoding_name(model: str) -> str:
    m = model.removeprefix("ft:").split(":")[0]
    if m.startswith("gpt-oss"):
        return "o200k_harmony"
    if m.startswith(("gpt-4o", "gpt-4.1", "gpt-4.5", "o1", "o3", "o4", "gpt-5", "chatgpt-4o", "codex")):
        return "o200k_base"
    if m.startswith(("gpt-4", "gpt-3.5", "gpt-35", "text-embedding-3", "text-embedding-ada")):
        return "cl100k_base"
    raise KeyError(model)


def is_reasoning(model: str) -> bool:
    m = model.removeprefix("ft:")
    return m.startswith(("o3", "o4", "gpt-5")) and not m.startswith("gpt-5-chat")


_ENC: dict[str, tiktoken.Encoding] = {}


def enc(model: str) -> tiktoken.Encoding:
    n = encoding_name(model)
    if n not in _ENC:
        _ENC[n] = tiktoken.get_encoding(n)
    return _ENC[n]


def T(e: tiktoken.Encoding, s: str) -> int:
    return len(e.encode_ordinary(s))


# ---------------------------------------------------------------- tool rendering

def _resolve(s, defs, depth=0):
    if isinstance(s, dict) and "$ref" in s and depth < 16:
        name = s["$ref"].rsplit("/", 1)[-1]
        if name in defs:
            return _resolve(defs[name], defs, depth + 1)
    return s


def ts_type(s, indent: str, defs) -> str:
    s = _resolve(s, defs)
    if not isinstance(s, dict):
        return "any"
    for key in ("anyOf", "oneOf"):
        if isinstance(s.get(key), list):
            return " | ".join(ts_type(v, indent, defs) for v in s[key])
    t = s.get("type")
    if isinstance(t, list):
        return " | ".join(ts_type({**s, "type": x}, indent, defs) for x in t)
    if isinstance(s.get("enum"), list) and s["enum"]:
        return " | ".join(json.dumps(v, ensure_ascii=False) for v in s["enum"])
    if "const" in s:
        return json.dumps(s["const"], ensure_ascii=False)
    if t == "string":
        return "string"
    if t in ("number", "integer"):
        return "number"
    if t == "boolean":
        return "boolean"
    if t == "null":
        return "null"
    if t == "array":
        if "items" in s:
            inner = ts_type(s["items"], indent, defs)
            if " | " in inner:
                inner = f"({inner})"
            return inner + "[]"
        return "any[]"
    if t == "object" or "properties" in s:
        if not s.get("properties"):
            return "object"
        return "{\n" + obj_props(s, indent + "  ", defs) + "\n" + indent + "}"
    return "any"


def comment_lines(text: str, indent: str) -> list[str]:
    """A description as `// ` lines: each line stripped, blank lines dropped."""
    return [f"{indent}// {line.strip()}" for line in text.split("\n") if line.strip()]


def obj_props(s, indent: str, defs) -> str:
    req = set(s.get("required") or [])
    lines = []
    for k, v in (s.get("properties") or {}).items():
        d = v.get("description") if isinstance(v, dict) else None
        ti = v.get("title") if isinstance(v, dict) else None
        if isinstance(ti, str) and ti:
            # one `// Title` line (harmony's extra empty `//` after it over-counts)
            lines.append(f"{indent}// {ti}")
        if isinstance(d, str) and d:
            lines.extend(comment_lines(d, indent))
        dft = ""
        if isinstance(v, dict) and "default" in v:
            dv = v["default"]
            raw = isinstance(dv, str) and "enum" in v
            dft = " // default: " + (dv if raw else json.dumps(dv, separators=(",", ":"), ensure_ascii=False))
        lines.append(f"{indent}{k}{'' if k in req else '?'}: {ts_type(v, indent, defs)},{dft}")
    return "\n".join(lines)


def render_tools(tools) -> str:
    out = ["namespace functions {", ""]
    for t in tools:
        f = t.get("function", t)
        d = f.get("description")
        if isinstance(d, str) and d:
            out.extend(comment_lines(d, ""))
        p = f.get("parameters") or {}
        defs = {**(p.get("definitions") or {}), **(p.get("$defs") or {})}
        if p.get("properties"):
            out.append(f"type {f['name']} = (_: {{")
            out.append(obj_props(p, "", defs))
            out.append("}) => any;")
        else:
            out.append(f"type {f['name']} = () => any;")
        out.append("")
    out.append("} // namespace functions")
    return "# Tools\n\n## functions\n\n" + "\n".join(out)
