"""Where recoverable folds keep what they removed: text under a stable short id.

A ``Compactor(recoverable=True)`` puts every masked tool output, cleared tool input, dropped
image and folded span into a ``ContentStore`` under the id its placeholder names (``cf`` + 12
hex digits of a hash of the text: the same text always gets the same id, so storing it twice
costs nothing and a placeholder folded again keeps its id). ``compactor.recall(id)`` and the
recall tool read it back.

Three stores, one protocol (``put(id, text)``, ``get(id) -> str | None``):

- ``MemoryContentStore``: in-process, least recently used first out once over ``max_bytes``
  (UTF-8 bytes of the texts), entries older than ``ttl`` seconds forgotten. A Compactor given
  no store uses the process's own (``default_content_store()``): an id a Compactor named stays
  recallable by another made later in the same process (a caller that makes one per call),
  and the process holds at most its ``max_bytes`` of them, however many Compactors it makes.
- ``DirectoryContentStore``: one file per id under a directory, written atomically (a
  temporary file renamed into place), so a crash never leaves half a text and several
  processes may share it.
- ``RedisContentStore``: one Redis key per id (``prefix + id``) with a TTL; needs redis-py
  (``pip install '.[redis]'``).
"""

from __future__ import annotations

import functools
import logging
import os
import re
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:  # pragma: no cover
    import redis

__all__ = [
    "ContentStore",
    "CorruptEntryError",
    "DirectoryContentStore",
    "MemoryContentStore",
    "RedisContentStore",
    "default_content_store",
    "keep_text",
]

#: What an id looks like (the core's ``fold_id``); anything else is refused before it reaches a
#: file name or a Redis key.
_ID = re.compile(r"cf[0-9a-f]{12}")

log = logging.getLogger("contextfold")


def _check_id(fold_id: str) -> str:
    if not isinstance(fold_id, str) or not _ID.fullmatch(fold_id):
        raise ValueError(f"not a contextfold fold id: {fold_id!r} (expected 'cf' + 12 hex digits)")
    return fold_id


def keep_text(store: ContentStore, fold_id: str, text: str, /, *, promised: bool) -> None:
    """``store.put(fold_id, text)`` for a compaction. ``promised``: the output names the id to
    the model (``recoverable=True``), so a store that refuses the text raises (a placeholder
    naming an id nothing holds would promise what no recall can give). Otherwise only
    ``.notes`` name it, for the caller's ``recall``: a store that refuses it (a text over a
    ``MemoryContentStore``'s cap) is logged and passed over, and the compaction goes on."""
    if promised:
        store.put(fold_id, text)
        return
    try:
        store.put(fold_id, text)
    except ValueError as e:
        log.warning("content store did not keep %s (no model was promised it): %s", fold_id, e)


class PendingWrites:
    """A ``ContentStore`` that holds its puts back until ``commit()``: a step whose result its
    caller may still refuse (a cut in place that stands in for a fold, a fold a cut replaces)
    writes here, and the caller commits only what it returns. Written at once, a refused step's
    texts stayed in the store under ids no placeholder names: a ``DirectoryContentStore``'s
    orphan files, Redis's orphan keys. (The stored twin of ``_fold_clause``'s deferred ``keep``.)
    ``promised``: as ``keep_text`` says, for the commit."""

    def __init__(self, store: ContentStore, *, promised: bool) -> None:
        self.store = store
        self.promised = promised
        self._texts: dict[str, str] = {}

    def put(self, fold_id: str, text: str, /) -> None:
        """Hold ``text`` for ``commit`` (the id checked now, as every store checks it)."""
        self._texts[_check_id(fold_id)] = text

    def get(self, fold_id: str, /) -> str | None:
        """A text held here, else the store's."""
        held = self._texts.get(fold_id)
        return held if held is not None else self.store.get(fold_id)

    def held(self, fold_id: str, /) -> str | None:
        """The text held under ``fold_id`` (None: none held here)."""
        return self._texts.get(fold_id)

    def __len__(self) -> int:
        return len(self._texts)

    def commit(self, only: Mapping[str, bool] | None = None) -> None:
        """Write the texts held to the store (``keep_text``): all of them, or those ``only``
        names, each with its own ``promised`` (whether the output names it to the model); the
        rest are dropped. Nothing is held after."""
        texts, self._texts = self._texts, {}
        for fold_id, text in texts.items():
            if only is None:
                keep_text(self.store, fold_id, text, promised=self.promised)
            elif fold_id in only:
                keep_text(self.store, fold_id, text, promised=self.promised and only[fold_id])


class CorruptEntryError(ValueError):
    """A stored entry that cannot be read back as the text put there (a file or Redis value
    changed outside the store); the message names the file or key."""


@runtime_checkable
class ContentStore(Protocol):
    """Keeps folded text by id. ``put`` may drop old entries (a cache); ``get`` returns None
    for an id it does not hold."""

    def put(self, fold_id: str, text: str, /) -> None:
        """Keep ``text`` under ``fold_id``."""
        ...

    def get(self, fold_id: str, /) -> str | None:
        """The text kept under ``fold_id``, or None."""
        ...


class MemoryContentStore:
    """In-process store: least recently used entries go first once the texts exceed
    ``max_bytes`` (UTF-8 bytes; default 64 MiB), and entries older than ``ttl`` seconds
    (default one day; None: never) are forgotten. Thread-safe."""

    def __init__(self, *, max_bytes: int = 64 * 1024 * 1024, ttl: float | None = 24 * 3600.0) -> None:
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes <= 0:
            raise ValueError(f"max_bytes must be a positive int, got {max_bytes!r}")
        if ttl is not None and not ttl > 0:
            raise ValueError(f"ttl must be positive seconds or None, got {ttl!r}")
        self.max_bytes = max_bytes
        self.ttl = ttl
        #: Entries dropped to stay under ``max_bytes`` so far (a compaction that saw it grow
        #: checks that the ids it named are still held).
        self.evictions = 0
        self._items: OrderedDict[str, tuple[str, int, float]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def put(self, fold_id: str, text: str, /) -> None:
        """Keep ``text``. A text larger than ``max_bytes`` alone raises ValueError: dropped
        silently, the placeholder naming its id promised the model what no recall could give."""
        _check_id(fold_id)
        size = len(text.encode("utf-8"))
        if size > self.max_bytes:
            raise ValueError(f"a text of {size:,} bytes is over this MemoryContentStore's max_bytes "
                             f"({self.max_bytes:,}): raise max_bytes, or use a DirectoryContentStore")
        with self._lock:
            old = self._items.pop(fold_id, None)
            if old is not None:
                self._bytes -= old[1]
            self._items[fold_id] = (text, size, time.monotonic())
            self._bytes += size
            while self._bytes > self.max_bytes:
                _, (_, s, _) = self._items.popitem(last=False)
                self._bytes -= s
                self.evictions += 1

    def get(self, fold_id: str, /) -> str | None:
        """The text, or None when never kept, evicted or expired; ValueError for a string that
        is no fold id, as the other stores say."""
        _check_id(fold_id)
        with self._lock:
            item = self._items.get(fold_id)
            if item is None:
                return None
            text, size, at = item
            if self.ttl is not None and time.monotonic() - at > self.ttl:
                del self._items[fold_id]
                self._bytes -= size
                return None
            self._items.move_to_end(fold_id)
            return text

    def __len__(self) -> int:
        return len(self._items)

    def clear(self) -> None:
        """Forget every text."""
        with self._lock:
            self._items.clear()
            self._bytes = 0

    def __getstate__(self) -> dict[str, Any]:
        # A Compactor goes to worker processes by pickle: the texts travel, the lock is new.
        with self._lock:
            return {"max_bytes": self.max_bytes, "ttl": self.ttl, "items": list(self._items.items())}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.max_bytes = state["max_bytes"]
        self.ttl = state["ttl"]
        self._items = OrderedDict(state["items"])
        self._bytes = sum(size for _, size, _ in self._items.values())
        self.evictions = 0
        self._lock = threading.Lock()

    @property
    def nbytes(self) -> int:
        """UTF-8 bytes of the texts held."""
        return self._bytes

    def __repr__(self) -> str:
        return f"MemoryContentStore({len(self)} items, {self._bytes} of {self.max_bytes} bytes)"


class _ProcessContentStore(MemoryContentStore):
    """The process's own store (``default_content_store``). A Compactor that goes to another
    process by pickle takes no texts along: there it uses that process's own store."""

    def __reduce__(self) -> tuple[Any, tuple[()]]:
        return default_content_store, ()

    def __repr__(self) -> str:
        return "default_content_store(): " + super().__repr__()


_DEFAULT: _ProcessContentStore | None = None
_DEFAULT_LOCK = threading.Lock()


def default_content_store() -> MemoryContentStore:
    """The store of every Compactor made without ``store=`` in this process (a
    ``MemoryContentStore`` with its default 64 MiB and one-day TTL): the originals of the ids
    one Compactor names stay recallable by another made later, as a caller that makes a
    Compactor per call needs. Set its ``max_bytes`` / ``ttl`` to resize it; give a Compactor a
    store of its own to keep its texts apart."""
    global _DEFAULT
    if _DEFAULT is None:
        with _DEFAULT_LOCK:
            if _DEFAULT is None:
                _DEFAULT = _ProcessContentStore()
    return _DEFAULT


class DirectoryContentStore:
    """One UTF-8 file per id under ``path`` (created if missing). Writes go to a temporary file
    in the same directory, then ``os.replace`` it into place: a reader sees the whole text or
    nothing. Nothing expires (delete the files to clean up)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)

    def _file(self, fold_id: str) -> Path:
        return self.path / f"{_check_id(fold_id)}.txt"

    def put(self, fold_id: str, text: str, /) -> None:
        """Write ``text`` atomically (skipped when the id's file already exists: same id, same
        text)."""
        target = self._file(fold_id)
        if target.exists():
            return
        # The temporary name is chosen before the file exists, so an interrupt (Ctrl-C) at any
        # point, even inside the call that creates it, leaves no file behind (was: 4 of 392
        # interrupts left an empty one, created by mkstemp before its name was known here).
        tmp = self.path / f".{fold_id}.{secrets.token_hex(8)}.tmp"
        try:
            with open(tmp, "x", encoding="utf-8", newline="") as f:
                f.write(text)
            os.replace(tmp, target)
        except BaseException:
            _remove(tmp)
            raise

    def get(self, fold_id: str, /) -> str | None:
        """The text, or None when no file holds it."""
        path = self._file(fold_id)
        try:
            # newline="": the text comes back byte-exact (no \r\n translation).
            with open(path, encoding="utf-8", newline="") as f:
                return f.read()
        except FileNotFoundError:
            return None
        except (IsADirectoryError, PermissionError) as e:
            # (Something else stands where the file should be: read as an entry changed outside
            # the store, which answer() tells the model it cannot read.)
            raise CorruptEntryError(f"content store file {path} cannot be read: {e}") from e
        except UnicodeDecodeError as e:
            # (Every text is written as UTF-8: a file that is not was changed outside the store.)
            raise CorruptEntryError(f"content store file {path} is not UTF-8 text (changed outside the store): {e}") from e

    def __repr__(self) -> str:
        return f"DirectoryContentStore({str(self.path)!r})"


class RedisContentStore:
    """One Redis key per id (``prefix + id``), expiring after ``ttl`` seconds (None: never).
    ``client`` is a ``redis.Redis``, or give ``url``."""

    def __init__(
        self,
        client: redis.Redis | None = None,
        *,
        url: str | None = None,
        prefix: str = "contextfold:recall:",
        ttl: int | None = 7 * 24 * 3600,
    ) -> None:
        try:
            import redis as redis_mod
        except ImportError as e:  # pragma: no cover - exercised only without the extra
            raise ImportError("RedisContentStore needs redis-py: pip install '.[redis]' in a checkout of contextfold") from e
        if client is None:
            if url is None:
                raise TypeError("pass a redis client or url=")
            client = redis_mod.Redis.from_url(url)
        elif url is not None:
            raise TypeError("pass either a client or url=, not both")
        if ttl is not None and (isinstance(ttl, bool) or not isinstance(ttl, int) or ttl <= 0):
            raise ValueError(f"ttl must be a positive int (seconds) or None, got {ttl!r}")
        self.client: Any = client
        self.url = url
        self.prefix = prefix
        self.ttl = ttl

    def __reduce__(self) -> tuple[Any, tuple[()]]:
        # A Compactor goes to worker processes by pickle: the store is made there again from
        # its url (a client holds sockets and locks, which no pickle carries).
        return functools.partial(RedisContentStore, url=_url_to_pickle(self), prefix=self.prefix, ttl=self.ttl), ()

    def put(self, fold_id: str, text: str, /) -> None:
        """Keep ``text`` (its expiry renewed when already there)."""
        self.client.set(self.prefix + _check_id(fold_id), text.encode("utf-8"), ex=self.ttl)

    def get(self, fold_id: str, /) -> str | None:
        """The text, or None when absent or expired."""
        raw = self.client.get(self.prefix + _check_id(fold_id))
        if raw is None:
            return None
        if not isinstance(raw, bytes):
            return str(raw)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as e:
            # (Every text is written as UTF-8: a value that is not was set outside the store.)
            raise CorruptEntryError(f"content store key {self.prefix + fold_id!r} is not UTF-8 text (set outside the "
                                    f"store): {e}") from e

    def __repr__(self) -> str:
        return f"RedisContentStore(prefix={self.prefix!r}, ttl={self.ttl})"


def _remove(path: Path) -> None:
    """Remove ``path`` when there, even if another Ctrl-C lands meanwhile (that one is the
    interrupt being handled: the caller re-raises the first)."""
    while True:
        try:
            path.unlink(missing_ok=True)
            return
        except KeyboardInterrupt:
            continue


def _url_to_pickle(store: Any) -> str:
    """The url a Redis-backed store is made from again in another process; TypeError (the
    exception pickle raises for what it cannot carry) for a store given a client."""
    if store.url is None:
        raise TypeError(f"{type(store).__name__} made from a redis client cannot be pickled (a client holds "
                        "sockets and locks): make it with url= to send it to other processes")
    return str(store.url)
