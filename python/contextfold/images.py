"""Sizes of images whose pixels are not in the request (remote URLs, uploaded files).

``estimate``, ``estimate_each``, ``count``, ``Session`` and ``breakdown`` take ``image_sizes=``:
a mapping from reference to ``(width, height)`` in pixels, or a callable returning that or None.
The reference is the image's URL, or the id of an uploaded file: OpenAI ``file_id``
(``input_image``, ``image_file``), Anthropic ``source.file_id``, Gemini ``fileData.fileUri``,
Bedrock ``s3Location.uri``. Only the references the core could not size are asked about. ``fetch_image_size`` is an opt-in callable that reads the
first bytes of an image over HTTP; nothing here touches the network unless you call it.
"""

from __future__ import annotations

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
    range is read no further than ``max_bytes``), or None when the header was not found, the
    URL is not http(s), or the request failed or took longer than ``timeout`` seconds.

    Opt-in: pass it (or ``http_image_sizes()``) as ``image_sizes=``; contextfold never fetches
    anything by default."""
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        return None
    if max_bytes <= 0:
        raise ValueError(f"max_bytes must be positive, got {max_bytes}")
    req = urllib.request.Request(url, headers={"Range": f"bytes=0-{max_bytes - 1}"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 - http(s) only
            data = resp.read(max_bytes)
    except (urllib.error.URLError, OSError, ValueError):
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
