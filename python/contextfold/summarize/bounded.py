"""A bounded thread pool of contextfold's own for sync summarizers called from asyncio.

``asyncio.to_thread`` uses the loop's default executor, shared with the whole process: a sync
LLM call that is cancelled keeps its worker thread until the call returns, and a handful of
those starve every other ``to_thread`` of the application. contextfold's sync calls run here
instead, so a stuck call can only hold one of these workers; LLM calls also stop at their own
deadline, and at once when the awaiting task is cancelled (``run_bounded``'s ``stop`` event).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

__all__ = ["MAX_WORKERS", "run_bounded"]

T = TypeVar("T")

#: Sync summarizer calls running at once, process-wide; more wait their turn.
MAX_WORKERS = 8

_pool: ThreadPoolExecutor | None = None
_lock = threading.Lock()


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=MAX_WORKERS, thread_name_prefix="contextfold-summarize")
        return _pool


async def run_bounded(fn: Callable[..., T], /, *args: Any, stop: threading.Event | None = None, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` on contextfold's own bounded pool, awaited. When the awaiting task
    is cancelled, ``stop`` (if given) is set, so a function that checks it stops its work."""
    loop = asyncio.get_running_loop()
    ctx = contextvars.copy_context()
    call = functools.partial(ctx.run, fn, *args, **kwargs)
    future = loop.run_in_executor(_executor(), call)
    try:
        return await future
    except asyncio.CancelledError:
        if stop is not None:
            stop.set()
        raise
