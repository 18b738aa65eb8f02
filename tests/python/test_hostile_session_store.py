"""Hostile session states against a real redis-server: forged states (valid checksum, fields out
of range, settings nested past the parser), a keyed MAC that tells a forgery apart, keys of the
wrong Redis type, clients that decode replies, and the asyncio store on redis.asyncio."""

from __future__ import annotations

import asyncio
import json
import struct

import pytest

import contextfold as cf
from contextfold.store import AsyncRedisSessionStore, RedisSessionStore

from test_session import history

redis = pytest.importorskip("redis", reason="redis-py not installed: pip install '.[redis]'")

SECRET = b"0123456789abcdef0123456789abcdef"


M64 = (1 << 64) - 1


def stable_hash(data: bytes) -> int:
    """The state's checksum as the format documents it (src/ledger.rs StableHash), written again
    here the way a forger would: it is unkeyed, so anyone can compute it."""
    h, k = 0x243F6A8885A308D3, 0x9E3779B97F4A7C15

    def word(w: int) -> None:
        nonlocal h
        h = ((((h << 23) | (h >> 41)) & M64) ^ w) * k & M64

    word(len(data))
    for i in range(0, len(data) - len(data) % 8, 8):
        word(int.from_bytes(data[i:i + 8], "little"))
    if len(data) % 8:
        word(int.from_bytes(data[len(data) - len(data) % 8:].ljust(8, b"\0"), "little"))
    h ^= h >> 33
    h = h * 0xFF51AFD7ED558CCD & M64
    h ^= h >> 33
    h = h * 0xC4CEB9FE1A85EC53 & M64
    return h ^ (h >> 33)


class Fields:
    """A state read field by field (the documented format 2), to rewrite some and re-sign."""

    def __init__(self, data: bytes) -> None:
        self.b, self.at, self.out = data[:-8], 0, bytearray()
        assert stable_hash(self.b) == struct.unpack("<Q", data[-8:])[0], "checksum as documented"

    def raw(self, n: int) -> bytes:
        v = self.b[self.at:self.at + n]
        self.at += n
        self.out += v
        return v

    def varint(self, replace: int | None = None) -> int:
        start, x, shift = self.at, 0, 0
        while True:
            b = self.b[self.at]
            self.at += 1
            x |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                break
        self.out += _varint(replace) if replace is not None else self.b[start:self.at]
        return x

    def str(self, replace: str | None = None) -> str:
        start = self.at
        n, x, shift = 0, 0, 0
        while True:
            b = self.b[self.at]
            self.at += 1
            x |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                break
        text = self.b[self.at:self.at + x].decode()
        self.at += x
        if replace is None:
            self.out += self.b[start:self.at]
        else:
            enc = replace.encode()
            self.out += _varint(len(enc)) + enc
        del n
        return text

    def opt(self, f) -> object:
        tag = self.raw(1)[0]
        return f() if tag else None

    def signed(self) -> bytes:
        assert self.at == len(self.b)
        return bytes(self.out) + struct.pack("<Q", stable_hash(bytes(self.out)))


def forge(state: bytes, *, anchor_real: int | None = None, meta: str | None = None) -> bytes:
    """``state`` with the usage anchor and last usage, or the settings, replaced; checksum valid."""
    f = Fields(state)
    f.raw(5)
    f.str()  # magic, format, library version
    f.str()
    f.opt(f.str)
    f.opt(f.str)
    f.raw(1)
    f.opt(f.str)  # provider, model, encoding, track_wire, system
    for _ in range(f.varint()):
        f.str()
        f.str()
    f.opt(lambda: (f.str(), f.opt(f.str), f.str()))
    f.raw(1)  # media resolution
    f.str(meta)
    f.raw(8)
    f.varint()
    f.opt(lambda: f.raw(8))  # smoothing, overhead, correction
    f.opt(lambda: (f.varint(), f.varint(anchor_real)))
    f.varint()
    f.opt(lambda: f.varint(anchor_real))
    f.opt(f.str)
    f.varint()
    for _ in range(f.varint()):
        f.raw(8)
        f.varint()
        f.varint()
        f.varint()
    return f.signed()


def _varint(x: int) -> bytes:
    out = bytearray()
    while True:
        b = x & 0x7F
        x >>= 7
        if x:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def calibrated() -> tuple[cf.Session, list[dict]]:
    s = cf.Session(model="gpt-4o")
    ms = history(12)
    s.estimate(ms)
    s.record_usage({"prompt_tokens": 4000}, ms)
    return s, ms


# -- item 11: range checks, nesting, a keyed MAC -------------------------------------------------


def test_the_forger_reproduces_the_documented_checksum():
    s, ms = calibrated()
    same = forge(s.to_state())
    assert same == s.to_state()
    assert cf.Session.from_state(same).estimate(ms) == s.estimate(ms)


def test_a_forged_anchor_of_2_64_minus_1_is_refused_not_wrapped_to_a_tiny_estimate():
    s, _ = calibrated()
    bad = forge(s.to_state(), anchor_real=2**64 - 1)
    with pytest.raises(cf.SessionStateError, match="out of range"):
        cf.Session.from_state(bad)


def test_settings_nested_past_the_parser_are_an_invalid_state_that_reset_mode_handles(redis_url):
    s, ms = calibrated()
    bad = forge(s.to_state(), meta="[" * 50_000 + "]" * 50_000)
    with pytest.raises(cf.SessionStateError):
        cf.Session.from_state(bad)
    nested = forge(s.to_state(), meta=json.dumps({"provider": "openai"})[:-1] + ', "x": ' + "[" * 30_000 + "]" * 30_000 + "}")
    with pytest.raises(cf.SessionStateError):
        cf.Session.from_state(nested)
    store = RedisSessionStore(url=redis_url, prefix="hostile:", on_invalid_state="reset")
    store.client.set("hostile:deep", nested)
    assert store.update("deep", lambda x: x.estimate(ms), new=lambda: cf.Session(model="gpt-4o")) == cf.estimate(ms, model="gpt-4o")


def test_a_keyed_store_refuses_a_forged_state_that_an_unkeyed_one_accepts(redis_url):
    s, ms = calibrated()
    forged = forge(s.to_state(), anchor_real=1)  # in range, checksum valid: only a MAC tells
    plain = RedisSessionStore(url=redis_url, prefix="plain:")
    plain.client.set("plain:c", forged)
    assert plain.load("c") is not None
    keyed = RedisSessionStore(url=redis_url, prefix="keyed:", secret=SECRET)
    keyed.save("c", s)
    assert keyed.load("c").estimate(ms) == s.estimate(ms)  # type: ignore[union-attr]
    keyed.client.set("keyed:c", forged)
    with pytest.raises(cf.SessionStateError, match="not signed"):
        keyed.load("c")
    signed = keyed.client.get("keyed:c")
    keyed.save("c", s)
    tampered = bytearray(keyed.client.get("keyed:c"))
    tampered[-20] ^= 1
    keyed.client.set("keyed:c", bytes(tampered))
    with pytest.raises(cf.SessionStateError, match="signature"):
        keyed.load("c")
    other = RedisSessionStore(url=redis_url, prefix="keyed:", secret=b"another secret of 32 bytes......")
    keyed.save("c", s)
    with pytest.raises(cf.SessionStateError):
        other.load("c")
    resetting = RedisSessionStore(url=redis_url, prefix="keyed:", secret=SECRET, on_invalid_state="reset")
    keyed.client.set("keyed:c", forged)
    assert resetting.update("c", lambda x: x.estimate(ms), new=lambda: cf.Session(model="gpt-4o")) == cf.estimate(ms, model="gpt-4o")
    del signed


def test_a_short_secret_is_refused():
    with pytest.raises(ValueError, match="secret"):
        RedisSessionStore(url="redis://127.0.0.1:1/0", secret="short")


# -- item 12: wrong-type keys, decoding clients, asyncio ----------------------------------------------


def test_a_key_of_the_wrong_redis_type_resets_in_reset_mode_and_is_a_state_error_otherwise(redis_url):
    ms = history(8)
    raising = RedisSessionStore(url=redis_url, prefix="wt:")
    raising.client.delete("wt:list")
    raising.client.rpush("wt:list", b"x")
    with pytest.raises(cf.SessionStateError, match="another type"):
        raising.load("list")
    with pytest.raises(cf.SessionStateError, match="another type"):
        raising.update("list", lambda s: s.estimate(ms), new=cf.Session)
    resetting = RedisSessionStore(url=redis_url, prefix="wt:", on_invalid_state="reset")
    assert resetting.update("list", lambda s: s.estimate(ms), new=cf.Session) == cf.estimate(ms)
    assert raising.load("list") is not None  # overwritten with a state


def test_a_client_that_decodes_responses_is_refused_at_construction(redis_url):
    with pytest.raises(ValueError, match="decode_responses"):
        RedisSessionStore(redis.Redis.from_url(redis_url, decode_responses=True))
    import redis.asyncio as aredis

    with pytest.raises(ValueError, match="decode_responses"):
        AsyncRedisSessionStore(aredis.Redis.from_url(redis_url, decode_responses=True))


def test_the_async_store_follows_a_conversation_like_the_sync_one(redis_url):
    import redis.asyncio as aredis

    ms = history(14)

    async def main() -> tuple[int, int]:
        client = aredis.Redis.from_url(redis_url)
        store = AsyncRedisSessionStore(client, prefix="async:", secret=SECRET)
        await store.delete("c")
        first = await store.update("c", lambda s: s.estimate(ms[:8]), new=lambda: cf.Session(model="gpt-4o"))
        await store.update("c", lambda s: s.record_usage({"prompt_tokens": 2500}, ms[:8]), new=cf.Session)
        # Concurrent updates on one conversation are all applied (WATCH / MULTI / EXEC).
        await asyncio.gather(*(store.update("c", lambda s: s.estimate(ms), new=cf.Session) for _ in range(6)))
        loaded = await store.load("c")
        assert loaded is not None
        await client.aclose()
        return first, loaded.estimate(ms)

    first, later = asyncio.run(main())
    one = cf.Session(model="gpt-4o")
    assert first == one.estimate(ms[:8])
    one.record_usage({"prompt_tokens": 2500}, ms[:8])
    assert later == one.estimate(ms)
