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

States are checksummed, which catches corruption but not forgery: anyone who can write the
key could write a valid state. Pass ``secret=`` to sign every state with HMAC-SHA256; a state
without a valid signature is then refused like a corrupted one. ``AsyncRedisSessionStore`` is
the same store on ``redis.asyncio`` for asyncio servers.

Needs redis-py: ``pip install '.[redis]'`` in a checkout.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from contextfold.errors import SessionStateError, SessionStoreError
from contextfold.session import Session

if TYPE_CHECKING:  # pragma: no cover
    import redis

__all__ = ["AsyncRedisSessionStore", "RedisSessionStore", "StateCodec"]

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


#: Prefix of a signed state: the tag, then the 32-byte HMAC-SHA256 of the state, then the state.
_SIGNED = b"CFMAC1"


class StateCodec:
    """What both stores share: checking the options, signing states with the ``secret``,
    reading what Redis returned (refused or reset, per ``on_invalid_state``)."""

    def __init__(self, *, secret: bytes | str | None, on_invalid_state: str, on_unavailable: str,
                 ttl: int | None, max_attempts: int) -> None:
        if on_invalid_state not in ("raise", "reset"):
            raise ValueError(f"on_invalid_state must be 'raise' or 'reset', got {on_invalid_state!r}")
        if on_unavailable not in ("raise", "fresh"):
            raise ValueError(f"on_unavailable must be 'raise' or 'fresh', got {on_unavailable!r}")
        if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, int) or ttl <= 0):
            raise ValueError(f"ttl must be a positive int (seconds) or None, got {ttl!r}")
        if isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or max_attempts < 1:
            raise ValueError(f"max_attempts must be an int >= 1, got {max_attempts!r}")
        if isinstance(secret, str):
            secret = secret.encode("utf-8")
        if secret is not None and (not isinstance(secret, bytes) or len(secret) < 16):
            raise ValueError("secret must be bytes or str of at least 16 bytes (e.g. secrets.token_bytes(32))")
        self.secret = secret
        self.on_invalid_state = on_invalid_state
        self.on_unavailable = on_unavailable

    @staticmethod
    def refuse_decoding_client(client: Any) -> None:
        """A client that decodes replies to str would hand back text, not a state's bytes."""
        kwargs = getattr(getattr(client, "connection_pool", None), "connection_kwargs", None) or {}
        if kwargs.get("decode_responses"):
            raise ValueError("the redis client decodes responses (decode_responses=True): session states are "
                             "bytes; create it with decode_responses=False")

    def dump(self, session: Session) -> bytes:
        """The session's state as stored: signed when there is a secret."""
        state = session.to_state()
        if self.secret is None:
            return state
        return _SIGNED + hmac.new(self.secret, state, hashlib.sha256).digest() + state

    def _unsigned(self, data: bytes, key: str) -> bytes:
        if self.secret is None:
            return data
        if not data.startswith(_SIGNED) or len(data) < len(_SIGNED) + 32:
            raise SessionStateError(f"{key}: session state not signed with the store's secret")
        mac, state = data[len(_SIGNED):len(_SIGNED) + 32], data[len(_SIGNED) + 32:]
        if not hmac.compare_digest(mac, hmac.new(self.secret, state, hashlib.sha256).digest()):
            raise SessionStateError(f"{key}: session state signature does not match the store's secret")
        return state

    def restore(self, data: Any, new: Callable[[], Session] | None, key: str, *, wrong_type: bool = False) -> Session | None:
        """The session of what Redis returned for ``key`` (None: nothing stored and no ``new``)."""
        try:
            if wrong_type:
                raise SessionStateError(f"{key} holds a redis value of another type than a string")
            if data is None:
                return None if new is None else new()
            if not isinstance(data, bytes):
                raise SessionStateError(f"{key}: redis returned {type(data).__name__}, not bytes "
                                        "(create the client with decode_responses=False)")
            return Session.from_state(self._unsigned(data, key))
        except SessionStateError as e:
            if self.on_invalid_state == "raise" or new is None:
                raise
            log.warning("state of %s refused (%s): starting the session afresh", key, e)
            return new()


def _is_wrong_type(e: Exception) -> bool:
    return str(e).startswith("WRONGTYPE")


class _RedisStore:
    """What the sync and async Redis stores share: options, keys, the codec and the errors."""

    def __init__(
        self,
        client: Any,
        connect: Callable[[str], Any],
        *,
        url: str | None,
        prefix: str,
        ttl: int | None,
        max_attempts: int,
        on_invalid_state: Literal["raise", "reset"],
        on_unavailable: Literal["raise", "fresh"],
        secret: bytes | str | None,
    ) -> None:
        r = _redis()
        self.codec = StateCodec(secret=secret, on_invalid_state=on_invalid_state, on_unavailable=on_unavailable,
                                ttl=ttl, max_attempts=max_attempts)
        if client is None:
            if url is None:
                raise TypeError("pass a redis client or url=")
            client = connect(url)
        elif url is not None:
            raise TypeError("pass either a client or url=, not both")
        StateCodec.refuse_decoding_client(client)
        self.client = client
        self.url = url
        self.prefix = prefix
        self.ttl = ttl
        self.max_attempts = max_attempts
        self.on_invalid_state = on_invalid_state
        self.on_unavailable = on_unavailable
        self._errors = (r.exceptions.ConnectionError, r.exceptions.TimeoutError)
        self._watch_error = r.exceptions.WatchError
        self._response_error = r.exceptions.ResponseError

    def __reduce__(self) -> tuple[Any, tuple[()]]:
        # A store goes to worker processes by pickle: it is made there again from its url and
        # options (a client holds sockets and locks, which no pickle carries).
        from contextfold.content_store import _url_to_pickle

        return functools.partial(type(self), url=_url_to_pickle(self), prefix=self.prefix, ttl=self.ttl,
                                 max_attempts=self.max_attempts, on_invalid_state=self.on_invalid_state,
                                 on_unavailable=self.on_unavailable, secret=self.codec.secret), ()

    def key(self, conversation: str) -> str:
        """The Redis key of a conversation."""
        if not isinstance(conversation, str) or not conversation:
            raise ValueError("conversation must be a non-empty str")
        return self.prefix + conversation

    def _unavailable(self, e: Exception, what: str) -> SessionStoreError:
        return SessionStoreError(f"redis unavailable while {what}: {e}")

    def _lost_races(self, key: str) -> SessionStoreError:
        return SessionStoreError(f"{key}: {self.max_attempts} attempts all lost a race to other writers")


class RedisSessionStore(_RedisStore):
    """Per-conversation ``Session`` state in Redis, updated atomically.

    ``client`` is a ``redis.Redis`` (``decode_responses`` must be False: states are bytes; a
    decoding client is refused with a ValueError), or give ``url`` (``"redis://localhost:6379/0"``).
    Keys are ``prefix + conversation``; ``ttl`` (seconds, None for no expiry) is renewed at every
    save. ``on_invalid_state``: what a state that ``Session.from_state`` refuses (another
    contextfold version, corrupted, unsigned or wrongly signed, a key of another Redis type)
    does: "raise" (``SessionStateError``) or "reset" (start the conversation's ledger afresh with
    ``new()``, logged as a warning; the next save overwrites the key). ``on_unavailable``:
    "raise" (``SessionStoreError``) or "fresh" (see the module docs). ``secret`` (bytes or str,
    at least 16 bytes): sign every state with HMAC-SHA256 and refuse any state not signed with
    it.
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
        secret: bytes | str | None = None,
    ) -> None:
        super().__init__(client, lambda u: _redis().Redis.from_url(u), url=url, prefix=prefix, ttl=ttl,
                         max_attempts=max_attempts, on_invalid_state=on_invalid_state,
                         on_unavailable=on_unavailable, secret=secret)

    def load(self, conversation: str) -> Session | None:
        """The conversation's session, or None when nothing is stored."""
        key = self.key(conversation)
        try:
            data = self.client.get(key)
        except self._errors as e:
            raise self._unavailable(e, f"loading {key}") from e
        except self._response_error as e:
            if not _is_wrong_type(e):
                raise
            return self.codec.restore(None, None, key, wrong_type=True)
        return self.codec.restore(data, None, key)

    def save(self, conversation: str, session: Session) -> None:
        """Store ``session`` for the conversation, overwriting whatever is there (use ``update``
        when replicas may write the same conversation concurrently)."""
        key = self.key(conversation)
        try:
            self.client.set(key, self.codec.dump(session), ex=self.ttl)
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
                    try:
                        data, wrong = pipe.get(key), False
                    except self._response_error as e:
                        if not _is_wrong_type(e):
                            raise
                        data, wrong = None, True
                    session = self.codec.restore(data, new, key, wrong_type=wrong)
                    assert session is not None
                    result = fn(session)
                    state = self.codec.dump(session)
                    pipe.multi()
                    pipe.set(key, state, ex=self.ttl)
                    pipe.execute()
                    return result
                except self._watch_error:
                    log.debug("%s: lost a race (attempt %d), retrying on the new state", key, attempt + 1)
                    continue
        raise self._lost_races(key)


class AsyncRedisSessionStore(_RedisStore):
    """``RedisSessionStore`` for asyncio servers, on a ``redis.asyncio.Redis`` client (or
    ``url=``): the same keys, states, signatures and options; ``load``, ``save``, ``delete``
    and ``update`` are coroutines (``update``'s ``fn`` stays a plain function: it runs between
    the WATCH and the transaction, and should not await)."""

    def __init__(
        self,
        client: Any = None,
        *,
        url: str | None = None,
        prefix: str = "contextfold:session:",
        ttl: int | None = 7 * 24 * 3600,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        on_invalid_state: Literal["raise", "reset"] = "raise",
        on_unavailable: Literal["raise", "fresh"] = "raise",
        secret: bytes | str | None = None,
    ) -> None:
        _redis()  # the extra's clear error first
        import redis.asyncio as aredis

        super().__init__(client, aredis.Redis.from_url, url=url, prefix=prefix, ttl=ttl,
                         max_attempts=max_attempts, on_invalid_state=on_invalid_state,
                         on_unavailable=on_unavailable, secret=secret)

    async def load(self, conversation: str) -> Session | None:
        """The conversation's session, or None when nothing is stored."""
        key = self.key(conversation)
        try:
            data = await self.client.get(key)
        except self._errors as e:
            raise self._unavailable(e, f"loading {key}") from e
        except self._response_error as e:
            if not _is_wrong_type(e):
                raise
            return self.codec.restore(None, None, key, wrong_type=True)
        return self.codec.restore(data, None, key)

    async def save(self, conversation: str, session: Session) -> None:
        """Store ``session`` for the conversation, overwriting whatever is there."""
        key = self.key(conversation)
        try:
            await self.client.set(key, self.codec.dump(session), ex=self.ttl)
        except self._errors as e:
            raise self._unavailable(e, f"saving {key}") from e

    async def delete(self, conversation: str) -> None:
        """Forget the conversation's state."""
        key = self.key(conversation)
        try:
            await self.client.delete(key)
        except self._errors as e:
            raise self._unavailable(e, f"deleting {key}") from e

    async def update(self, conversation: str, fn: Callable[[Session], T], /, *, new: Callable[[], Session]) -> T:
        """As ``RedisSessionStore.update``: ``fn`` on the conversation's session, saved atomically
        (WATCH / MULTI / EXEC, rerun on the new state when another writer won)."""
        key = self.key(conversation)
        try:
            for attempt in range(self.max_attempts):
                async with self.client.pipeline(transaction=True) as pipe:
                    try:
                        await pipe.watch(key)
                        try:
                            data, wrong = await pipe.get(key), False
                        except self._response_error as e:
                            if not _is_wrong_type(e):
                                raise
                            data, wrong = None, True
                        session = self.codec.restore(data, new, key, wrong_type=wrong)
                        assert session is not None
                        result = fn(session)
                        state = self.codec.dump(session)
                        pipe.multi()
                        pipe.set(key, state, ex=self.ttl)
                        await pipe.execute()
                        return result
                    except self._watch_error:
                        log.debug("%s: lost a race (attempt %d), retrying on the new state", key, attempt + 1)
                        continue
        except self._errors as e:
            if self.on_unavailable == "raise":
                raise self._unavailable(e, f"updating {key}") from e
            log.warning("redis unavailable (%s): %s runs on a fresh, unsaved session", e, key)
            return fn(new())
        raise self._lost_races(key)
