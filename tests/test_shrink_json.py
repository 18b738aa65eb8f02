"""shrink_json from Python: valid JSON out for any input, keys kept, idempotent, never splits."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import contextfold as cf
from transcripts import LOCAL, load_conversations

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=40) | st.text(max_size=2000),
    lambda inner: st.lists(inner, max_size=15) | st.dictionaries(st.text(max_size=12), inner, max_size=10),
    max_leaves=60,
)


@settings(max_examples=2_000, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(json_values, st.integers(64, 1_500), st.booleans())
def test_output_parses_fits_keeps_keys_and_is_idempotent(value, max_chars, ascii):
    text = json.dumps(value, ensure_ascii=ascii, indent=1 if max_chars % 2 else None)
    out = cf.shrink_json(text, max_chars=max_chars)
    parsed = json.loads(out)
    assert len(out) <= max_chars
    assert cf.shrink_json(out, max_chars=max_chars) == out
    if len(text) <= max_chars:
        assert out == text
    if isinstance(value, dict) and isinstance(parsed, dict):
        assert parsed.keys() == value.keys()


@settings(max_examples=500, deadline=None)
@given(st.text(max_size=3000), st.integers(64, 400))
def test_any_text_comes_out_as_valid_json(text, max_chars):
    out = cf.shrink_json(text, max_chars=max_chars)
    if len(text) > max_chars:
        json.loads(out)
        assert len(out) <= max_chars


def test_truncated_args_stay_valid_json():
    args = json.dumps({"path": "/repo/src/app.py", "content": "def f():\n    return 1\n" * 2000, "mode": "overwrite", "lines": [1, 2, 3]})
    out = cf.shrink_json(args, max_chars=400)
    d = json.loads(out)
    assert d["path"] == "/repo/src/app.py" and d["mode"] == "overwrite" and d["lines"] == [1, 2, 3]
    assert "…[cut " in d["content"]
    # A string someone already cut mid-value is repaired into a valid object.
    broken = args[:3000]
    fixed = json.loads(cf.shrink_json(broken, max_chars=400))
    assert fixed["original_chars"] == 3000 and fixed["invalid_json_preview"].startswith('{"path"')


def test_emoji_at_the_cut_point_is_kept_whole():
    for n in range(40, 90):
        text = json.dumps({"t": "a" * n + "😀" * 200}, ensure_ascii=False)
        for ascii_text in (text, json.dumps(json.loads(text))):
            out = cf.shrink_json(ascii_text, max_chars=80)
            json.loads(out)
            assert "\\ud83d\"" not in out and "\ud83d" not in out


def test_real_tool_arguments_shrink_to_valid_json():
    args = [c["function"]["arguments"] for conv in load_conversations(LOCAL, "tau-bench-airline")
            for m in conv["messages"] for c in m.get("tool_calls") or []]
    assert args
    for a in args:
        for m in (64, 100, 200):
            out = cf.shrink_json(a, max_chars=m)
            assert len(out) <= m or len(a) <= m
            json.loads(out)


def test_max_chars_below_the_minimum_is_refused():
    with pytest.raises(ValueError, match="at least 64"):
        cf.shrink_json("{}", max_chars=10)
