"""Sizes of images whose pixels are not in the request (remote URLs, uploaded files).

``estimate``, ``estimate_each``, ``count``, ``Session`` and ``breakdown`` take ``image_sizes=``:
a mapping from reference to ``(width, height)`` in pixels, or a callable returning that or None.
The reference is the image's URL, or the id of an uploaded file: OpenAI ``file_id``
(``input_image``, ``image_file``), Anthropic ``source.file_id``, Gemini ``fileData.fileUri``,
Bedrock ``s3Location.uri``. Only the references the core could not size are asked about. ``fetch_image_size`` is an opt-in callable that reads the
first bytes of an image over HTTP; nothing here touches the network unless you call it.
"""

from __future__ import annotations

import http.client
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping

from contextfold._core import image_size

__all__ = ["ImageSizes", "fetch_image_size", "http_image_sizes"]

ImageSizes = Mapping[str, "tuple[int, int] | None"] | Callable[[str], "tuple[int, int] | None"]

# PNG, GIF and BMP carry the size in their first 26 bytes; JPEG's SOF marker follows the EXIF /
# ICC segments, which are 2-20 KB in camera and phone files; WebP's VP8 header sits at byte 30.
DEFAULT_MAX_BYTES = 64 * 1024


def fetch_image_size(
    url: str, /, *, timeout: float = 5.0, max_bytes: int = DEFAULT_MAX_BYTES
) -> tuple[int, int] | None:
    """Pixel size ``(width, height)`` of the image at ``url``, reading at most ``max_bytes``
    bytes of it (an HTTP ``Range: bytes=0-<max_bytes-1>`` request; a server that ignores the
    range is read no further than ``max_bytes``, and reading stops once the header is in), or
    None when the header was not found, the URL is not http(s), the request failed (an answer
    that is not HTTP too), or the image's bytes were still coming ``timeout`` seconds after the
    request (each wait for the server is bounded by ``timeout`` as well).

    Opt-in: pass it (or ``http_image_sizes()``) as ``image_sizes=``; contextfold never fetches
    anything by default."""
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        return None
    if max_bytes <= 0:
        raise ValueError(f"max_bytes must be positive, got {max_bytes}")
    deadline = time.monotonic() + timeout
    req = urllib.request.Request(url, headers={"Range": f"bytes=0-{max_bytes - 1}"})
    data = b""
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 - http(s) only
            # Read as the bytes come: the socket's timeout bounds one wait only, so a server
            # sending a byte at a time kept a whole read going for max_bytes waits.
            while len(data) < max_bytes:
                chunk = resp.read1(max_bytes - len(data))
                if not chunk:
                    break
                data += chunk
                if image_size(data) is not None:
                    break
                if time.monotonic() > deadline:
                    return None
    except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError):
        return None
    return image_size(data)


def http_image_sizes(
    *, timeout: float = 5.0, max_bytes: int = DEFAULT_MAX_BYTES
) -> Callable[[str], tuple[int, int] | None]:
    """An ``image_sizes=`` callable that fetches each URL's header once (``fetch_image_size``)
    and remembers the answer, failures included, for the life of the callable."""
    seen: dict[str, tuple[int, int] | None] = {}

    def size(url: str) -> tuple[int, int] | None:
        if url not in seen:
            seen[url] = fetch_image_size(url, timeout=timeout, max_bytes=max_bytes)
        return seen[url]

    return size
