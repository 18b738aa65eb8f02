"""What a model name says about billing: token family, public tokenizer, context window.

``provider=`` says how a history is read (the wire format); ``model=`` says how it costs. A
Gemini model behind an OpenAI-compatible router is priced with Gemini's tokenizer density, a
Llama model on Groq with Llama's. ``model_info`` shows what was assumed for a name.
"""

from __future__ import annotations

from dataclasses import dataclass

import warnings

from contextfold._core import _model_info
from contextfold.errors import UnknownModelError, UnknownModelWarning

__all__ = ["ModelInfo", "check_model", "model_info"]


@dataclass(frozen=True, slots=True)
class ModelInfo:
    """How contextfold resolved a model name.

    ``family``: ``"openai"``, ``"anthropic"``, ``"gemini"``, ``"gemma"``, ``"llama"``, ``"qwen"``,
    ``"mistral"``, ``"deepseek"``, ``"nova"``, ``"cohere"``, ``"glm"``, ``"kimi"``,
    ``"minimax"``, ``"grok"`` or ``"unknown"`` (then the estimate uses the provider's default
    family: OpenAI's for ``provider="openai"``, a generic profile for ``"openai-compatible"``).
    ``encoding``: the tiktoken encoding name when the tokenizer is public (OpenAI models), else
    None. ``context_window``: total tokens (Gemini: the input limit), None when unknown.
    ``base``: the name after routing prefixes, vendor segments, tags and dates were stripped;
    ``matched``: the table entry of the context window; ``resolved``: one line saying how.
    ``unknown_overheads``: hidden costs priced by a fitted average or not priced (chat
    template, tool-use prompt, tokenizer; for Gemini: ``"serving platform"`` when the name does
    not say whether the Gemini API or Vertex AI serves it). ``platform``: ``"gemini-api"`` or
    ``"vertex-ai"`` when a routing prefix names it (``gemini/``, ``google-gla:``, ``models/``;
    ``vertex_ai/``, ``google-vertex:``, ``projects/.../publishers/google/models/``), else None:
    the two bill the same Gemini request differently (Vertex AI prices function declarations
    and calls lower, and does not bill thought signatures sent back). For a bare Gemini 3 name
    the estimators read the platform off the history's first thought signature (the two
    platforms issue signatures of different shapes); a first turn has none yet.
    """

    model: str
    base: str
    family: str
    encoding: str | None
    context_window: int | None
    matched: str | None
    resolved: str
    unknown_overheads: tuple[str, ...]
    platform: str | None = None


def model_info(model: str) -> ModelInfo:
    """Resolve ``model`` (any spelling: ``openrouter/google/gemini-2.5-pro``,
    ``us.anthropic.claude-sonnet-4-5-20250929-v1:0``, ``ollama/qwen3:0.6b``, ``ft:gpt-4o-mini:...``).
    Never raises for an unknown name: its family is ``"unknown"``. Raises TypeError for a
    non-string."""
    if not isinstance(model, str):
        raise TypeError(f"model must be a string, got {type(model).__name__}")
    name, base, family, encoding, window, matched, resolved, unknown, platform = _model_info(model)
    return ModelInfo(
        model=name,
        base=base,
        family=family,
        encoding=encoding,
        context_window=window,
        matched=matched,
        resolved=resolved,
        unknown_overheads=tuple(unknown),
        platform=platform,
    )


def check_model(model: str | None, *, strict: bool = False, stacklevel: int = 2) -> None:
    """Say when ``model`` is a name contextfold does not recognise (priced with the provider's
    default constants): an ``UnknownModelWarning``, or ``UnknownModelError`` when ``strict``.
    None (no model given) says nothing."""
    if model is None:
        return
    info = model_info(model)
    if info.family != "unknown":
        return
    message = (f"unknown model {model!r}: priced with the provider's default constants "
               "(check the spelling; contextfold.model_info shows what a name resolves to)")
    if strict:
        raise UnknownModelError(message)
    warnings.warn(message, UnknownModelWarning, stacklevel=stacklevel + 1)
