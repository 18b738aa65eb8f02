"""What the Responses API bills for function tools, beside chat.completions' rendering.

    TIKTOKEN_CACHE_DIR=../shared/data/tiktoken-cache python tools/derive_responses_rendering.py

For every recorded OpenAI / Azure Responses request with usage whose tools are all functions
(../shared/data, no media, no reasoning items sent back), prints the residual
`usage - count_request(body without tools) - T(rendered tool block)` with the features it
depends on: the model generation, instructions, tools without a commented property
(`tool_render::tools_without_property_comments`), tools without properties, strict tools and
calls in the history. `exact::Counter::responses_tool_block` holds the constants read off it.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "support"))

import contextfold as cf
from openai_tool_render import T, enc, render_tools
from transcripts import SHARED, load_requests, request_body


def uncommented(tool: dict) -> bool:
    props = (tool.get("parameters") or {}).get("properties") or {}
    return bool(props) and all(not v.get("description") and not v.get("title") and "default" not in v
                               for v in props.values())


def main() -> None:
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
        chat_tools = [{"type": "function", "function": {k: v for k, v in t.items() if k != "type"}} for t in r.tools]
        block = T(enc(r.model), render_tools(chat_tools))
        residual = r.usage - cf.count_request(bare) - block
        print(f"{r.model:12} residual={residual:4} instructions={bool(body.get('instructions'))!s:5} "
              f"uncommented={sum(map(uncommented, r.tools))} "
              f"no_props={sum(not (t.get('parameters') or {}).get('properties') for t in r.tools)} "
              f"strict={sum(bool(t.get('strict')) for t in r.tools)}/{len(r.tools)} "
              f"calls={kinds.count('function_call')} {r.source.split('/')[-1][:60]}")


if __name__ == "__main__":
    main()
