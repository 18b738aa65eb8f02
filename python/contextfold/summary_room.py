"""The room a summary gets when the Compactor folds, and the identifier index appended to it.

Rule: the summary takes what the budget leaves once the head, the kept messages, the tail and
the summary's envelope are priced (``plan["fixed_tokens"]``), less a small margin for the
difference between pricing a text line by line and as one message; ``summary_max_tokens``
caps it. The planned share (``plan["summary_tokens"]``) is its floor.

Every summary ends with the identifier index (``contextfold._core.identifier_index``): the
extractive digest writes its own; any other summarizer's text gets one appended here, in the
room its text left (at least ``INDEX_SHARE`` of the room), with the previous summary's index
carried first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from contextfold import _core

__all__ = ["INDEX_SHARE", "index_share", "neutralize_markers", "strip_index", "summary_room", "with_index"]

#: Share of the summary's room the identifier index is sure to get.
INDEX_SHARE = 0.25
#: Margin (share of the room, plus tokens) left for line-by-line versus whole-message pricing.
_MARGIN_SHARE = 0.02
_MARGIN_TOKENS = 8


def summary_room(plan: Mapping[str, Any], budget: int, cap: int | None) -> int:
    """Tokens the summary text may take: the budget less everything else, capped by ``cap``."""
    planned = int(plan["summary_tokens"])
    left = budget - int(plan["fixed_tokens"])
    room = max(planned, int(left * (1.0 - _MARGIN_SHARE)) - _MARGIN_TOKENS)
    return min(room, cap) if cap is not None else room


def index_share(room: int) -> int:
    """Tokens kept for the identifier index out of a summary's ``room``."""
    return int(room * INDEX_SHARE)


def strip_index(summary: str) -> str:
    """``summary`` without its identifier index section (what a model is asked to update)."""
    at = summary.rfind(_core.IDENTIFIER_INDEX_HEADING)
    return summary[:at].rstrip() if at >= 0 else summary


def _text_tokens(text: str, provider: str, model: str | None) -> int:
    one = _core.estimate_each([{"role": "user", "content": text}, {"role": "user", "content": ""}],
                              provider=provider, model=model)  # type: ignore[arg-type]
    return max(0, int(one[0]) - int(one[1]))


def with_index(text: str, folded: Sequence[Any], *, provider: str, model: str | None, previous: str | None,
               room: int) -> str:
    """``text`` ending with the identifier index of ``folded`` (and of ``previous``), within
    ``room`` tokens in all; unchanged when it already has one."""
    if _core.IDENTIFIER_INDEX_HEADING in text:
        return text
    provider = provider if provider in _core.PROVIDERS else "openai"
    left = max(index_share(room), room - _text_tokens(text, provider, model) - 4)
    index = _core.identifier_index(folded, max_tokens=left, provider=provider, model=model,  # type: ignore[arg-type]
                                   previous=previous)
    return f"{text}\n\n{index}" if index else text


def neutralize_markers(text: str) -> str:
    """``text`` with the summary markers made inert (a folded tool output may quote them): only
    the markers the Compactor writes around a summary open and close it."""
    open_, close = _core.SUMMARY_MARKERS
    return text.replace(close, close.replace("<", "‹", 1)).replace(open_, open_.replace("<", "‹", 1))
