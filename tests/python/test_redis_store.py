"""RedisSessionStore against a real redis-server started on a free loopback port: a replica hop
mid-conversation gives the one-process estimates, concurrent updates are never lost, and redis
being down is a clear error (or the documented fresh-session mode), never a wrong estimate.

Needs Debian's ``redis-server`` (``apt-get install redis-server``); skips visibly without it."""

from __future__ import annotations

import shutil
import socket
import subprocess
import threading
import time

import contextfold as cf
import pytest
from contextfold.store import RedisSessionStore

from test_session import history
from test_session_state import one_process, replica_copy, swe_trajectory

redis = pytest.importorskip("redis", reason="redis-py not installed: pip install '.[redis]'")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def no_retry_client(port: int) -> "redis.Redis":
    """A client that fails at once (redis-py retries with backoff by default: seconds)."""
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    return redis.Redis(port=port, socket_connect_timeout=1, socket_timeout=2, retry=Retry(NoBackoff(), 0))


def replica(url: str, **kw) -> RedisSessionStore:
    """One replica: its own connection pool."""
    return RedisSessionStore(redis.Redis.from_url(url), prefix="test:", **kw)


def test_replica_hop_mid_conversation_gives_the_one_process_estimates(redis_url):
    conv = swe_trajectory()
    expected = one_process(conv)
    replicas = [replica(redis_url), replica(redis_url)]
    replicas[0].delete("swe")
    got = []
    for k, req in enumerate(conv["requests"]):
        # Turn k is served by replica k % 2 from messages it deserialized itself.
        store = replicas[k % 2]
        msgs = replica_copy(conv["messages"][: req["n_messages"]])
        got.append(store.update("swe", lambda s: s.estimate(msgs), new=lambda: cf.Session(provider="gemini")))
        if req.get("usage_prompt_tokens"):
            # The response comes back to the other replica.
            other = replicas[(k + 1) % 2]
            other.update("swe", lambda s: s.record_usage({"prompt_tokens": req["usage_prompt_tokens"]}),
                         new=lambda: cf.Session(provider="gemini"))
    assert got == expected
    assert replicas[1].load("swe").usages == sum(1 for r in conv["requests"] if r.get("usage_prompt_tokens"))


def test_two_replicas_updating_one_conversation_never_lose_an_update(redis_url):
    stores = [replica(redis_url), replica(redis_url)]
    stores[0].delete("race")
    ms = history(30)
    calls = [0, 0]
    per_replica = 40

    def work(i: int) -> None:
        mine = replica_copy(ms)

        def record(s: cf.Session) -> None:
            calls[i] += 1
            s.estimate(mine)
            time.sleep(0.001)  # widen the window between read and write
            s.record_usage(1_000 + i)

        for _ in range(per_replica):
            stores[i].update("race", record, new=cf.Session)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    final = stores[0].load("race")
    assert final.usages == 2 * per_replica
    # The races did happen (some functions ran again on a newer state) and were all resolved.
    assert sum(calls) > 2 * per_replica


def test_redis_down_is_a_clear_error_and_never_a_wrong_estimate():
    port = free_port()  # nothing listens there
    store = RedisSessionStore(no_retry_client(port), prefix="test:")
    ms = history(10)
    with pytest.raises(cf.SessionStoreError, match="redis unavailable") as e:
        store.update("c", lambda s: s.estimate(ms), new=cf.Session)
    assert isinstance(e.value.__cause__, redis.exceptions.ConnectionError)
    with pytest.raises(cf.SessionStoreError):
        store.load("c")
    with pytest.raises(cf.SessionStoreError):
        store.save("c", cf.Session())
    # Degraded mode: the function runs on a fresh session (the uncalibrated heuristic).
    fresh = RedisSessionStore(no_retry_client(port), prefix="test:",
                              on_unavailable="fresh")
    assert fresh.update("c", lambda s: s.estimate(ms), new=cf.Session) == cf.estimate(ms)


def test_redis_going_down_mid_conversation(redis_url, tmp_path):
    # A second server of our own, stopped after two turns.
    port = free_port()
    proc = subprocess.Popen([shutil.which("redis-server"), "--port", str(port), "--bind", "127.0.0.1",
                             "--save", "", "--appendonly", "no", "--dir", str(tmp_path)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        client = no_retry_client(port)
        for _ in range(200):
            try:
                client.ping()
                break
            except redis.exceptions.ConnectionError:
                time.sleep(0.02)
        store = RedisSessionStore(client, prefix="test:")
        ms = history(20)
        store.update("c", lambda s: s.estimate(ms), new=cf.Session)
        store.update("c", lambda s: s.record_usage(2_000), new=cf.Session)
        assert store.update("c", lambda s: s.estimate(ms), new=cf.Session) == 2_000
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    with pytest.raises(cf.SessionStoreError):
        store.update("c", lambda s: s.estimate(ms), new=cf.Session)


def test_a_corrupted_or_foreign_state_in_redis_is_refused_or_reset(redis_url):
    store = replica(redis_url)
    store.client.set("test:bad", b"CFST\x01garbage")
    ms = history(10)
    with pytest.raises(cf.SessionStateError):
        store.update("bad", lambda s: s.estimate(ms), new=cf.Session)
    with pytest.raises(cf.SessionStateError):
        store.load("bad")
    resetting = replica(redis_url, on_invalid_state="reset")
    assert resetting.update("bad", lambda s: s.estimate(ms), new=cf.Session) == cf.estimate(ms)
    # ...and the reset state was saved.
    assert store.load("bad").estimate(ms) == cf.estimate(ms)


def test_ttl_and_options_are_validated(redis_url):
    store = replica(redis_url, ttl=100)
    store.save("ttl", cf.Session())
    assert 0 < store.client.ttl("test:ttl") <= 100
    with pytest.raises(ValueError):
        replica(redis_url, ttl=0)
    with pytest.raises(ValueError):
        replica(redis_url, on_unavailable="maybe")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        store.key("")
    with pytest.raises(TypeError):
        RedisSessionStore()


def test_a_session_store_pickled_to_another_process_reads_the_same_states(redis_url):
    # A store made from url= travels by pickle (its client's locks did not): the copy connects
    # anew, keeps every option (the secret too) and reads what the original saved.
    import pickle

    secret = b"s" * 32
    store = RedisSessionStore(url=redis_url, prefix="test:pickle:", ttl=120, max_attempts=5,
                              on_invalid_state="reset", secret=secret)
    s = cf.Session(provider="openai", model="gpt-4o")
    s.estimate([{"role": "user", "content": "hello there"}])
    store.save("c1", s)
    copy = pickle.loads(pickle.dumps(store))
    assert (copy.prefix, copy.ttl, copy.max_attempts, copy.on_invalid_state, copy.codec.secret) == (
        "test:pickle:", 120, 5, "reset", secret)
    assert copy.client is not store.client
    assert copy.load("c1").to_state() == s.to_state()
    with pytest.raises(TypeError, match="url="):
        pickle.dumps(replica(redis_url))
