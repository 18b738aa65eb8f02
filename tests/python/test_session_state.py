"""Session.to_state / Session.from_state: a conversation continues in another process (a replica
hop, a worker restart) with the estimates one process would give, and bytes that are not an
intact state of this version are refused with SessionStateError, never read into wrong numbers."""

from __future__ import annotations

import copy
import json
import math
import struct

import contextfold as cf
import pytest
from transcripts import LOCAL, load_conversations

from test_session import history


def replica_copy(messages: list) -> list:
    """What another process holds: equal messages, none of the same objects."""
    return json.loads(json.dumps(messages))


def swe_trajectory() -> dict:
    convs = load_conversations(LOCAL, "mini-swe-agent-gemini3")
    assert convs, "no SWE trajectories under tests/data"
    # The longest one: most calls, most anchors carried across hops.
    return max(convs, key=lambda c: len(c["requests"]))


def one_process(conv: dict, **kw) -> list[int]:
    s = cf.Session(provider="gemini", **kw)
    out = []
    for req in conv["requests"]:
        out.append(s.estimate(conv["messages"][: req["n_messages"]]))
        if req.get("usage_prompt_tokens"):
            s.record_usage({"prompt_tokens": req["usage_prompt_tokens"]})
    return out


@pytest.mark.parametrize("kw", [{}, {"text_encoding": "o200k_base", "max_request_bytes": 1 << 24}])
def test_a_hop_before_every_turn_gives_the_one_process_estimates_on_a_swe_trajectory(kw):
    conv = swe_trajectory()
    expected = one_process(conv, **kw)
    state = cf.Session(provider="gemini", **kw).to_state()
    got = []
    for req in conv["requests"]:
        # Estimate in one process, record the usage in another, estimate in a third.
        s = cf.Session.from_state(state)
        got.append(s.estimate(replica_copy(conv["messages"][: req["n_messages"]])))
        state = s.to_state()
        if req.get("usage_prompt_tokens"):
            s = cf.Session.from_state(state)
            s.record_usage({"prompt_tokens": req["usage_prompt_tokens"]})
            state = s.to_state()
    assert got == expected
    assert len(got) >= 10
    restored = cf.Session.from_state(state)
    assert restored.usages == sum(1 for r in conv["requests"] if r.get("usage_prompt_tokens"))


def test_settings_survive_the_hop():
    tools = [{"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}]
    s = cf.Session(provider="anthropic", model="claude-sonnet-4-5", tools=tools, system="be brief",
                   context_window=100_000, output_reserve=5_000, trigger_ratio=0.8, max_request_bytes=10_000_000)
    ms = history(30)
    s.estimate(ms)
    s.record_usage({"input_tokens": 4_000, "cache_read_input_tokens": 100}, model="claude-sonnet-4-5")
    r = cf.Session.from_state(s.to_state())
    assert (r.provider, r.model, r.context_window, r.output_reserve, r.trigger_ratio, r.max_request_bytes) == (
        "anthropic", "claude-sonnet-4-5", 100_000, 5_000, 0.8, 10_000_000)
    assert (r.correction, r.last_usage, r.usages) == (s.correction, s.last_usage, s.usages)
    longer = ms + [{"role": "user", "content": "and now?"}]
    assert r.estimate(replica_copy(longer)) == s.estimate(longer)
    assert r.should_compact(replica_copy(longer)) == s.should_compact(longer)
    # The model switch re-prices the overhead from the tools and system the state carries.
    s.model, r.model = "claude-opus-4-1", "claude-opus-4-1"
    assert r.estimate(replica_copy(longer)) == s.estimate(longer)


def test_a_history_changed_in_the_anchored_prefix_does_not_inherit_the_real_count():
    ms = history(40)
    s = cf.Session()
    s.estimate(ms)
    s.record_usage(5_000)
    state = s.to_state()
    changed = replica_copy(ms)
    changed[5]["content"] = "something else entirely " * 20
    r = cf.Session.from_state(state)
    # What one process would answer for that change: the calibrated heuristic, no anchor.
    same = cf.Session()
    same.estimate(ms)
    same.record_usage(5_000)
    ms[5]["content"] = changed[5]["content"]
    same.invalidate(5)
    assert r.estimate(changed) == same.estimate(ms)
    assert r._core.anchored_messages is None


def test_a_shorter_history_after_the_hop_drops_the_anchor():
    ms = history(20)
    s = cf.Session()
    s.estimate(ms)
    s.record_usage(3_000)
    r = cf.Session.from_state(s.to_state())
    assert r.estimate(replica_copy(ms[:10])) == math.floor(s.correction * cf.estimate(ms[:10]) + 0.5)
    assert r._core.anchored_messages is None


def test_record_usage_right_after_the_hop_applies_to_the_last_estimated_history():
    ms = history(25)
    one = cf.Session()
    one.estimate(ms)
    one.record_usage(4_321)
    s = cf.Session()
    s.estimate(ms)
    r = cf.Session.from_state(s.to_state())
    r.record_usage(4_321)
    assert r.correction == one.correction
    assert r.estimate(replica_copy(ms)) == 4_321 == one.estimate(ms)


def test_state_is_compact_and_independent_of_object_ids():
    ms = history(200)
    a, b = cf.Session(), cf.Session()
    a.estimate(ms)
    b.estimate(replica_copy(ms))
    assert a.to_state() == b.to_state()
    assert len(a.to_state()) < 200 * 16 + 200


# -- refused bytes ------------------------------------------------------------------------------


def state_bytes() -> bytes:
    s = cf.Session(tools=[{"type": "function", "function": {"name": "f"}}], system="sys")
    ms = history(12)
    s.estimate(ms)
    s.record_usage(900)
    return s.to_state()


def test_every_flipped_byte_and_every_cut_is_refused():
    data = state_bytes()
    for i in range(len(data)):
        bad = bytearray(data)
        bad[i] ^= 0x20
        with pytest.raises(cf.SessionStateError):
            cf.Session.from_state(bytes(bad))
    for n in range(len(data)):
        with pytest.raises(cf.SessionStateError):
            cf.Session.from_state(data[:n])
    with pytest.raises(cf.SessionStateError):
        cf.Session.from_state(data + b"\0")


def stable_hash(b: bytes) -> int:
    """The state checksum (ledger::StableHash over a length-prefixed byte string), re-implemented
    here so a test can forge an intact state of another version."""
    m = (1 << 64) - 1
    h = 0x243F6A8885A308D3
    k = 0x9E3779B97F4A7C15

    def word(h: int, w: int) -> int:
        h = ((h << 23) | (h >> 41)) & m
        return ((h ^ w) * k) & m

    h = word(h, len(b))
    padded = b + b"\0" * (-len(b) % 8)
    for i in range(0, len(padded), 8):
        h = word(h, struct.unpack_from("<Q", padded, i)[0])
    h ^= h >> 33
    h = (h * 0xFF51AFD7ED558CCD) & m
    h ^= h >> 33
    h = (h * 0xC4CEB9FE1A85EC53) & m
    return h ^ (h >> 33)


def resealed(body: bytes) -> bytes:
    return body + struct.pack("<Q", stable_hash(body))


def test_the_reference_checksum_matches():
    data = state_bytes()
    assert resealed(data[:-8]) == data


def test_an_intact_state_of_another_version_is_a_version_error():
    data = state_bytes()
    future = resealed(data[:4] + bytes([data[4] + 1]) + data[5:-8])
    with pytest.raises(cf.SessionStateError, match="format 3"):
        cf.Session.from_state(future)
    # Same format, another library version: "0.1.0" -> "9.9.9".
    version = cf.__version__.encode()
    assert data[6 : 6 + len(version)] == version
    other = resealed(data[:6] + b"9" * len(version) + data[6 + len(version) : -8])
    with pytest.raises(cf.SessionStateError, match="start a new session"):
        cf.Session.from_state(other)


def test_intact_but_contradictory_states_are_refused():
    # The overhead no longer matches the system prompt the state carries (400 chars -> 10).
    body = cf.Session(system="x" * 400).to_state()[:-8]
    at = body.index(b"x" * 400)
    assert body[at - 2 : at] == bytes([0x90, 0x03])  # varint 400
    forged = resealed(body[: at - 2] + bytes([10]) + b"x" * 10 + body[at + 400 :])
    with pytest.raises(cf.SessionStateError, match="overhead"):
        cf.Session.from_state(forged)
    for bad in (b"", b"CFST", b"\x00" * 64):
        with pytest.raises(cf.SessionStateError):
            cf.Session.from_state(bad)
    with pytest.raises(TypeError):
        cf.Session.from_state("not bytes")  # type: ignore[arg-type]


def test_meta_settings_are_validated():
    data = cf.Session(context_window=1000).to_state()
    body = data[:-8]
    i = body.index(b'"context_window":1000')
    forged = resealed(body[:i] + b'"context_window":-100' + body[i + len(b'"context_window":1000') :])
    with pytest.raises(cf.SessionStateError, match="settings"):
        cf.Session.from_state(forged)


def test_the_caller_s_history_is_not_touched_by_a_hop():
    ms = history(30)
    before = copy.deepcopy(ms)
    s = cf.Session()
    s.estimate(ms)
    r = cf.Session.from_state(s.to_state())
    r.estimate(ms)
    r.record_usage(1_000, ms)
    assert ms == before
