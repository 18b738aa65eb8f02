"""Per-conversation token accounting: incremental estimates, calibration from real usage, the gate.

A ``Session`` follows one conversation. Before every model call ask it how full the context is
(``estimate``, ``pressure``, ``should_compact``); after every response give it the provider's real
count (``record_usage``). The work per turn is proportional to the messages appended since the last
call, not to the history (the cache lives in the Rust ``SessionLedger``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from contextfold._core import SessionLedger, wire_bytes
from contextfold.errors import UnknownModelError
from contextfold.images import ImageSizes
from contextfold.limits import context_window as _context_window

__all__ = ["Session", "prompt_tokens_of"]

log = logging.getLogger("contextfold.session")

#: Trigger ratio of the gate: compact once the estimate reaches this fraction of the window...
DEFAULT_TRIGGER_RATIO = 0.9
#: ...or once fewer than this many tokens are left for the reply, whichever comes first
#: (capped at a quarter of the window for small models). For a 200k window:
#: min(200_000 * 0.9, 200_000 - 32_768) = 167_232.
DEFAULT_OUTPUT_RESERVE = 32_768

_MISSING = object()


def _get(obj: Any, *names: str) -> Any:
    """The first of ``names`` present on a dict key or object attribute (its value may be None)."""
    for n in names:
        if isinstance(obj, dict):
            if n in obj:
                return obj[n]
        else:
            v = getattr(obj, n, _MISSING)
            if v is not _MISSING:
                return v
    return _MISSING


def _int(v: Any) -> int:
    return 0 if v is _MISSING or v is None else int(v)


def prompt_tokens_of(usage: Any) -> tuple[int | None, str | None]:
    """``(prompt tokens, model)`` from a provider's usage, or its whole response.

    Accepts SDK objects or dicts: OpenAI chat ``usage.prompt_tokens`` (cached tokens included),
    OpenAI Responses ``usage.input_tokens``, Anthropic ``input_tokens + cache_creation_input_tokens
    + cache_read_input_tokens`` (``input_tokens`` alone excludes the cache), Gemini
    ``usageMetadata.promptTokenCount`` (``usage_metadata.prompt_token_count`` in the SDK), Bedrock
    Converse ``inputTokens + cacheReadInputTokens + cacheWriteInputTokens``, Ollama
    ``prompt_eval_count`` (the whole prompt; ABSENT when served from the KV cache, which gives
    ``None``: unknown, not 0), or a plain int. The model is read from a whole response's ``model``
    (``modelVersion`` for Gemini) when present. Raises ``TypeError`` for an unrecognized shape.
    """
    if usage is None:
        return None, None
    if isinstance(usage, bool):
        raise TypeError("usage must be a usage object, a response or an int, got bool")
    if isinstance(usage, int):
        if usage < 0:
            raise ValueError(f"prompt tokens must be >= 0, got {usage}")
        return usage, None
    model = _get(usage, "model", "modelVersion", "model_version")
    model = model if isinstance(model, str) else None
    gemini = _get(usage, "usageMetadata", "usage_metadata")
    if gemini is not _MISSING and gemini is not None:
        tokens = _get(gemini, "promptTokenCount", "prompt_token_count")
        return (None if tokens is _MISSING or tokens is None else int(tokens)), model
    inner = _get(usage, "usage")
    if inner is not _MISSING and inner is not None and not isinstance(inner, (int, str)):
        tokens, _ = prompt_tokens_of(inner)
        return tokens, model
    # Ollama: the final (done) object of /api/chat or /api/generate.
    ollama = _get(usage, "prompt_eval_count")
    if ollama is not _MISSING:
        return (None if ollama is None else int(ollama)), model
    if _get(usage, "eval_count", "done", "total_duration") is not _MISSING:
        return None, model  # an Ollama response without prompt_eval_count: unknown
    for key in ("promptTokenCount", "prompt_token_count", "prompt_tokens"):
        v = _get(usage, key)
        if v is not _MISSING and v is not None:
            return int(v), model
    v = _get(usage, "input_tokens")
    if v is not _MISSING and v is not None:
        # Anthropic bills the cache separately; OpenAI Responses has no such fields (its
        # input_tokens already include cached tokens).
        extra = _int(_get(usage, "cache_creation_input_tokens")) + _int(_get(usage, "cache_read_input_tokens"))
        return int(v) + extra, model
    v = _get(usage, "inputTokens")
    if v is not _MISSING and v is not None:
        extra = _int(_get(usage, "cacheReadInputTokens")) + _int(_get(usage, "cacheWriteInputTokens"))
        return int(v) + extra, model
    raise TypeError(f"unrecognized usage object: {type(usage).__name__}")


class Session:
    """Token accounting for one conversation.

    ``provider`` / ``model`` pick the estimator (as in ``contextfold.estimate``); ``tools`` and
    ``system`` are priced once as the request overhead of every estimate. ``context_window``
    defaults to ``contextfold.context_window(model)`` (None when unknown: the gate then needs it);
    ``output_reserve`` defaults to ``min(32_768, context_window // 4)``; ``trigger_ratio`` to 0.9.
    ``max_request_bytes`` turns on the wire-size cap of the gate (compact JSON bytes of the
    messages, base64 included: a separate notion from token pressure). ``text_encoding``
    (``"o200k_base"``, ``"cl100k_base"``, ``"o200k_harmony"``) tokenizes the text of each NEW
    message with that BPE (scaled to the provider's tokens) instead of the sampled estimate:
    ~30 ns per byte once per message, which halves the error of the appended part (SWE
    trajectories: p90 1.67% -> ~1%, p99 8.0% -> ~3.4%); the default keeps a turn in microseconds.
    ``image_sizes`` (a mapping from image URL to ``(width, height)``, or a callable returning
    one or None) sizes remote images, asked once per new message that carries one.

    Prefix-change contract. The session caches, per message of the last history it saw, the
    message object's identity (``id()``), a cheap fingerprint (type, number of keys, length of
    ``content`` or ``parts``, number of ``tool_calls``) and its cost; never the message. The next
    call compares the identity of EVERY message with the cache, in order (a pointer compare each),
    and prices again from the first that differs: a replaced (``messages[i] = new``), removed or
    inserted earlier message is always detected. Fingerprints of the last 8 reused messages are
    re-checked every call, which catches in-place edits of recent messages and a message removed
    and a new one inserted at the same position in the same memory. Other in-place edits (mutating
    a message dict deep in the history) must be declared: ``invalidate(i)`` (from message ``i``
    on) or ``reset()``. Passing a new list with the same message objects is fine (histories are
    often sliced or copied).

    Usage anchor. ``record_usage`` gives the provider's real prompt count for the last estimated
    history (or ``messages=``). While those messages are unchanged, ``estimate`` answers
    ``real + (heuristic cost of the messages appended since)``; otherwise the calibrated
    heuristic ``correction * heuristic``. ``correction`` is real / heuristic, smoothed
    exponentially (``smoothing`` = weight of the newest usage) per session, restarted when the
    recorded model changes. The gate and its baseline use the same token notion (an image costs
    its token formula both in the real count and in the appended estimate), so "grown since the
    last usage" stays coherent.

    Threads: a session may be shared between threads. Calls into the ledger are serialized by a
    mutex, so each call is atomic; which history "the last estimate" is then depends on timing:
    pass ``messages=`` to ``record_usage`` in shared sessions. Memory: the session holds no
    reference to messages or their strings, only ~40 bytes per message.
    """

    def __init__(
        self,
        *,
        provider: str = "openai",
        model: str | None = None,
        context_window: int | None = None,
        tools: Sequence[Any] | None = None,
        system: Any = None,
        output_reserve: int | None = None,
        trigger_ratio: float = DEFAULT_TRIGGER_RATIO,
        max_request_bytes: int | None = None,
        smoothing: float = 0.5,
        text_encoding: str | None = None,
        image_sizes: ImageSizes | None = None,
    ) -> None:
        if not 0.0 < trigger_ratio <= 1.0:
            raise ValueError(f"trigger_ratio must be within (0, 1], got {trigger_ratio}")
        for name, v in (("context_window", context_window), ("output_reserve", output_reserve),
                        ("max_request_bytes", max_request_bytes)):
            if v is not None and (isinstance(v, bool) or not isinstance(v, int)):
                raise TypeError(f"{name} must be an int, got {type(v).__name__}")
            if v is not None and v <= 0 and name != "output_reserve":
                raise ValueError(f"{name} must be positive, got {v}")
        if output_reserve is not None and output_reserve < 0:
            raise ValueError(f"output_reserve must be >= 0, got {output_reserve}")
        self._core = SessionLedger(
            provider=provider,
            model=model,
            tools=tools,
            system=system,
            track_wire=max_request_bytes is not None,
            smoothing=smoothing,
            text_encoding=text_encoding,
            image_sizes=image_sizes,
        )
        self.provider = provider
        # Kept for pickling: a copy in another process is rebuilt from these (see __reduce__).
        self._init = {"tools": tools, "system": system, "smoothing": smoothing, "text_encoding": text_encoding}
        self._window = context_window
        self._reserve = output_reserve
        self.trigger_ratio = trigger_ratio
        self.max_request_bytes = max_request_bytes
        if context_window is not None and output_reserve is not None and output_reserve >= context_window:
            raise ValueError("output_reserve must be smaller than context_window")

    # -- configuration -------------------------------------------------------------------------

    @property
    def model(self) -> str | None:
        return self._core.model

    @model.setter
    def model(self, model: str | None) -> None:
        """Switch model: cached costs, usage anchor and correction are dropped."""
        self._core.set_model(model)

    @property
    def context_window(self) -> int | None:
        """The window in tokens: as given, else looked up from ``model``, else None."""
        if self._window is not None:
            return self._window
        model = self._core.model
        if model is None:
            return None
        try:
            return _context_window(model)
        except UnknownModelError:
            return None

    def _require_window(self) -> int:
        w = self.context_window
        if w is None:
            raise ValueError(
                f"no context window for model {self.model!r}: pass Session(context_window=...)"
            )
        return w

    @property
    def output_reserve(self) -> int | None:
        """Tokens kept free for the reply: as given, else ``min(32_768, context_window // 4)``."""
        if self._reserve is not None:
            return self._reserve
        w = self.context_window
        return None if w is None else min(DEFAULT_OUTPUT_RESERVE, w // 4)

    @property
    def usable_tokens(self) -> int:
        """``context_window - output_reserve``: the prompt budget ``pressure`` divides by."""
        w = self._require_window()
        usable = w - (self.output_reserve or 0)
        if usable <= 0:
            raise ValueError(f"output_reserve {self.output_reserve} leaves no room in a {w}-token window")
        return usable

    @property
    def trigger_tokens(self) -> int:
        """``min(context_window * trigger_ratio, context_window - output_reserve)``."""
        w = self._require_window()
        return int(min(w * self.trigger_ratio, w - (self.output_reserve or 0)))

    # -- per turn ------------------------------------------------------------------------------

    def estimate(self, messages: Sequence[Any], /) -> int:
        """Prompt tokens that sending ``messages`` will cost (overhead included).

        O(messages appended since the last call) when ``messages`` extends the history seen last
        time (see the prefix-change contract in the class docstring).
        """
        return self._core.estimate(messages)

    def pressure(self, messages: Sequence[Any], /) -> float:
        """``estimate(messages) / usable_tokens``: 1.0 means no room left for the reply."""
        return self._core.estimate(messages) / self.usable_tokens

    def should_compact(self, messages: Sequence[Any], /) -> bool:
        """True when the estimate reaches ``trigger_tokens`` or, with ``max_request_bytes``, when
        the messages' wire size exceeds it."""
        trigger = self.trigger_tokens
        if self.max_request_bytes is None:
            return self._core.estimate(messages) >= trigger
        tokens, _, _, wire = self._core.measure(messages)
        return tokens >= trigger or wire > self.max_request_bytes

    def wire_bytes(self, messages: Sequence[Any], /) -> int:
        """Compact-JSON bytes of ``messages`` (cached per message when ``max_request_bytes`` is
        set, computed in full otherwise)."""
        if self._core.track_wire:
            return self._core.measure(messages)[3]
        return wire_bytes(messages, provider=self.provider)

    def record_usage(
        self, usage: Any, /, messages: Sequence[Any] | None = None, *, model: str | None = None
    ) -> int | None:
        """Record the provider's real prompt count of a response.

        ``usage`` is the SDK usage object, the whole response or a dict (see
        ``prompt_tokens_of``). It applies to the messages of the last ``estimate`` call, or to
        ``messages`` when given. ``model`` (default: the response's ``model`` when it has one)
        restarts the correction when it differs from the previous usage's. Returns the prompt
        tokens, or None when the usage does not say (Ollama served from cache): nothing is
        recorded then.
        """
        tokens, response_model = prompt_tokens_of(usage)
        if tokens is None:
            log.debug("usage without a prompt count (unknown, not 0): nothing recorded")
            return None
        model = model or response_model
        n, chars, heuristic, before, real, correction, changed = self._core.record_usage(
            tokens, messages=messages, model=model
        )
        if log.isEnabledFor(logging.DEBUG):
            log.debug(
                "usage recorded: messages=%d payload_chars=%d estimate=%d heuristic=%d real=%d "
                "error=%+.2f%% correction=%.4f%s",
                n, chars, before, heuristic, real,
                100.0 * (before - real) / real if real else 0.0,
                correction, " (model changed: correction restarted)" if changed else "",
            )
        return tokens

    @property
    def correction(self) -> float:
        """Smoothed real / heuristic ratio of this session (1.0 before any usage)."""
        return self._core.correction

    @property
    def last_usage(self) -> int | None:
        """The last recorded real prompt count."""
        return self._core.last_usage

    def invalidate(self, start: int = 0) -> None:
        """Forget cached costs from message ``start`` on (after editing messages in place)."""
        if start < 0:
            raise ValueError("start must be >= 0")
        self._core.invalidate(start)

    def reset(self) -> None:
        """Forget everything learned: cached costs, usage anchor, correction, last usage."""
        self._core.reset()

    def __repr__(self) -> str:
        return (
            f"Session(provider={self.provider!r}, model={self.model!r}, "
            f"context_window={self.context_window!r}, correction={self.correction:.4f}, "
            f"last_usage={self.last_usage!r})"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle a session (to ship it to a worker process): its configuration and calibration
        (correction, last usage and its model). The per-message cache and the usage anchor are
        keyed by object identities that mean nothing in another process: the copy starts
        without them (its first estimate prices the whole history, corrected)."""
        kwargs = dict(
            self._init,
            provider=self.provider,
            model=self.model,
            context_window=self._window,
            output_reserve=self._reserve,
            trigger_ratio=self.trigger_ratio,
            max_request_bytes=self.max_request_bytes,
        )
        return (_restore_session, (kwargs, self._core.calibration()))


def _restore_session(kwargs: dict[str, Any], calibration: tuple[Any, ...]) -> Session:
    s = Session(**kwargs)
    s._core.restore_calibration(*calibration)
    return s
