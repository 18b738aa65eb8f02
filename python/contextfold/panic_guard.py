"""No Rust panic escapes as pyo3's ``PanicException``: the public Python entry points turn one
into ``contextfold.errors.InternalError`` (an ``Exception``), so ``except Exception`` in a
caller's server sees it and the process goes on.

The guard wraps Python-level entry points (Compactor, prune, breakdown), whose own cost dwarfs
one frame; the bare core functions (``estimate``, ``count``...) are left unwrapped, since a
Python frame would add ~60% to a 0.6 µs call; the fuzz targets cover them instead.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar, cast

from contextfold.errors import InternalError

F = TypeVar("F", bound=Callable[..., Any])


def is_panic(e: BaseException) -> bool:
    """True for pyo3's PanicException (its class lives in ``pyo3_runtime``)."""
    return type(e).__name__ == "PanicException" and type(e).__module__ == "pyo3_runtime"


def converted(e: BaseException, where: str) -> InternalError:
    """The InternalError for a panic ``e`` raised under ``where``."""
    return InternalError(str(e) or "panic", where)


def no_panic(fn: F) -> F:
    """``fn`` (sync or async) with a core panic raised as InternalError naming ``fn``."""
    where = fn.__qualname__
    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def awrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                return await fn(*args, **kwargs)
            except BaseException as e:
                if is_panic(e):
                    raise converted(e, where) from e
                raise

        return cast(F, awrapper)

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except BaseException as e:
            if is_panic(e):
                raise converted(e, where) from e
            raise

    return cast(F, wrapper)
