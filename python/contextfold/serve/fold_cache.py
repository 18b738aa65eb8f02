"""The fold cache: the folded prefix of a conversation, keyed by the content hash of what it
replaces, so every turn sends the same bytes and the provider's prompt cache keeps hitting.

A fold says: the first ``k`` messages of a history whose raw bytes hash to ``key`` are sent as
``messages`` (already serialized, so the bytes never change). An index per conversation (keyed
by the hash of its first message, and of the next where the first is a system or developer
message: ``folding._lead``) lists the ``k`` of its recent folds, so a process that has
never seen the conversation (a restart, another replica) finds the fold again by hashing the
first ``k`` messages of the body it received.

``MemoryFoldCache`` keeps folds in-process (bounded, least recently used first out);
``RedisFoldCache`` in Redis, shared by replicas and kept across restarts (with a TTL).
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Protocol, TypeGuard

__all__ = ["CorruptFoldError", "Fold", "FoldCache", "MemoryFoldCache", "RedisFoldCache", "content_hash"]

#: The index of a conversation remembers this many folds (the newest first).
INDEX_DEPTH = 4
#: What made a fold (``Fold.strategy``; ``CompactionResult.strategy_used``).
STRATEGIES = ("mask", "summarize")
#: A fold's estimate is below this (2^53: any history's tokens, an exact float).
MAX_TOKENS = 1 << 53


def content_hash(data: bytes | memoryview, *, space: bytes = b"") -> str:
    """A 128-bit BLAKE2b hex digest of ``space`` then ``data`` (collisions are out of reach; it
    is a cache key deciding which history is sent). ``space`` keeps apart the folds of one
    history made in different ways (b"": the key as it always was)."""
    h = hashlib.blake2b(space, digest_size=16)
    h.update(data)
    return h.hexdigest()


@dataclass(frozen=True, slots=True)
class Fold:
    """The first ``k`` messages of a history (content hash ``key``) are sent as ``payload``:
    the folded messages' JSON joined by commas, bytes that never change. ``count`` messages,
    ``tokens`` their estimate; ``strategy`` what made them (``mask`` or ``summarize``);
    ``summaries`` the content hashes of the summaries the proxy wrote into them (the next
    compaction trusts those as its own, ``Session.summary_hashes``, wherever they sit).

    ``spans``: for each summary whose turns the Compactor remembered (``fold_sources``), the
    hash it is filed under (of its text after its history's head), its tokens and its messages, each as its place in the client's history (an
    int below ``k``) or, for one the compaction wrote (a turn without the summary merged into
    it), the message itself; ``sources``: for each of the ``count`` folded messages, the place in
    the client's history of the message it is a copy of (None: the summary, or a message the
    compaction wrote). The client sends those messages again every turn, so the next
    compaction reads the turns behind a summary, and an output masked in the fold whole, as one
    Compactor kept across the conversation does (the fold holds places, not text).

    ``recall``: the fold was made recoverable (``ServeConfig.recall``): its placeholders name
    ids in the proxy's content store, and every body sent with it carries the recall tool."""

    key: str
    k: int
    payload: bytes
    count: int
    tokens: int
    strategy: str
    summaries: tuple[int, ...] = ()
    spans: tuple[tuple[int, int, tuple[Any, ...]], ...] = ()
    sources: tuple[int | None, ...] = ()
    recall: bool = False

    def to_bytes(self) -> bytes:
        head = json.dumps({"key": self.key, "k": self.k, "count": self.count, "tokens": self.tokens,
                           "strategy": self.strategy, "summaries": list(self.summaries),
                           "spans": [[h, t, list(e)] for h, t, e in self.spans],
                           "sources": list(self.sources), "recall": self.recall}).encode()
        return head + b"\n" + self.payload

    @classmethod
    def from_bytes(cls, data: bytes) -> Fold:
        """The fold ``to_bytes`` wrote. ``CorruptFoldError`` when ``data`` is not one: its bytes
        are spliced into every body sent with it and its fields go into response headers, so an
        entry changed outside the proxy (another version, a stray write to a shared Redis) is
        checked whole. Unchecked, a cut or garbled payload went upstream as a body that is not
        JSON, and a strategy holding CR LF made a header h11 refuses (the client's connection
        dropped)."""
        head, _, payload = data.partition(b"\n")
        try:
            meta = json.loads(head)
            messages = json.loads(b"[" + payload + b"]") if payload.strip() else None
        except (ValueError, RecursionError) as e:  # (JSONDecodeError and UnicodeDecodeError are ValueErrors)
            raise CorruptFoldError(f"fold entry does not parse: {type(e).__name__}") from None
        if not isinstance(meta, dict):
            raise CorruptFoldError("fold entry head is not an object")
        k, count, tokens, strategy = meta.get("k"), meta.get("count"), meta.get("tokens"), meta.get("strategy")
        if not (_is_int(k) and k >= 1 and _is_int(count) and count >= 1 and _is_int(tokens)
                and 0 <= tokens < MAX_TOKENS and strategy in STRATEGIES and isinstance(meta.get("key"), str)):
            raise CorruptFoldError("fold entry head out of range")
        if messages is None or len(messages) != count or not all(isinstance(m, dict) for m in messages):
            raise CorruptFoldError("fold entry payload is not its count of messages")
        # (A fold stored before summaries, spans or sources were kept reads as holding none.)
        summaries = meta.get("summaries", [])
        # (A malformed span or source is dropped, not the fold: the next compaction then merges
        # that summary, as before spans were kept.)
        spans = tuple((item[0], item[1], tuple(item[2])) for item in _list(meta.get("spans"))
                      if isinstance(item, list) and len(item) == 3 and _is_int(item[0]) and _is_int(item[1])
                      and isinstance(item[2], list))
        sources = tuple(i if _is_int(i) else None for i in _list(meta.get("sources")))
        return cls(meta["key"], k, payload, count, tokens, strategy,
                   tuple(int(h) for h in _list(summaries) if _is_int(h)), spans, sources, meta.get("recall") is True)


class CorruptFoldError(ValueError):
    """Bytes in the fold cache that are not a fold ``Fold.to_bytes`` wrote."""


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


class FoldCache(Protocol):
    """Where folds live: ``get`` / ``put`` by content hash, and each conversation's fold sizes."""

    def get(self, key: str) -> Fold | None:
        """The fold stored under ``key``, or None."""
        ...

    def put(self, conversation: str, fold: Fold) -> None:
        """Store ``fold`` and list its ``k`` first in the conversation's index."""
        ...

    def sizes(self, conversation: str) -> list[int]:
        """The ``k`` of the conversation's recent folds, newest first."""
        ...


class MemoryFoldCache:
    """In-process folds, at most ``max_folds`` (least recently used evicted)."""

    def __init__(self, max_folds: int = 4096) -> None:
        self.max_folds = max_folds
        self._folds: OrderedDict[str, Fold] = OrderedDict()
        self._index: OrderedDict[str, list[int]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> Fold | None:
        with self._lock:
            fold = self._folds.get(key)
            if fold is not None:
                self._folds.move_to_end(key)
            return fold

    def put(self, conversation: str, fold: Fold) -> None:
        with self._lock:
            self._folds[fold.key] = fold
            self._folds.move_to_end(fold.key)
            ks = [fold.k, *(k for k in self._index.get(conversation, []) if k != fold.k)][:INDEX_DEPTH]
            self._index[conversation] = ks
            self._index.move_to_end(conversation)
            while len(self._folds) > self.max_folds:
                self._folds.popitem(last=False)
            while len(self._index) > self.max_folds:
                self._index.popitem(last=False)

    def sizes(self, conversation: str) -> list[int]:
        with self._lock:
            return list(self._index.get(conversation, []))

    def __len__(self) -> int:
        return len(self._folds)


class RedisFoldCache:
    """Folds in Redis under ``prefix + "fold:" + key`` and ``prefix + "conv:" + conversation``,
    renewed for ``ttl`` seconds at every write. Needs redis-py (``pip install '.[redis]'``)."""

    def __init__(self, url: str, *, prefix: str = "contextfold:", ttl: int = 7 * 24 * 3600) -> None:
        try:
            import redis
        except ImportError as e:  # pragma: no cover - exercised only without the extra
            raise ImportError("the Redis fold cache needs redis-py: pip install '.[redis]' in a checkout of contextfold") from e
        self.client: Any = redis.Redis.from_url(url)
        self.prefix = prefix
        self.ttl = ttl

    def get(self, key: str) -> Fold | None:
        data = self.client.get(self.prefix + "fold:" + key)
        return None if data is None else Fold.from_bytes(data)

    def put(self, conversation: str, fold: Fold) -> None:
        ck = self.prefix + "conv:" + conversation
        with self.client.pipeline(transaction=True) as pipe:
            pipe.set(self.prefix + "fold:" + fold.key, fold.to_bytes(), ex=self.ttl)
            pipe.lrem(ck, 0, fold.k)
            pipe.lpush(ck, fold.k)
            pipe.ltrim(ck, 0, INDEX_DEPTH - 1)
            pipe.expire(ck, self.ttl)
            pipe.execute()

    def sizes(self, conversation: str) -> list[int]:
        return [int(k) for k in self.client.lrange(self.prefix + "conv:" + conversation, 0, INDEX_DEPTH - 1)]

    def close(self) -> None:
        """Close the connection pool."""
        self.client.close()
