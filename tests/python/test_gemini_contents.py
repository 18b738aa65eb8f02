"""Gemini contents as the google-genai SDK lets a user write them."""

from __future__ import annotations

import contextfold as cf


def test_a_content_without_a_role_is_read_as_the_users():
    # `Content.role` "can be left blank or unset" (Gemini API reference): a single turn.
    roleless = [{"parts": [{"text": "What is the capital of France?"}]}]
    with_role = [{"role": "user", "parts": [{"text": "What is the capital of France?"}]}]
    assert cf.estimate(roleless, provider="gemini") == cf.estimate(with_role, provider="gemini")
    assert cf.detect_wire_format(roleless) == "gemini"
    r = cf.Compactor(budget=1_000, provider="gemini").compact(roleless)
    assert list(r.messages) == roleless
