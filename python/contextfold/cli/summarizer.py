"""The ``--summarizer`` option of ``contextfold compact`` and ``contextfold eval``."""

from __future__ import annotations

from typing import Any

import typer

import contextfold

__all__ = ["summarizer_from"]


def summarizer_from(spec: str, window: int | None) -> Any:
    """``extractive`` or ``PROVIDER:MODEL`` (openai, anthropic, gemini, ollama) as a summarizer;
    a usage error (exit 2) naming what is missing: the SDK, its API key, the model's window."""
    if spec == "extractive":
        return contextfold.ExtractiveSummarizer()
    name, sep, model = spec.partition(":")
    if not sep or not model or name not in ("openai", "anthropic", "gemini", "ollama"):
        raise typer.BadParameter(
            f"expected 'extractive' or PROVIDER:MODEL with PROVIDER one of openai, anthropic, gemini, ollama; got {spec!r}",
            param_hint="--summarizer",
        )
    try:
        return contextfold.LLMSummarizer(name, model, context_window=window)
    except contextfold.UnknownModelError:
        raise typer.BadParameter(
            f"unknown context window for summarizer model {model!r}: give it with --summarizer-window TOKENS",
            param_hint="--summarizer",
        ) from None
    except ImportError as e:
        raise typer.BadParameter(str(e), param_hint="--summarizer") from None
    except Exception as e:  # noqa: BLE001 - the SDK's own error when its client cannot be built
        # openai.OpenAIError, anthropic's: most often the API key is not set.
        raise typer.BadParameter(
            f"cannot build the {name} client: {type(e).__name__}: {e}", param_hint="--summarizer"
        ) from None
