"""Secrets out of the proxy's access log.

uvicorn's access log writes each request line whole, query string included, and Gemini's API
takes its key as a query parameter (``?key=...``, Google's "API keys" guide): at the default log
level the key reached the log of every request. The filter rewrites the values of such
parameters before a record is formatted; the request itself is forwarded as it came.
"""

from __future__ import annotations

import logging
from urllib.parse import unquote_plus

__all__ = ["REDACTED", "SECRET_PARAMS", "RedactSecrets", "redact_query"]

#: Query parameters whose value is a credential: Gemini's ``key``, the spellings of API keys
#: other OpenAI-compatible gateways take in the URL, an OAuth bearer token sent as a query
#: (``access_token``, RFC 6750 section 2.3) and an Azure shared-access signature (``sig``).
SECRET_PARAMS = frozenset({"key", "api-key", "api_key", "apikey", "access_token", "token", "sig"})

#: What a secret's value is replaced with in the log.
REDACTED = "REDACTED"


def redact_query(target: str) -> str:
    """``target`` (a path with its query) with the value of every ``SECRET_PARAMS`` parameter
    replaced by ``REDACTED``; the path and every other parameter stay as they were written."""
    path, sep, query = target.partition("?")
    if not sep:
        return target
    fields = []
    for field in query.split("&"):
        name, eq, _ = field.partition("=")
        if eq and unquote_plus(name).strip().lower() in SECRET_PARAMS:
            field = f"{name}={REDACTED}"
        fields.append(field)
    return f"{path}?{'&'.join(fields)}"


class RedactSecrets(logging.Filter):
    """A logging filter for ``uvicorn.access``: every string argument of a record that carries a
    query (its request target) is written with ``redact_query``. It never drops a record."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and any(isinstance(a, str) and "?" in a for a in args):
            record.args = tuple(redact_query(a) if isinstance(a, str) and "?" in a else a for a in args)
        return True
