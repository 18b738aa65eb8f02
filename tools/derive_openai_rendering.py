"""Derive (and re-measure) how OpenAI bills chat.completions prompts, from recorded cassettes.

    TIKTOKEN_CACHE_DIR=../shared/data/tiktoken-cache python tools/derive_openai_rendering.py [DATA_DIR ...]

This is the pure-Python reference of `contextfold.count` (src/exact.rs, src/tool_render.rs): it
counts every OpenAI / Azure chat.completions request with a recorded `usage.prompt_tokens` in
the given `requests.jsonl` folders (default: ../shared/data/{crewai,pydantic-ai}) with Python
tiktoken, and prints the error table per request family. With `--residuals` it prints the
residual of each request, which is how the constants below were found (see the notes at the end
of this docstring).

What each family needed (residual = usage.prompt_tokens - count):

- plain messages: the cookbook formula (3 per message + role + content [+ name + 1], + 3 reply
  priming) is exact on every gpt-4 / gpt-4o / gpt-4.1 / gpt-3.5 request. Reasoning models
  (o3*, o4*, gpt-5*) bill one token less (-1 on every recording); o1-mini bills like gpt-4o.
- tool calls: the ids are not billed (neither `tool_calls[i].id` nor `tool_call_id`). An
  assistant call renders as a recipient header `" to=functions.NAME"` + the arguments
  re-serialized as compact JSON (arguments sent as `{"a": 2, "b": 6}` are billed as
  `{"a":2,"b":6}`: the o3-mini call sent spaced was 3 over, exact compacted); a tool result
  renders its author as `"functions.NAME"` (looked up from the call id) instead of the role
  `tool`; the `name` field of a tool message is not billed. Each call costs a constant of the
  model generation on top: 2 on gpt-4o / gpt-4.1 (25 of 27 gpt-4.1-mini and 15 of 19
  gpt-4o-mini requests with single calls exact; 1 left them 1 under per call), 7 on gpt-5
  models, 3 on o3-mini (2 requests with calls), 1 on gpt-4 / gpt-3.5 (too few recordings to
  fit another).
  Several calls in one assistant message are one call to `multi_tool_use.parallel` with
  `{"tool_uses": [{"recipient_name": "functions.NAME", "parameters": ARGS}, ...]}`, and their
  results one message from `multi_tool_use.parallel` whose content is the JSON list of the
  outputs (newlines and quotes billed escaped), plus 4 - 4 x calls tokens on the gpt-4o / gpt-4.1
  generation (fitted: the 18 recorded batches of 2 and 3 calls all exact; the single constant -9
  fitted before left them 5 and 1 under), -9 on reasoning models. Before, results billed as plain
  tool messages left batches with long multi-line outputs 23-42 tokens under, and pricing each
  call as if alone plus a constant fitted the short batches only.
- tool definitions (on the gpt-4o / gpt-4.1 generation, a tool whose properties carry no comment,
  no description, title nor default, is billed 1 less than its text: the 14 non-parallel
  requests with such tools were 1 over per tool): a TypeScript-like block `# Tools\n\n## functions\n\nnamespace functions
  {...}` (see render_tools): `// description` lines, `type NAME = (_: {\nPROP?: TYPE,\n}) =>
  any;`. A description renders one `// ` line per non-blank line, each line stripped (docstrings
  with indented `Args:` blocks were over-counted 13-41 tokens when kept verbatim), nested
  objects indented by two spaces, arrays as `T[]`, enums as unions of JSON literals, `type:
  [..]` and anyOf as unions, `$ref` resolved against `$defs`/`definitions`; a property `title`
  renders as a `// Title` line before its description and a `default` as a trailing ` //
  default: VALUE` (tools median 2.04% -> 0.61%; harmony's extra empty `//` after the title
  over-counts: dropping it, 0.61% -> 0.49%); strict is not rendered. The block costs +3 more
  when the request has no system message (it then opens its own system message); otherwise it
  is appended to the first system message after a blank line, so BPE merges across the seam:
  `T(system + "\n\n" + block) - T(system) - 1` (priced alone it left requests +1 / -1 by how
  the system text ends). gpt-5 models add their own tool preamble: +84 (12 requests without
  calls, 6 with a system message, all exact; +83, the value before the seam, left them 1-2
  under).
- response_format json_schema: see tools/derive_response_format.py (all 79 recorded requests
  exact): `# Response Formats\n\n## NAME\n\n` + the format's description as `// ` lines + the
  schema as compact ASCII-escaped JSON without `required`, `additionalProperties: false`,
  `default`, `minimum` / `maximum` / `maxItems` and its root title, appended after a blank line
  to the tool block (or to the first system message, + 4); the root title costs 2 x its tokens
  + 1; + 4 for each earlier assistant text reply.
- images: the lead's image formulas (src/image_tokens.rs) from the header's pixel size.
"""

from __future__ import annotations

import base64
import json
import os
import re
import statistics
import struct
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(ROOT.parent / "shared" / "data" / "tiktoken-cache"))

import tiktoken  # noqa: E402

BLOB = re.compile(r"<<BLOB:([0-9a-f]{40})>>")


from openai_tool_render import (  # noqa: E402,F401  (re-exported for the other scripts)
    T,
    comment_lines,
    enc,
    encoding_name,
    is_reasoning,
    obj_props,
    render_tools,
    ts_type,
)
from derive_response_format import added_tokens  # noqa: E402


# ---------------------------------------------------------------- images

def image_dims(data: str):
    if data.startswith("data:"):
        data = data.split(",", 1)[1]
    head = base64.b64decode(data[: 4 * 20000] + "=" * (-len(data[: 4 * 20000]) % 4), validate=False)
    if head.startswith(b"\x89PNG"):
        return struct.unpack(">II", head[16:24])
    if head[:6] in (b"GIF87a", b"GIF89a"):
        return struct.unpack("<HH", head[6:10])
    if head[:2] == b"\xff\xd8":
        i = 2
        while i + 9 < len(head):
            if head[i] != 0xFF:
                return None
            mk = head[i + 1]
            ln = struct.unpack(">H", head[i + 2 : i + 4])[0]
            if mk in (0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF):
                h, w = struct.unpack(">HH", head[i + 5 : i + 9])
                return w, h
            i += 2 + ln
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP" and head[12:16] == b"VP8X":
        w = int.from_bytes(head[24:27], "little") + 1
        h = int.from_bytes(head[27:30], "little") + 1
        return w, h
    return None


def image_tokens(model: str, dims, detail: str) -> int:
    """OpenAI image formulas (platform docs images-vision#calculating-costs); mirrors
    src/image_tokens.rs for the models on the recordings."""
    import math

    m = model
    patch = {"gpt-4.1-mini": 1.62, "gpt-4.1-nano": 2.46, "o4-mini": 1.72, "gpt-5-mini": 1.2, "gpt-5-nano": 1.5}
    w, h = dims or (1024, 1024)
    for p, mult in patch.items():
        if m.startswith(p):
            raw = math.ceil(w / 32) * math.ceil(h / 32)
            if raw > 1536:
                r = math.sqrt(32 * 32 * 1536 / (w * h))
                sw, sh = w * r, h * r
                r *= min(math.floor(sw / 32) / (sw / 32), math.floor(sh / 32) / (sh / 32))
                sw, sh = w * r, h * r
                raw = min(math.ceil(sw / 32) * math.ceil(sh / 32), 1536)
            return math.ceil(raw * mult)
    if m.startswith("gpt-5"):
        base, tile = 70, 140
    elif m.startswith("gpt-4o-mini"):
        base, tile = 2833, 5667
    elif m.startswith(("o1", "o3")):
        base, tile = 75, 150
    else:
        base, tile = 85, 170
    if detail == "low":
        return base
    fw, fh = float(w), float(h)
    f = min(2048 / max(fw, fh), 1.0)
    fw, fh = fw * f, fh * f
    s = min(fw, fh)
    if s > 768:
        fw, fh = fw * 768 / s, fh * 768 / s
    return base + tile * max(1, math.ceil(fw / 512)) * max(1, math.ceil(fh / 512))


# ---------------------------------------------------------------- messages

def content_tokens(e, model, c) -> int:
    if c is None:
        return 0
    if isinstance(c, str):
        return T(e, c)
    n = 0
    for p in c:
        t = p.get("type")
        if t == "text":
            n += T(e, p.get("text", ""))
        elif t == "image_url":
            u = p["image_url"]
            url = u["url"] if isinstance(u, dict) else u
            detail = u.get("detail", "auto") if isinstance(u, dict) else "auto"
            dims = image_dims(url) if url.startswith("data:") else None
            n += image_tokens(model, dims, detail)
    return n


# A batch of parallel calls beyond its wrapper call and outputs: 4 - 4 x calls on the gpt-4o /
# gpt-4.1 generation (the 18 recorded batches, 2 and 3 calls, all exact once tools without
# property comments cost 1 less), -9 on reasoning models (the earlier single fit).
PARALLEL_BATCH_BASE, PARALLEL_PER_CALL, PARALLEL_BATCH_REASONING = 4, -4, -9


def parallel_batch(model: str, calls: int) -> int:
    if is_reasoning(model):
        return PARALLEL_BATCH_REASONING
    return PARALLEL_BATCH_BASE + PARALLEL_PER_CALL * calls


def tools_without_property_comments(tools) -> int:
    """Tools with properties of which none renders a comment (description, title, default)."""
    n = 0
    for t in tools:
        props = (t.get("function", t).get("parameters") or {}).get("properties") or {}
        if props and not any(
            isinstance(v, dict) and (v.get("description") or v.get("title") or "default" in v) for v in props.values()
        ):
            n += 1
    return n


def compact_arguments(args: str) -> str:
    """Call arguments as billed: compact JSON when they parse, as sent otherwise."""
    try:
        return json.dumps(json.loads(args), separators=(",", ":"), ensure_ascii=False)
    except ValueError:
        return args


def per_call(model: str) -> int:
    if is_reasoning(model):
        return 7 if model.startswith("gpt-5") else 3
    if model.startswith(("gpt-4o", "gpt-4.1", "gpt-4.5", "chatgpt-4o", "gpt-5-chat")):
        return 2
    return 1


def count_messages(model: str, messages) -> list[int]:
    e = enc(model)
    messages = [
        {**m, "tool_calls": [
            {**tc, "function": {**tc["function"], "arguments": compact_arguments(tc["function"].get("arguments") or "")}}
            for tc in m["tool_calls"]
        ]} if m.get("tool_calls") else m
        for m in messages
    ]
    pc = per_call(model)
    names = {}
    batch_of = {}
    for i, m in enumerate(messages):
        for tc in m.get("tool_calls") or []:
            names[tc.get("id")] = tc["function"]["name"]
            if len(m["tool_calls"]) > 1:
                batch_of[tc.get("id")] = i
    # The results of one batch are billed as one message from `multi_tool_use.parallel` whose
    # content is the JSON list of the outputs. Per message: the first result opens it (3 +
    # author + `[OUTPUT]`), each later one adds `, OUTPUT` less the token that `", "` merges
    # into (equal to the list's own count on all 23 recorded batches), so a result's count
    # does not change when later results are appended.
    opened = set()
    out = []
    for m in messages:
        n = 3
        role = m["role"]
        if role == "tool" and m.get("tool_call_id") in batch_of:
            b = batch_of[m["tool_call_id"]]
            c = m.get("content")
            text = json.dumps(c if isinstance(c, str) else "".join(p.get("text", "") for p in c or []), ensure_ascii=False)
            if b in opened:
                out.append(T(e, ", " + text) - 1)
            else:
                opened.add(b)
                out.append(3 + T(e, "multi_tool_use.parallel") + T(e, "[" + text + "]"))
            continue
        if role == "tool":
            n += T(e, "functions." + names.get(m.get("tool_call_id"), m.get("name") or ""))
        else:
            n += T(e, role)
            if m.get("name"):
                n += T(e, m["name"]) + 1
        n += content_tokens(e, model, m.get("content"))
        tcs = m.get("tool_calls") or []
        if len(tcs) == 1:
            f = tcs[0]["function"]
            n += T(e, " to=functions." + f["name"]) + T(e, f.get("arguments") or "") + pc
        elif tcs:
            # A batch of parallel calls: one call to `multi_tool_use.parallel` (its JSON in
            # Python's default spacing); its results are billed above, as one message.
            uses = []
            for tc in tcs:
                f = tc["function"]
                args = (f.get("arguments") or "").strip() and f["arguments"] or "{}"
                uses.append(f'{{"recipient_name": "functions.{f["name"]}", "parameters": {args}}}')
            n += T(e, " to=multi_tool_use.parallel") + T(e, '{"tool_uses": [' + ", ".join(uses) + "]}")
            n += parallel_batch(model, len(tcs))
        out.append(n)
    return out


def count(model: str, messages, tools=None, response_format=None) -> int:
    e = enc(model)
    reasoning = is_reasoning(model)
    n = sum(count_messages(model, messages)) + 3
    if reasoning:
        n -= 1
    if tools:
        block = render_tools(tools)
        systems = [m for m in messages if m.get("role") in ("system", "developer")]
        gpt5 = is_reasoning(model) and model.startswith("gpt-5")
        if not systems:
            n += T(e, block) + (84 if gpt5 else 3)
        else:
            c = systems[0].get("content") or ""
            sys_text = c if isinstance(c, str) else "".join(p.get("text", "") for p in c if p.get("type") == "text")
            n += T(e, sys_text + "\n\n" + block) - T(e, sys_text) + (84 if gpt5 else -1)
        if not is_reasoning(model):
            n -= tools_without_property_comments(tools)
    # response_format: the reference lives in derive_response_format.py.
    n += added_tokens(model, messages, tools, response_format)
    return n


# ---------------------------------------------------------------- measuring

def load(dirs):
    out = []
    for d in dirs:
        d = Path(d)
        for line in (d / "requests.jsonl").open():
            r = json.loads(line)
            if r["provider"] not in ("openai", "azure") or r["api"] != "chat.completions":
                continue
            if r.get("usage_prompt_tokens") is None or r.get("complete_context") is False:
                continue

            def unblob(m, d=d):
                p = d / "blobs" / f"{m.group(1)}.txt"
                return p.read_text() if p.exists() else m.group(0)

            if "<<BLOB:" in line:
                r["messages"] = json.loads(BLOB.sub(unblob, json.dumps(r["messages"])))
            out.append(r)
    return out


def family(r) -> str:
    ro = r.get("request_options") or {}
    has_img = any(
        isinstance(m.get("content"), list) and any(p.get("type") != "text" for p in m["content"])
        for m in r["messages"]
    )
    if has_img:
        return "images"
    if r.get("tools"):
        return "tools"
    if ro.get("response_format"):
        return "response_format"
    return "plain"


def main(argv):
    show = "--residuals" in argv
    dirs = [a for a in argv if not a.startswith("--")] or [
        ROOT.parent / "shared" / "data" / "crewai",
        ROOT.parent / "shared" / "data" / "pydantic-ai",
    ]
    fams = defaultdict(list)
    for r in load(dirs):
        ro = r.get("request_options") or {}
        try:
            c = count(r["model"], r["messages"], r.get("tools"), ro.get("response_format"))
        except KeyError:
            continue
        u = r["usage_prompt_tokens"]
        fams[family(r)].append((c, u, r))
        if show and c != u:
            print(f"{u - c:+5d} {u:6d} {family(r):15s} {r['model']:24s} {r['source']}")
    print(f"{'family':16s} {'n':>4s} {'exact':>7s} {'median|err|':>12s} {'p90|err|':>9s} {'max|err|':>9s}")
    for f in ("plain", "tools", "response_format", "images"):
        rows = fams.get(f, [])
        if not rows:
            continue
        errs = sorted(abs(c - u) / u for c, u, _ in rows)
        exact = sum(c == u for c, u, _ in rows) / len(rows)
        p90 = errs[min(len(errs) - 1, int(0.9 * len(errs)))]
        print(
            f"{f:16s} {len(rows):4d} {exact:7.1%} {statistics.median(errs):12.2%} {p90:9.2%} {errs[-1]:9.2%}"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
