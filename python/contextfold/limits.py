"""Context limits: how many tokens a model accepts.

``context_window(model)`` looks the model up in the core's model table (``model_info``); ``ollama_context_window(show)`` reads
the effective limit of a local Ollama model from its ``/api/show`` response.
"""

from __future__ import annotations

import re
from typing import Any

from contextfold.errors import UnknownModelError
from contextfold.model_info import model_info

__all__ = ["context_window", "ollama_context_window"]

def context_window(model: str) -> int:
    """Context window of ``model`` in tokens (for Gemini, the input token limit), from the model
    table of the Rust core (``src/model_info.rs``, sources cited there): the same resolution as
    ``model_info(model).context_window``.

    Dated snapshots, routing and vendor prefixes (``openai/``, ``google/``, ``openrouter/``,
    ``models/``), fine-tuned names (``ft:gpt-4o-mini:...``) and Bedrock / Vertex ids resolve to
    their family. Raises ``UnknownModelError`` for a model not in the table: pass
    ``context_window=`` explicitly then.
    """
    if not isinstance(model, str):
        raise TypeError(f"model must be a string, got {type(model).__name__}")
    window = model_info(model).context_window
    if window is None:
        raise UnknownModelError(f"unknown context window for model {model!r}; pass context_window=")
    return window


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
