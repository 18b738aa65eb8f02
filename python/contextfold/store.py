"""Session state shared by the replicas of an agent server: one Redis key per conversation.

A conversation's turns may land on any replica, and workers restart. ``RedisSessionStore``
keeps each conversation's ``Session.to_state()`` under ``prefix + conversation`` and changes it
with optimistic concurrency: ``update`` WATCHes the key, loads the state, runs your function on
the session, and writes the new state in a MULTI/EXEC transaction that fails if anyone wrote the
key in between; it then reloads and runs your function again. Two replicas updating one
conversation at once therefore never lose an update (both usages are recorded, in some order).

Redis unreachable: ``SessionStoreError`` (a ``ConnectionError``) with the redis-py error chained,
by default. With ``on_unavailable="fresh"`` (the documented degraded mode) ``update`` runs your
function on a new session built by ``new()`` and saves nothing: its estimates are the
uncalibrated heuristic (what a first turn gets), never numbers derived from a stale state.

Needs redis-py: ``pip install '.[redis]'`` in a checkout.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from contextfold.errors import SessionStateError, SessionStoreError
from contextfold.session import Session

if TYPE_CHECKING:  # pragma: no cover
    import redis

__all__ = ["RedisSessionStore"]

log = logging.getLogger("contextfold.store")

T = TypeVar("T")

#: Attempts of one ``update`` before giving up under contention. Each attempt that fails lost a
#: race to a write that succeeded, so this bounds the time, not the correctness.
DEFAULT_MAX_ATTEMPTS = 64


def _redis() -> Any:
    try:
        import redis
    except ImportError as e:  # pragma: no cover - exercised only without the extra
        raise ImportError(
            "RedisSessionStore needs redis-py: pip install '.[redis]' in a checkout of contextfold, or pip install redis"
        ) from e
    return redis


class RedisSessionStore:
    """Per-conversation ``Session`` state in Redis, updated atomically.

    ``client`` is a ``redis.Redis`` (``decode_responses`` must be False: states are bytes), or
    give ``url`` (``"redis://localhost:6379/0"``). Keys are ``prefix + conversation``; ``ttl``
    (seconds, None for no expiry) is renewed at every save. ``on_invalid_state``: what a state
    that ``Session.from_state`` refuses (another contextfold version, corrupted) does: "raise"
    (``SessionStateError``) or "reset" (start the conversation's ledger afresh with ``new()``,
    logged as a warning). ``on_unavailable``: "raise" (``SessionStoreError``) or "fresh" (see
    the module docs).
    """

    def __init__(
        self,
        client: redis.Redis | None = None,
        *,
        url: str | None = None,
        prefix: str = "contextfold:session:",
        ttl: int | None = 7 * 24 * 3600,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        on_invalid_state: Literal["raise", "reset"] = "raise",
        on_unavailable: Literal["raise", "fresh"] = "raise",
    ) -> None:
        r = _redis()
        if client is None:
            if url is None:
                raise TypeError("pass a redis client or url=")
            client = r.Redis.from_url(url)
        elif url is not None:
            raise TypeError("pass either a client or url=, not both")
        if on_invalid_state not in ("raise", "reset"):
            raise ValueError(f"on_invalid_state must be 'raise' or 'reset', got {on_invalid_state!r}")
        if on_unavailable not in ("raise", "fresh"):
            raise ValueError(f"on_unavailable must be 'raise' or 'fresh', got {on_unavailable!r}")
        if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, int) or ttl <= 0):
            raise ValueError(f"ttl must be a positive int (seconds) or None, got {ttl!r}")
        if isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or max_attempts < 1:
            raise ValueError(f"max_attempts must be an int >= 1, got {max_attempts!r}")
        self.client = client
        self.prefix = prefix
        self.ttl = ttl
        self.max_attempts = max_attempts
        self.on_invalid_state = on_invalid_state
        self.on_unavailable = on_unavailable
        self._errors = (r.exceptions.ConnectionError, r.exceptions.TimeoutError)
        self._watch_error = r.exceptions.WatchError

    def key(self, conversation: str) -> str:
        """The Redis key of a conversation."""
        if not isinstance(conversation, str) or not conversation:
            raise ValueError("conversation must be a non-empty str")
        return self.prefix + conversation

    def _unavailable(self, e: Exception, what: str) -> SessionStoreError:
        return SessionStoreError(f"redis unavailable while {what}: {e}")

    def _restore(self, data: Any, new: Callable[[], Session] | None, key: str) -> Session | None:
        if data is None:
            return None if new is None else new()
        if not isinstance(data, bytes):
            raise TypeError(
                f"{key}: redis returned {type(data).__name__}, not bytes: "
                "create the client with decode_responses=False"
            )
        try:
            return Session.from_state(data)
        except SessionStateError:
            if self.on_invalid_state == "raise" or new is None:
                raise
            log.warning("state of %s refused (%s): starting the session afresh", key, "invalid")
            return new()

    def load(self, conversation: str) -> Session | None:
        """The conversation's session, or None when nothing is stored."""
        key = self.key(conversation)
        try:
            data = self.client.get(key)
        except self._errors as e:
            raise self._unavailable(e, f"loading {key}") from e
        return self._restore(data, None, key)

    def save(self, conversation: str, session: Session) -> None:
        """Store ``session`` for the conversation, overwriting whatever is there (use ``update``
        when replicas may write the same conversation concurrently)."""
        key = self.key(conversation)
        try:
            self.client.set(key, session.to_state(), ex=self.ttl)
        except self._errors as e:
            raise self._unavailable(e, f"saving {key}") from e

    def delete(self, conversation: str) -> None:
        """Forget the conversation's state."""
        key = self.key(conversation)
        try:
            self.client.delete(key)
        except self._errors as e:
            raise self._unavailable(e, f"deleting {key}") from e

    def update(self, conversation: str, fn: Callable[[Session], T], /, *, new: Callable[[], Session]) -> T:
        """Run ``fn`` on the conversation's session and save the result atomically; returns what
        ``fn`` returned.

        ``new()`` builds the session of a conversation that has none yet. ``fn`` may run more
        than once (again on the freshly stored state each time another replica wrote the
        conversation first), so it should only act on the session it is given. Raises
        ``SessionStoreError`` when redis is unreachable (unless ``on_unavailable="fresh"``) or
        when ``max_attempts`` attempts all lost a race.
        """
        key = self.key(conversation)
        try:
            return self._update(key, fn, new)
        except self._errors as e:
            if self.on_unavailable == "raise":
                raise self._unavailable(e, f"updating {key}") from e
            log.warning("redis unavailable (%s): %s runs on a fresh, unsaved session", e, key)
            return fn(new())

    def _update(self, key: str, fn: Callable[[Session], T], new: Callable[[], Session]) -> T:
        for attempt in range(self.max_attempts):
            with self.client.pipeline(transaction=True) as pipe:
                try:
                    pipe.watch(key)
                    session = self._restore(pipe.get(key), new, key)
                    assert session is not None
                    result = fn(session)
                    state = session.to_state()
                    pipe.multi()
                    pipe.set(key, state, ex=self.ttl)
                    pipe.execute()
                    return result
                except self._watch_error:
                    log.debug("%s: lost a race (attempt %d), retrying on the new state", key, attempt + 1)
                    continue
        raise SessionStoreError(f"{key}: {self.max_attempts} attempts all lost a race to other writers")
