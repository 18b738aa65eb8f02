"""Checks of the integer options of the public API, shared by its Python wrappers.

A bool is not a count (``True`` would silently mean 1); a negative count is a ValueError (the
extension's own conversion would raise OverflowError, which ``except ValueError`` misses); a
count beyond any real history or budget is clamped to ``HUGE`` (2**62), which means the same
thing ("all of it") and stays clear of overflow in every sum the core computes.
"""

from __future__ import annotations

from typing import Any

#: Larger than any token budget, message count or character cap can matter.
HUGE = 1 << 62


def count_arg(name: str, value: Any, *, minimum: int = 0) -> int:
    """``value`` as a non-negative int option named ``name`` (clamped to ``HUGE``)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return min(int(value), HUGE)
