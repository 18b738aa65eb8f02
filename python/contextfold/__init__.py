"""contextfold: keep LLM-agent conversations inside their context window.

Token counts are in the provider's tokens; sizes named ``*_bytes`` are bytes of the serialized
request. See README.md for the API at a glance.
"""

from contextfold._core import (
    PROVIDERS,
    __version__,
    count,
    count_each,
    count_many,
    count_text,
    encoding_for,
    estimate,
    estimate_each,
    estimate_many,
    image_size,
    image_tokens,
    request_overhead,
    shrink_json,
    wire_bytes,
)
from contextfold.errors import (
    InvalidMessageError,
    InvalidUsageError,
    SessionStateError,
    SessionStoreError,
    UnknownModelError,
)
from contextfold.limits import context_window, ollama_context_window
from contextfold.prune import find_tail_start, prune
from contextfold.session import Session

__all__ = [
    "PROVIDERS",
    "InvalidMessageError",
    "InvalidUsageError",
    "Session",
    "SessionStateError",
    "SessionStoreError",
    "UnknownModelError",
    "__version__",
    "context_window",
    "count",
    "count_each",
    "count_many",
    "count_text",
    "encoding_for",
    "estimate",
    "estimate_each",
    "estimate_many",
    "find_tail_start",
    "image_size",
    "image_tokens",
    "ollama_context_window",
    "prune",
    "request_overhead",
    "shrink_json",
    "wire_bytes",
]
