"""What the Responses API bills for function tools and calls, beside chat.completions' rendering.

    python tools/derive_responses_rendering.py   # tiktoken's cache: ../shared/data/tiktoken-cache

For every recorded OpenAI / Azure Responses request with usage whose tools are all functions
(../shared/data, no media, no reasoning items sent back: their encrypted reasoning is billed and
no tokenizer counts it), prints the residual
`usage - count_request(body without tools, calls at chat's constant) - T(rendered tool block)`
with the features it depends on: the model generation, instructions, tools without a commented
property (`tool_render::tools_without_property_comments`), tools without properties, strict
tools and calls in the history. Then, for each constant `exact::Counter::responses_tool_block`
and `exact::Counter::for_responses` hold, how many requests it is fitted on and how many of
those it makes exact: a rule only one recording backs is no rule.
"""

from __future__ import annotations

import os
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "support"))

import contextfold as cf
from openai_tool_render import T, enc, render_tools
from transcripts import SHARED, load_requests, request_body

# The reference rendering tokenizes with Python tiktoken, offline from the shared cache.
os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(SHARED / "tiktoken-cache"))

GPT4O_GENERATION = ("gpt-4o", "gpt-4.1", "gpt-4.5", "chatgpt-4o", "gpt-5-chat")


def uncommented(tool: dict) -> bool:
    props = (tool.get("parameters") or {}).get("properties") or {}
    return bool(props) and all(not v.get("description") and not v.get("title") and "default" not in v
                               for v in props.values())


def generation(model: str) -> str:
    if model.startswith("gpt-5") and not model.startswith("gpt-5-chat"):
        return "gpt-5"
    if model.startswith(GPT4O_GENERATION):
        return "gpt-4o"
    return "other"


def main() -> None:
    # rule -> [requests it applies to, requests it leaves exact]
    support: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    call_residuals: dict[str, list[int]] = defaultdict(list)
    for r in load_requests(SHARED):
        if r.api != "responses" or r.provider not in ("openai", "azure") or not r.usage or r.has_image:
            continue
        if not r.tools or any(t.get("type") != "function" for t in r.tools):
            continue
        kinds = [m.get("type", "message") for m in r.messages if isinstance(m, dict)]
        if "reasoning" in kinds or "additional_tools" in kinds:
            continue
        body = request_body(r)
        bare = {k: v for k, v in body.items() if k not in ("tools", "tool_choice")}
        # What the Responses call constant adds over chat's on these messages (tools and format
        # left out, so only the calls differ).
        read = cf.read_request(bare)
        msgs = read.messages if not read.system else [{"role": "system", "content": read.system}, *read.messages]
        call_shift = cf.count(msgs, model=r.model, api="responses") - cf.count(msgs, model=r.model, api="chat")
        chat_tools = [{"type": "function", "function": {k: v for k, v in t.items() if k != "type"}} for t in r.tools]
        block = T(enc(r.model), render_tools(chat_tools))
        residual = r.usage - (cf.count_request(bare) - call_shift) - block
        gen = generation(r.model)
        instructions = bool(body.get("instructions"))
        n_unc = sum(map(uncommented, r.tools))
        n_empty = sum(not (t.get("parameters") or {}).get("properties") for t in r.tools)
        strict = any(t.get("strict") for t in r.tools)
        calls = kinds.count("function_call")
        print(f"{r.model:12} residual={residual:4} instructions={instructions!s:5} uncommented={n_unc} "
              f"no_props={n_empty} strict={sum(bool(t.get('strict')) for t in r.tools)}/{len(r.tools)} "
              f"calls={calls} {r.source.split('/')[-1][:60]}")
        if gen == "other":
            continue
        # The tool-block rules, read with the calls at chat's constant taken out per generation.
        rules = []
        if gen == "gpt-5":
            predicted = (2 if instructions else 3) - n_empty - n_unc
            rules.append("gpt-5 block +2 with instructions" if instructions else "gpt-5 block +3")
            if n_empty:
                rules.append("gpt-5 tool without properties -1")
        else:
            predicted = -3 - n_unc + (216 if strict and r.model.startswith("gpt-4o") and not r.model.startswith("gpt-4o-mini") else 0)
            rules.append("gpt-4o block -3")
            if strict and r.model.startswith("gpt-4o") and not r.model.startswith("gpt-4o-mini"):
                rules.append("gpt-4o strict +216")
        if n_unc:
            rules.append("tool without a commented property -1")
        for rule in rules:
            support[rule][0] += 1
            support[rule][1] += (residual - call_residual(gen, calls)) == predicted
        if calls:
            call_residuals[gen].append((residual - predicted) // calls if (residual - predicted) % calls == 0
                                       else residual - predicted)
    print()
    for rule, (n, exact) in sorted(support.items()):
        print(f"{rule:40} on {n:2} requests, exact on {exact}")
    for gen, per_call in sorted(call_residuals.items()):
        print(f"{gen} calls over chat's constant, per call, by request: {sorted(per_call)}")


def call_residual(gen: str, calls: int) -> int:
    """What `Counter::for_responses` takes off chat's call constant (residuals are read at chat's)."""
    return -2 * calls if gen == "gpt-4o" else 0


if __name__ == "__main__":
    main()
