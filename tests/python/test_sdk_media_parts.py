"""Media held by an SDK object is priced as the same media given as a dict: google-genai's
``types.Content`` keeps an audio clip or a PDF as ``Blob(mime_type, data=bytes)``."""

from __future__ import annotations

import base64
import struct

import pytest

import contextfold as cf


def wav(seconds: int, rate: int = 8000) -> bytes:
    """A silent mono 16-bit WAV of ``seconds``."""
    data = b"\x00\x00" * (seconds * rate)
    return (b"RIFF" + struct.pack("<I", 36 + len(data)) + b"WAVEfmt "
            + struct.pack("<IHHIIHH", 16, 1, 1, rate, rate * 2, 2, 16) + b"data" + struct.pack("<I", len(data)) + data)


@pytest.mark.parametrize("mime,raw", [("audio/wav", wav(20)), ("application/pdf", b"%PDF-1.4\n" + b"0" * 3000 + b"\n%%EOF")])
def test_media_bytes_in_a_genai_content_are_priced_as_the_same_media_in_a_dict(mime, raw):
    types = pytest.importorskip("google.genai.types")
    as_dict = [{"role": "user", "parts": [{"inlineData": {"mimeType": mime, "data": base64.b64encode(raw).decode()}},
                                          {"text": "What is this?"}]}]
    as_sdk = [types.Content(role="user", parts=[types.Part.from_bytes(data=raw, mime_type=mime),
                                                types.Part(text="What is this?")])]
    assert cf.estimate(as_sdk, provider="gemini") == cf.estimate(as_dict, provider="gemini")
    assert cf.breakdown(as_sdk, provider="gemini").unmeasured == ()
