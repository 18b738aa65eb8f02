"""``contextfold serve``: a compacting proxy in front of any provider API
(``pip install '.[proxy]' in a checkout of contextfold``).

Point an SDK's base URL at the proxy; it forwards every request to the upstream, compacting the
history when it reaches the gate and folding it the same way on every later turn, so the prefix
the upstream sees stays byte-identical (its prompt cache keeps hitting). See
docs/guides/serving.md.

- ``config``: ``ServeConfig`` and ``load_config`` (flags, environment, TOML).
- ``app``: ``create_app(config)``, the ASGI app.
- ``folding``: what happens to one request body; ``fold_cache``: memory or Redis folds;
  ``metrics``: the Prometheus page; ``body``: the raw JSON offsets; ``apis``: each API's shape.
"""

from contextfold.serve.config import ServeConfig, load_config

__all__ = ["ServeConfig", "create_app", "load_config"]


def __getattr__(name: str) -> object:
    # The app needs the [proxy] extra (starlette, httpx): imported only when asked for.
    if name == "create_app":
        try:
            from contextfold.serve.app import create_app
        except ImportError as e:  # pragma: no cover - exercised only without the extra
            raise ImportError("contextfold serve needs its extra: pip install '.[proxy]' in a checkout of contextfold") from e
        return create_app
    raise AttributeError(name)
