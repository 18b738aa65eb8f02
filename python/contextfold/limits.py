"""Context limits: how many tokens a model accepts.

``context_window(model)`` looks the model up in a data table; ``ollama_context_window(show)`` reads
the effective limit of a local Ollama model from its ``/api/show`` response.
"""

from __future__ import annotations

import re
from typing import Any

from contextfold.errors import UnknownModelError

__all__ = ["CONTEXT_WINDOWS", "context_window", "ollama_context_window"]

# Total context window (prompt + output) in tokens, by model-name prefix. The longest prefix that
# ends at a name boundary ("-", "@", ":", "/" or the end) wins, so dated snapshots
# ("gpt-4o-2024-08-06", "claude-3-5-sonnet-20241022", "gemini-2.5-pro-preview-05-06") resolve to
# their family.
#
# Sources (read 2025-11): OpenAI https://platform.openai.com/docs/models (each model page,
# "Context window"); Anthropic https://docs.anthropic.com/en/docs/about-claude/models/overview
# ("Context window"; the 1M-token window of Sonnet 4 / 4.5 is a beta behind a request header, so
# the default 200K is listed); Google https://ai.google.dev/gemini-api/docs/models (each model's
# "Input token limit": Gemini's output limit is separate, so this is the prompt limit).
CONTEXT_WINDOWS: dict[str, int] = {
    # OpenAI
    "gpt-5": 400_000,
    "gpt-5-chat": 128_000,
    "gpt-5-chat-latest": 128_000,
    "gpt-5.1": 400_000,
    "gpt-5.1-chat-latest": 128_000,
    "gpt-5.2": 400_000,
    "codex-mini-latest": 200_000,
    "gpt-4.1": 1_047_576,
    "gpt-4.5-preview": 128_000,
    "gpt-4o": 128_000,
    "chatgpt-4o-latest": 128_000,
    "gpt-4-turbo": 128_000,
    "gpt-4-1106-preview": 128_000,
    "gpt-4-0125-preview": 128_000,
    "gpt-4-vision-preview": 128_000,
    "gpt-4-32k": 32_768,
    "gpt-4": 8_192,
    "gpt-3.5-turbo": 16_385,
    "gpt-3.5-turbo-instruct": 4_096,
    "o1": 200_000,
    "o1-mini": 128_000,
    "o1-preview": 128_000,
    "o3": 200_000,
    "o3-mini": 200_000,
    "o4-mini": 200_000,
    "gpt-oss-120b": 131_072,
    "gpt-oss-20b": 131_072,
    # Anthropic
    "claude-opus-4": 200_000,
    "claude-sonnet-4": 200_000,
    "claude-haiku-4": 200_000,
    "claude-3": 200_000,
    "claude-2-1": 200_000,  # claude-2.1 (dots become dashes for Claude names)
    "claude-2-0": 100_000,
    "claude-2": 100_000,
    "claude-instant": 100_000,
    # Google Gemini (input token limit)
    "gemini-3-pro": 1_048_576,
    "gemini-2.5-pro": 1_048_576,
    "gemini-2.5-flash": 1_048_576,
    "gemini-2.5-flash-lite": 1_048_576,
    "gemini-2.0-flash": 1_048_576,
    "gemini-2.0-flash-lite": 1_048_576,
    "gemini-2.0-pro": 2_097_152,
    "gemini-1.5-pro": 2_097_152,
    "gemini-1.5-flash": 1_048_576,
    "gemini-1.0-pro": 30_720,
}

_BOUNDARY = "-@:/"
# "claude-3.5-sonnet" (OpenRouter) and "claude-sonnet-4.5" spell versions with dots.
_CLAUDE_DOT = re.compile(r"(?<=\d)\.(?=\d)")


def _normalize(model: str) -> str:
    m = model.strip().lower()
    if m.startswith("ft:"):
        # ft:gpt-4o-mini-2024-07-18:org::id -> the base model.
        m = m[3:].split(":", 1)[0]
    # Provider prefixes: "openai/gpt-4o", "google/gemini-2.5-pro", "models/gemini-1.5-pro".
    m = m.rsplit("/", 1)[-1]
    # Bedrock ids: "us.anthropic.claude-3-5-sonnet-20240620-v1:0".
    if "anthropic." in m:
        m = m.split("anthropic.", 1)[1]
    if m.startswith("claude"):
        m = _CLAUDE_DOT.sub("-", m)
    return m


def context_window(model: str) -> int:
    """Context window of ``model`` in tokens, from a table of common OpenAI, Anthropic and Gemini
    models (sources cited in ``limits.py``; for Gemini, the input token limit).

    Dated snapshots, provider prefixes (``openai/``, ``google/``, ``models/``), fine-tuned
    names (``ft:gpt-4o-mini:...``) and Bedrock / Vertex ids resolve to their family. Raises
    ``UnknownModelError`` for a model not in the table: pass ``context_window=`` explicitly then.
    """
    if not isinstance(model, str):
        raise TypeError(f"model must be a string, got {type(model).__name__}")
    name = _normalize(model)
    matches = [
        prefix
        for prefix in CONTEXT_WINDOWS
        if name.startswith(prefix) and (len(name) == len(prefix) or name[len(prefix)] in _BOUNDARY)
    ]
    best = max(matches, key=len, default=None)
    if best is None:
        raise UnknownModelError(f"unknown context window for model {model!r}; pass context_window=")
    return CONTEXT_WINDOWS[best]


def _field(obj: Any, *names: str) -> Any:
    for n in names:
        if isinstance(obj, dict):
            if obj.get(n) is not None:
                return obj[n]
        else:
            v = getattr(obj, n, None)
            if v is not None:
                return v
    return None


_NUM_CTX = re.compile(r"^\s*num_ctx\s+(\d+)\s*$", re.MULTILINE)


def ollama_context_window(show: Any, *, num_ctx: int | None = None) -> int:
    """Effective context limit of an Ollama model from its ``/api/show`` response (a dict, or the
    ``ollama`` SDK's ``ShowResponse``).

    ``min(model_info["<arch>.context_length"], num_ctx)``: the trained maximum, capped by the
    ``num_ctx`` parsed from the ``parameters`` string (``"num_ctx 8192"`` on its own line) when the
    Modelfile sets one. ``num_ctx=`` is the value your requests pass in ``options`` and overrides
    the Modelfile's. Note that without any ``num_ctx`` the server uses its own default
    (``OLLAMA_CONTEXT_LENGTH``, 4096 in recent versions), which ``/api/ps`` reports for a loaded
    model; pass it as ``num_ctx=`` when you rely on it. Raises ``UnknownModelError`` when neither
    value is present.
    """
    info = _field(show, "model_info", "modelinfo") or {}
    trained = None
    if isinstance(info, dict):
        arch = info.get("general.architecture")
        if arch and isinstance(info.get(f"{arch}.context_length"), int):
            trained = info[f"{arch}.context_length"]
        else:
            lengths = [v for k, v in info.items() if k.endswith(".context_length") and isinstance(v, int)]
            trained = min(lengths) if lengths else None
    if num_ctx is None:
        params = _field(show, "parameters")
        if isinstance(params, str):
            found = _NUM_CTX.findall(params)
            num_ctx = int(found[-1]) if found else None
    limits = [x for x in (trained, num_ctx) if x]
    if not limits:
        raise UnknownModelError("the /api/show response has neither <arch>.context_length nor num_ctx")
    return min(limits)
