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


def test_a_youtube_video_passed_by_its_url_is_priced_as_a_video():
    # The Gemini API takes a YouTube URL as `fileData.fileUri` with no MIME type.
    ask = {"text": "Summarize this video."}
    by_url = [{"role": "user", "parts": [{"fileData": {"fileUri": "https://www.youtube.com/watch?v=9hE5-98ZeCg"}}, ask]}]
    uploaded = [{"role": "user", "parts": [{"fileData": {"mimeType": "video/mp4",
                                                         "fileUri": "https://generativelanguage.googleapis.com/v1beta/files/v1"}},
                                           ask]}]
    assert cf.estimate(by_url, provider="gemini") == cf.estimate(uploaded, provider="gemini")
    assert [u.kind for u in cf.breakdown(by_url, provider="gemini").unmeasured] == ["video"]
