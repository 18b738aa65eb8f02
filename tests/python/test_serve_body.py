"""The proxy's raw-body reader: the offsets it keeps are where each message's bytes are, and
what it reads after a known prefix is exactly what was appended, for any JSON spacing and any
text (non-ASCII included)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextfold.serve.body import BodyError, scan_appended, scan_body

text = st.text(max_size=30)
message = st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant", "tool"]), "content": text})
history = st.lists(message, min_size=1, max_size=12)


def encode(body: dict, style: int) -> bytes:
    if style == 0:
        return json.dumps(body).encode()
    if style == 1:
        return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
    return json.dumps(body, ensure_ascii=False, indent=2).encode()


@settings(max_examples=200, deadline=None)
@given(history, history, st.integers(0, 2), st.booleans())
def test_offsets_and_appended_messages_are_exact(first, more, style, key_first):
    def body(msgs: list) -> dict:
        return {"messages": msgs, "model": "m", "tools": [{"name": "t\u00e9"}], "stream": False} if key_first else \
            {"max_tokens": 9, "tools": None, "messages": msgs, "system": "s\u00e9"}

    raw = encode(body(first), style)
    scanned = scan_body(raw, "messages")
    assert scanned.history == first
    for i, m in enumerate(first):
        piece = raw[scanned.offsets[i]: scanned.offsets[i + 1]].decode().rstrip(" ,\n")
        assert json.loads(piece) == m
    assert raw[scanned.start: scanned.start + 1] == b"["
    longer = encode(body(first + more), style)
    assert longer.startswith(raw[: scanned.offsets[-1]])
    appended = scan_appended(longer, scanned.offsets[-1])
    assert appended.messages == more
    assert {**scanned.before, **appended.after} == {k: v for k, v in body([]).items() if k != "messages"}
    assert appended.end == scan_body(longer, "messages").offsets[-1]
    # Each other field's value sits at its span's bytes (where the proxy adds its recall tool).
    fields = {k: v for k, v in body(first).items() if k != "messages"}
    assert {k: json.loads(raw[a:b]) for k, (a, b) in scanned.spans.items()} == fields
    assert {k: json.loads(longer[a:b]) for k, (a, b) in appended.spans.items()} == appended.after
    assert raw[scanned.open - 1: scanned.open] == b"{"


# (A message nested deeper than the interpreter's stack answered 500 before: RecursionError.)
DEEP = b'{"messages": [{"role": "user", "content": ' + b"[" * 100_000 + b"]" * 100_000 + b"}]}"


# (An empty object followed by more, `{}}` or `{} [`, was read as an empty body before.)
@pytest.mark.parametrize("raw", [b"[1]", b'{"messages": [1,', b'{"messages": []} x', b"\xff", b'{"a" 1}', DEEP,
                                 b"{}}", b"\n{} [", b'{ }"messages": []}'])
def test_a_body_that_is_not_a_json_object_is_a_body_error(raw):
    with pytest.raises(BodyError):
        scan_body(raw, "messages")
