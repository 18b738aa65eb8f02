"""Helpers of the reliability tests: every public call over one history, and a deep snapshot of
the caller's data to prove no call changed it.

Adding a public call to the hostile-input and property tests is one line in ``CALLS``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import contextfold as cf

MODEL = "gpt-4o"


def _session_calls(ms: Any) -> Any:
    s = cf.Session(model=MODEL, max_request_bytes=1 << 30)
    out = [s.estimate(ms), s.pressure(ms), s.should_compact(ms), s.wire_bytes(ms)]
    out.append(s.record_usage({"prompt_tokens": 1000}, ms))
    out.append(s.estimate(ms))
    out.append(cf.Session.from_state(s.to_state()).estimate(ms))
    s.invalidate(0)
    s.reset()
    return out


def _compact(ms: Any) -> Any:
    """A compaction to a small budget; a budget no history can meet is a defined outcome."""
    try:
        return cf.Compactor(model=MODEL, budget=60, tail_tokens=30, strategy="hybrid").compact(ms).messages
    except cf.CompactionBudgetError as e:
        return ("over budget", e.tokens)


#: name -> call over one history. Every public entry point that reads a history is here.
CALLS: dict[str, Callable[[Any], Any]] = {
    "estimate": lambda ms: cf.estimate(ms, model=MODEL),
    "estimate_each": lambda ms: cf.estimate_each(ms, model=MODEL),
    "estimate_many": lambda ms: cf.estimate_many([ms, ms], model=MODEL, threads=2),
    "count": lambda ms: cf.count(ms, model=MODEL),
    "count_each": lambda ms: cf.count_each(ms, model=MODEL),
    "count_many": lambda ms: cf.count_many([ms], model=MODEL, threads=1),
    "wire_bytes": lambda ms: cf.wire_bytes(ms),
    "find_tail_start": lambda ms: cf.find_tail_start(ms, budget_tokens=50),
    "prune": lambda ms: cf.prune(ms, protect_tail_tokens=50, tool_result_max_tokens=5, arguments_max_chars=80),
    "session": _session_calls,
    "compact": lambda ms: _compact(ms),
}

#: Calls over a provider's own wire format (the estimator reads every format; the exact
#: counter is OpenAI chat only).
ESTIMATE_CALLS = ("estimate", "estimate_each", "estimate_many", "wire_bytes", "find_tail_start", "prune", "session", "compact")


class Cycle:
    """Marks where a snapshot met a container again inside itself."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Cycle)

    def __repr__(self) -> str:
        return "<cycle>"


def snapshot(v: Any, _path: tuple[int, ...] = ()) -> Any:
    """A deep, comparable copy of the caller's data: containers by content and order (their
    types kept), floats by bits (NaN equals NaN), cycles as markers, other objects by identity
    and their ``__dict__``. Reading it never runs user code except ``__dict__`` access."""
    if id(v) in _path:
        return Cycle()
    path = (*_path, id(v))
    if isinstance(v, float):
        return ("float", "nan" if math.isnan(v) else v.hex())
    if isinstance(v, (str, bytes, int, type(None))):
        return (type(v).__name__, v)
    if isinstance(v, dict):
        return (type(v), id(v), [(snapshot(k, path), snapshot(x, path)) for k, x in list(dict.items(v))])
    if isinstance(v, (list, tuple)):
        return (type(v), id(v), [snapshot(x, path) for x in list(v)])
    if isinstance(v, bytearray):
        return ("bytearray", bytes(v))
    try:
        d = object.__getattribute__(v, "__dict__")
    except AttributeError:
        d = None
    return ("obj", type(v), id(v), None if d is None else snapshot(d, path))


def call_all(ms: Any, names: tuple[str, ...] | None = None) -> dict[str, Any]:
    """Run every call (or ``names``) on ``ms``: name -> result or the exception raised. Fails
    (AssertionError) if a call changed the caller's data, or raised something that is not an
    ``Exception`` (a PanicException derives from BaseException)."""
    out: dict[str, Any] = {}
    for name in names or tuple(CALLS):
        before = snapshot(ms)
        try:
            out[name] = CALLS[name](ms)
        except Exception as e:  # noqa: BLE001 - the tests judge the type
            out[name] = e
        except BaseException as e:  # PanicException, RecursionError is an Exception
            raise AssertionError(f"{name} raised {type(e).__name__} (not an Exception): {e}") from e
        assert snapshot(ms) == before, f"{name} changed the caller's data"
    return out
