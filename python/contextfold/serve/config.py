"""The proxy's settings: flags over environment over a TOML file over the defaults.

TOML (``--config contextfold.toml``), every key optional::

    upstream = "https://api.openai.com"          # default upstream of every API
    [upstreams]                                   # per API: chat, responses, anthropic, gemini
    anthropic = "https://api.anthropic.com"
    gemini = "https://generativelanguage.googleapis.com"
    [compaction]
    budget = 60000            # tokens after a compaction (default: half the trigger)
    context_window = 128000   # when the model's window is not known
    trigger = 100000          # tokens (int) or a share of the window (float)
    strategy = "hybrid"       # mask | summarize | hybrid
    summarizer = "extractive" # or PROVIDER:MODEL, e.g. "openai:gpt-4o-mini" (key from the environment)

Environment: ``CONTEXTFOLD_UPSTREAM``, ``CONTEXTFOLD_HOST``, ``CONTEXTFOLD_PORT``,
``CONTEXTFOLD_REDIS``, ``CONTEXTFOLD_BUDGET``, ``CONTEXTFOLD_CONTEXT_WINDOW``,
``CONTEXTFOLD_TRIGGER``, ``CONTEXTFOLD_STRATEGY``, ``CONTEXTFOLD_SUMMARIZER``, ``CONTEXTFOLD_STRICT`` (1/true),
``CONTEXTFOLD_TIMEOUT``, ``CONTEXTFOLD_WORKERS``.
"""

from __future__ import annotations

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
    ``max_cached_bytes``: the bound of the per-conversation state kept in memory. ``workers``:
    threads reading whole bodies and compacting (more compete with the event loop for the GIL).
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

    def __post_init__(self) -> None:
        if self.strategy not in STRATEGIES:
            raise ValueError(f"unknown strategy {self.strategy!r}; valid: {', '.join(STRATEGIES)}")
        bad = sorted(set(self.upstreams) - set(APIS))
        if bad:
            raise ValueError(f"unknown API in upstreams: {', '.join(bad)}; valid: {', '.join(APIS)}")
        for name in ("budget", "context_window"):
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v <= 0):
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        if isinstance(self.workers, bool) or not isinstance(self.workers, int) or self.workers < 1:
            raise ValueError(f"workers must be an int >= 1, got {self.workers!r}")
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


def _number(text: str) -> int | float:
    return float(text) if any(c in text for c in ".eE") else int(text)


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
    "CONTEXTFOLD_STRICT": ("strict", lambda v: v.strip().lower() in ("1", "true", "yes", "on")),
    "CONTEXTFOLD_TIMEOUT": ("timeout", float),
    "CONTEXTFOLD_WORKERS": ("workers", int),
}


def _from_toml(path: Path) -> dict[str, Any]:
    try:
        import tomllib
    except ModuleNotFoundError:  # pragma: no cover - Python 3.10
        import tomli as tomllib  # type: ignore[no-redef,import-not-found,unused-ignore]
    with path.open("rb") as f:
        data = tomllib.load(f)
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
    over ``config_file`` over the defaults. Raises ValueError naming a bad key or value."""
    values: dict[str, Any] = {}
    if config_file is not None:
        values.update(_from_toml(Path(config_file)))
    env = os.environ if environ is None else environ
    for var, (name, parse) in _ENV.items():
        if env.get(var):
            try:
                values[name] = parse(env[var])
            except ValueError as e:
                raise ValueError(f"{var}={env[var]!r}: {e}") from e
    for name, v in (flags or {}).items():
        if v is not None:
            values[name] = v
    if "upstreams" in values:
        values["upstreams"] = dict(values["upstreams"])
    return replace(ServeConfig(), **values)
