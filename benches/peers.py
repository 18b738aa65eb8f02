"""The libraries people count and trim with today, loaded if installed (`pip install
'.[bench]'` in a checkout), each behind one function so the benchmarks and the accuracy script call
them the same way. A peer that is not installed is reported with a notice, never dropped silently.

- LangChain: `count_tokens_approximately` and `trim_messages` (on LangChain message objects,
  converted once beforehand with langchain-core's own converter: what an agent holds).
- LiteLLM: `token_counter` and `trim_messages` (OpenAI chat dicts, model gpt-4o).
- tiktoken: the OpenAI cookbook's message counting (3 tokens per message, every value
  tokenized, +1 per name, +3 reply priming), with non-string values (tool calls, content parts)
  tokenized as their JSON. Encodings come offline from ``shared/data/tiktoken-cache``.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "support"))
from transcripts import SHARED  # noqa: E402

# LiteLLM fetches a price map over the network at import unless told to use its bundled copy.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
TIKTOKEN_CACHE = Path(os.environ.get("TIKTOKEN_CACHE_DIR", SHARED / "tiktoken-cache"))

MODEL = "gpt-4o"
MISSING: dict[str, str] = {}


def _langchain() -> Any:
    try:
        from langchain_core.messages import convert_to_messages
        from langchain_core.messages.utils import count_tokens_approximately, trim_messages
    except ImportError as e:
        MISSING["langchain"] = f"langchain-core not installed ({e.name}): pip install '.[bench]'"
        return None
    return convert_to_messages, count_tokens_approximately, trim_messages


def _litellm() -> Any:
    try:
        import litellm
    except ImportError as e:
        MISSING["litellm"] = f"litellm not installed ({e.name}): pip install '.[bench]'"
        return None
    return litellm


def _tiktoken() -> Any:
    if not (TIKTOKEN_CACHE / "fb374d419588a4632f3f557e76b4b70aebbca790").exists():
        MISSING["tiktoken"] = f"no offline tiktoken encodings at {TIKTOKEN_CACHE} (set TIKTOKEN_CACHE_DIR)"
        return None
    os.environ["TIKTOKEN_CACHE_DIR"] = str(TIKTOKEN_CACHE)
    try:
        import tiktoken
    except ImportError:
        MISSING["tiktoken"] = "tiktoken not installed: pip install '.[bench]'"
        return None
    return tiktoken.get_encoding("o200k_base")


LANGCHAIN = _langchain()
LITELLM = _litellm()
O200K = _tiktoken()


def cookbook_count(messages: list[dict[str, Any]], enc: Any = None) -> int:
    """Prompt tokens by the OpenAI cookbook's recipe for gpt-4o-era chat models."""
    enc = enc or O200K
    total = 3  # every reply is primed with <|start|>assistant<|message|>
    for m in messages:
        total += 3
        for key, value in m.items():
            text = value if isinstance(value, str) else json.dumps(value)
            total += len(enc.encode(text, disallowed_special=()))
            if key == "name":
                total += 1
    return total


def to_langchain(messages: list[dict[str, Any]]) -> list[Any]:
    """LangChain message objects of OpenAI chat dicts (langchain-core's converter)."""
    return list(LANGCHAIN[0](messages))


def counters() -> dict[str, Callable[[Any], int]]:
    """Peer token counters: name -> function of the workload's prepared input (see `prepare`)."""
    out: dict[str, Callable[[Any], int]] = {}
    if LANGCHAIN:
        out["langchain count_tokens_approximately"] = lambda p: LANGCHAIN[1](p["langchain"])
    if LITELLM:
        out["litellm token_counter"] = lambda p: LITELLM.token_counter(model=MODEL, messages=p["openai"])
    if O200K is not None:
        out["tiktoken cookbook"] = lambda p: cookbook_count(p["openai"])
    return out


def trimmers(budget: int) -> dict[str, Callable[[Any], list[Any]]]:
    """Peer history trimmers keeping the last ``budget`` tokens."""
    out: dict[str, Callable[[Any], list[Any]]] = {}
    if LANGCHAIN:
        out["langchain trim_messages"] = lambda p: LANGCHAIN[2](
            p["langchain"], max_tokens=budget, token_counter=LANGCHAIN[1], strategy="last", include_system=True
        )
    if LITELLM:
        out["litellm trim_messages"] = lambda p: LITELLM.utils.trim_messages(p["openai"], model=MODEL, max_tokens=budget)
    return out


def prepare(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """Each peer's native input for one history (converted once, outside the timings)."""
    return {"openai": messages, "langchain": to_langchain(messages) if LANGCHAIN else None}
