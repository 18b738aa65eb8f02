"""The proxy's settings: flags over environment over a TOML file over the defaults.

TOML (``--config contextfold.toml``), every key optional::

    upstream = "https://api.openai.com"          # default upstream of every API
    max_body_bytes = 67108864                     # the largest body of a compacted route (413 past it)
    body_timeout = 120                            # seconds such a body may take to arrive (408 past them)
    [upstreams]                                   # per API: chat, responses, anthropic, gemini
    anthropic = "https://api.anthropic.com"
    gemini = "https://generativelanguage.googleapis.com"
    [compaction]
    budget = 60000            # tokens after a compaction (default: half the trigger)
    context_window = 128000   # when the model's window is not known
    trigger = 100000          # tokens (int) or a share of the window (float)
    strategy = "hybrid"       # mask | summarize | hybrid
    summarizer = "extractive" # or PROVIDER:MODEL, e.g. "openai:gpt-4o-mini" (key from the environment)
    recall = false            # offer the model contextfold_recall and answer its calls here
    recall_rounds = 3         # recall rounds answered per request before the response goes back

Environment: ``CONTEXTFOLD_UPSTREAM``, ``CONTEXTFOLD_HOST``, ``CONTEXTFOLD_PORT``,
``CONTEXTFOLD_REDIS``, ``CONTEXTFOLD_BUDGET``, ``CONTEXTFOLD_CONTEXT_WINDOW``,
``CONTEXTFOLD_TRIGGER``, ``CONTEXTFOLD_STRATEGY``, ``CONTEXTFOLD_SUMMARIZER``, ``CONTEXTFOLD_STRICT`` (1/true),
``CONTEXTFOLD_TIMEOUT``, ``CONTEXTFOLD_WORKERS``, ``CONTEXTFOLD_RECALL`` (1/true),
``CONTEXTFOLD_RECALL_ROUNDS``, ``CONTEXTFOLD_MAX_BODY_BYTES``, ``CONTEXTFOLD_BODY_TIMEOUT``.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

__all__ = ["APIS", "ServeConfig", "load_config"]

APIS = ("chat", "responses", "anthropic", "gemini")
STRATEGIES = ("mask", "summarize", "hybrid")
#: Providers an LLM summarizer can be named by (``LLMSummarizer``'s default clients).
SUMMARIZER_PROVIDERS = ("openai", "anthropic", "gemini", "ollama")


@dataclass(frozen=True, slots=True)
class ServeConfig:
    """Settings of ``contextfold serve``.

    ``upstream``: base URL the request path is appended to (``https://api.openai.com``: the
    proxy forwards ``/v1/chat/completions`` to ``https://api.openai.com/v1/chat/completions``);
    ``upstreams`` overrides it per API (``chat``, ``responses``, ``anthropic``, ``gemini``).
    ``budget`` / ``context_window`` / ``trigger`` (tokens, or a float share of the window) /
    ``strategy`` are the Compactor's; ``summarizer`` is ``extractive`` (offline) or
    ``PROVIDER:MODEL`` (an ``LLMSummarizer`` on the SDK's default client, its key read from the
    environment; it falls back to the extractive digest on any failure). ``strict``: refuse (413) a request over
    the gate that cannot be compacted instead of forwarding it unchanged. ``redis``: URL of the
    shared fold cache (default: in memory). ``timeout``: seconds for the upstream (connect and
    each read); ``max_connections``: the pooled client's limit. ``max_conversations`` /
    ``max_cached_bytes``: the bound of the per-conversation state kept in memory (with ``recall``,
    a conversation whose turns ask for both kinds of fold keeps a record of each). ``workers``:
    threads reading whole bodies and compacting (more compete with the event loop for the GIL).
    ``recall``: compact recoverably (every fold and placeholder names an id), send the recall
    tool with every body that carries such a fold, and answer the model's recall calls in the
    proxy (``contextfold.serve.recall_loop``), at most ``recall_rounds`` rounds per request;
    the stored originals live in Redis with ``redis``, else in memory. ``max_body_bytes`` /
    ``body_timeout``: the largest body of a route the proxy compacts, and the seconds it may take
    to arrive (a 413 or a 408 in the API's error shape past them): such a body is read whole and
    parsed, so each request's memory and time are bounded by these.
    """

    upstream: str | None = None
    upstreams: Mapping[str, str] = field(default_factory=dict)
    host: str = "127.0.0.1"
    port: int = 8790
    redis: str | None = None
    budget: int | None = None
    context_window: int | None = None
    trigger: int | float | None = None
    strategy: str = "hybrid"
    summarizer: str = "extractive"
    strict: bool = False
    timeout: float = 600.0
    max_connections: int = 256
    max_conversations: int = 4096
    max_cached_bytes: int = 1 << 30
    workers: int = 2
    recall: bool = False
    recall_rounds: int = 3
    max_body_bytes: int = 64 << 20
    body_timeout: float = 120.0

    def __post_init__(self) -> None:
        # Every value is checked here, whichever of flags, environment, TOML or Python it came
        # from: a bad one would otherwise surface as a crash at startup (a port over 65535, a
        # port that is a string) or as a proxy that fails every request (a negative trigger or
        # timeout). A value of the wrong type is a ValueError too: settings are read from text
        # (TOML, the environment), and load_config's callers catch ValueError for a bad one.
        for name in ("upstream", "redis"):
            if getattr(self, name) is not None and not isinstance(getattr(self, name), str):
                raise ValueError(f"{name} must be a URL string, got {getattr(self, name)!r}")
        for name in ("host", "strategy", "summarizer"):
            if not isinstance(getattr(self, name), str):
                raise ValueError(f"{name} must be a string, got {getattr(self, name)!r}")  # noqa: TRY004
        for name in ("strict", "recall"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be true or false, got {getattr(self, name)!r}")  # noqa: TRY004
        if self.strategy not in STRATEGIES:
            raise ValueError(f"unknown strategy {self.strategy!r}; valid: {', '.join(STRATEGIES)}")
        if not isinstance(self.upstreams, Mapping) or not all(isinstance(v, str) for v in self.upstreams.values()):
            raise ValueError(f"upstreams must map API names to URL strings, got {self.upstreams!r}")
        bad = sorted(set(self.upstreams) - set(APIS))
        if bad:
            raise ValueError(f"unknown API in upstreams: {', '.join(bad)}; valid: {', '.join(APIS)}")
        if not _is_int(self.port) or not 1 <= self.port <= 65535:
            raise ValueError(f"port must be an int from 1 to 65535, got {self.port!r}")
        for name in ("budget", "context_window"):
            v = getattr(self, name)
            if v is not None and (not _is_int(v) or v <= 0):
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        t = self.trigger
        if t is not None and not (_is_int(t) and t >= 1 or isinstance(t, float) and 0 < t <= 1):
            raise ValueError(f"trigger must be tokens (an int >= 1) or a share of the window (a float in (0, 1]), got {t!r}")
        if self.budget is not None and isinstance(t, int) and not isinstance(t, bool) and self.budget >= t:
            # (As a Compactor refuses it: compacted to at least the trigger, every request compacts.)
            raise ValueError(f"budget ({self.budget} tokens) must be below the trigger ({t} tokens)")
        for name in ("timeout", "body_timeout"):
            v = getattr(self, name)
            if not (isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v < math.inf):
                raise ValueError(f"{name} must be a positive number of seconds, got {v!r}")
        for name in ("max_connections", "max_conversations", "max_cached_bytes", "workers", "recall_rounds",
                     "max_body_bytes"):
            v = getattr(self, name)
            if not _is_int(v) or v < 1:
                raise ValueError(f"{name} must be an int >= 1, got {v!r}")
        provider, sep, model = self.summarizer.partition(":")
        if self.summarizer != "extractive" and not (sep and model and provider in SUMMARIZER_PROVIDERS):
            raise ValueError(f"unknown summarizer {self.summarizer!r}; valid: extractive, or PROVIDER:MODEL with "
                             f"PROVIDER one of {', '.join(SUMMARIZER_PROVIDERS)}")

    def upstream_for(self, api: str) -> str:
        """The base URL requests of ``api`` go to (no trailing slash); ValueError when none."""
        url = self.upstreams.get(api) or self.upstream
        if not url:
            raise ValueError(f"no upstream for the {api} API: pass --upstream URL")
        return url.rstrip("/")


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _checked(values: Mapping[str, Any], where: str) -> None:
    """Raise ValueError prefixed with ``where`` (a file, a variable) when ``values`` are not
    valid settings, so the message says where the bad value came from."""
    try:
        replace(ServeConfig(), **values)
    except ValueError as e:
        raise ValueError(f"{where}: {e}") from None


def _number(text: str) -> int | float:
    return float(text) if any(c in text for c in ".eE") else int(text)


def _flag(text: str) -> bool:
    return text.strip().lower() in ("1", "true", "yes", "on")


_ENV: dict[str, tuple[str, Any]] = {
    "CONTEXTFOLD_UPSTREAM": ("upstream", str),
    "CONTEXTFOLD_HOST": ("host", str),
    "CONTEXTFOLD_PORT": ("port", int),
    "CONTEXTFOLD_REDIS": ("redis", str),
    "CONTEXTFOLD_BUDGET": ("budget", int),
    "CONTEXTFOLD_CONTEXT_WINDOW": ("context_window", int),
    "CONTEXTFOLD_TRIGGER": ("trigger", _number),
    "CONTEXTFOLD_STRATEGY": ("strategy", str),
    "CONTEXTFOLD_SUMMARIZER": ("summarizer", str),
    "CONTEXTFOLD_STRICT": ("strict", _flag),
    "CONTEXTFOLD_TIMEOUT": ("timeout", float),
    "CONTEXTFOLD_WORKERS": ("workers", int),
    "CONTEXTFOLD_RECALL": ("recall", _flag),
    "CONTEXTFOLD_RECALL_ROUNDS": ("recall_rounds", int),
    "CONTEXTFOLD_MAX_BODY_BYTES": ("max_body_bytes", int),
    "CONTEXTFOLD_BODY_TIMEOUT": ("body_timeout", float),
}


def _from_toml(path: Path) -> dict[str, Any]:
    try:
        import tomllib
    except ModuleNotFoundError:  # pragma: no cover - Python 3.10
        import tomli as tomllib  # type: ignore[no-redef,import-not-found,unused-ignore]
    with path.open("rb") as f:
        try:
            data = tomllib.load(f)
        except ValueError as e:  # TOMLDecodeError, or bytes that are not UTF-8
            raise ValueError(f"{path}: {e}") from None
    out: dict[str, Any] = {}
    known = {f.name for f in fields(ServeConfig)}
    for key, value in data.items():
        if key == "compaction" and isinstance(value, dict):
            for k, v in value.items():
                if k not in known:
                    raise ValueError(f"{path}: unknown key compaction.{k}")
                out[k] = v
        elif key in known:
            out[key] = value
        else:
            raise ValueError(f"{path}: unknown key {key}")
    return out


def load_config(
    flags: Mapping[str, Any] | None = None,
    *,
    config_file: str | Path | None = None,
    environ: Mapping[str, str] | None = None,
) -> ServeConfig:
    """The settings: ``flags`` (None values ignored) over ``environ`` (default ``os.environ``)
    over ``config_file`` over the defaults. Raises ValueError naming a bad key or value, and the
    file or environment variable it came from."""
    values: dict[str, Any] = {}
    if config_file is not None:
        from_file = _from_toml(Path(config_file))
        _checked(from_file, str(config_file))
        values.update(from_file)
    env = os.environ if environ is None else environ
    for var, (name, parse) in _ENV.items():
        if env.get(var):
            where = f"{var}={env[var]!r}"
            try:
                value = parse(env[var])
            except ValueError as e:
                raise ValueError(f"{where}: {e}") from None
            _checked({name: value}, where)
            values[name] = value
    for name, v in (flags or {}).items():
        if v is not None:
            values[name] = v
    if isinstance(values.get("upstreams"), Mapping):
        values["upstreams"] = dict(values["upstreams"])
    return replace(ServeConfig(), **values)
