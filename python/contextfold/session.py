"""Per-conversation token accounting: incremental estimates, calibration from real usage, the gate.

A ``Session`` follows one conversation. Before every model call ask it how full the context is
(``estimate``, ``pressure``, ``should_compact``); after every response give it the provider's real
count (``record_usage``). The work per turn is proportional to the messages appended since the last
call, not to the history (the cache lives in the Rust ``SessionLedger``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from contextfold._args import HUGE, count_arg
from contextfold._core import ExactLedger, PricedRequest, SessionLedger, wire_bytes
from contextfold.errors import InvalidUsageError, SessionStateError, UnknownModelError
from contextfold.images import ImageSizes
from contextfold.limits import context_window as _context_window
from contextfold.summarize.base import utf8_text
from contextfold.usage import Usage, prompt_tokens_of, usage_of

if TYPE_CHECKING:
    from contextfold._core import _Encoding, _Provider

__all__ = ["Session", "prompt_tokens_of"]

log = logging.getLogger("contextfold.session")

#: Trigger ratio of the gate: compact once the estimate reaches this fraction of the window...
DEFAULT_TRIGGER_RATIO = 0.9
#: ...or once fewer than this many tokens are left for the reply, whichever comes first
#: (capped at a quarter of the window for small models). For a 200k window:
#: min(200_000 * 0.9, 200_000 - 32_768) = 167_232.
DEFAULT_OUTPUT_RESERVE = 32_768

#: Bound on a restored state's settings tokens (what thinking and a forced tool add: 135 at
#: most today); a forged state cannot add more to every estimate.
MAX_SETTINGS_TOKENS = 1 << 20

#: Summary hashes a session keeps (the newest; a summary older than these is folded long ago).
MAX_SUMMARY_HASHES = 16


def _utf8(name: Any) -> Any:
    """A name the core reads as UTF-8, each lone surrogate made U+FFFD; other values as given
    (the core's TypeError names what is not a str)."""
    return utf8_text(name) if isinstance(name, str) else name


class Session:
    """Token accounting for one conversation.

    ``provider`` / ``model`` pick the estimator (as in ``contextfold.estimate``); ``tools``,
    ``system`` and ``response_format`` are priced once as the request overhead of every
    estimate. ``context_window`` defaults to ``contextfold.context_window(model)`` (None when
    unknown: the gate then needs it);
    ``output_reserve`` defaults to ``min(32_768, context_window // 4)``; ``trigger_ratio`` to 0.9.
    ``max_request_bytes`` turns on the wire-size cap of the gate (compact JSON bytes of the
    messages, base64 included: a separate notion from token pressure). ``text_encoding``
    (``"o200k_base"``, ``"cl100k_base"``, ``"o200k_harmony"``) tokenizes the text of each NEW
    message with that BPE (scaled to the provider's tokens) instead of the sampled estimate:
    ~30 ns per byte once per message, which halves the error of the appended part (SWE
    trajectories: p90 1.67% -> ~1%, p99 8.0% -> ~3.4%); the default keeps a turn in microseconds.
    ``image_sizes`` (a mapping from image URL or uploaded file id to ``(width, height)``, or a
    callable returning one or None) sizes remote images, asked once per new message that
    carries one. ``exact=True`` (OpenAI models with a public tokenizer; chat.completions
    messages, the system prompt among them) makes ``estimate`` the exact ``contextfold.count`` of
    the request: each message is tokenized once, when first seen, and remembered by content, so
    a turn costs the appended messages only.

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
        response_format: Mapping[str, Any] | type | None = None,
        output_reserve: int | None = None,
        trigger_ratio: float = DEFAULT_TRIGGER_RATIO,
        max_request_bytes: int | None = None,
        smoothing: float = 0.5,
        text_encoding: str | None = None,
        image_sizes: ImageSizes | None = None,
        exact: bool = False,
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
        # The core reads these names as UTF-8: a lone surrogate becomes U+FFFD (an unknown
        # provider or encoding is then the core's ValueError naming the valid ones).
        provider, model, text_encoding = _utf8(provider), _utf8(model), _utf8(text_encoding)
        # The request is read and priced once here (provider and encoding are validated by the
        # core: ValueError naming the valid names); every estimate reuses it.
        request = PricedRequest(
            provider=cast("_Provider", provider),
            model=model,
            tools=tools,
            system=system,
            response_format=response_format,
            text_encoding=cast("_Encoding | None", text_encoding),
        )
        self._core = SessionLedger(
            request, track_wire=max_request_bytes is not None, smoothing=smoothing, image_sizes=image_sizes)
        #: Tokens a request body's settings add (`from_request`), until a usage carries them.
        self._settings_tokens = 0
        self._exact: ExactLedger | None = None
        if exact:
            if model is None:
                raise ValueError("exact=True needs model= (an OpenAI model with a public tokenizer)")
            if system is not None:
                raise ValueError("exact=True counts chat.completions requests: put the system prompt in the messages")
            # UnknownModelError for a model without a public tokenizer.
            self._exact = ExactLedger(model=model, tools=tools, response_format=response_format)
        self._exact_extras = (tools, response_format)
        self.provider = provider
        self._window = context_window
        self._reserve = output_reserve
        self.trigger_ratio = trigger_ratio
        self.max_request_bytes = max_request_bytes
        #: Hashes (``contextfold._core.summary_hash``) of the last summaries a Compactor wrote
        #: into this conversation: a later compaction trusts a summary only by these (or by the
        #: place an inserted summary takes), never by its marker text.
        self.summary_hashes: tuple[int, ...] = ()
        if context_window is not None and output_reserve is not None and output_reserve >= context_window:
            raise ValueError("output_reserve must be smaller than context_window")

    # -- configuration -------------------------------------------------------------------------

    @property
    def model(self) -> str | None:
        return self._core.model

    @model.setter
    def model(self, model: str | None) -> None:
        """Switch model: cached costs, usage anchor and correction are dropped. With
        ``exact=True`` the new model's tokenizer is checked first: a model without a public one
        (or None) raises and leaves the session on its old model, nothing changed."""
        model = _utf8(model)
        exact = None
        if self._exact is not None:
            if model is None:
                raise ValueError("exact=True needs a model")
            tools, rf = self._exact_extras
            exact = ExactLedger(model=model, tools=tools, response_format=rf)  # raises before any change
        self._core.set_model(model)
        if exact is not None:
            self._exact = exact

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
        return self._tokens(messages)

    def _tokens(self, messages: Sequence[Any]) -> int:
        messages = self._read_twice(messages)
        extra = self._settings_tokens
        if extra and not self._core.usages:
            # A body's settings (thinking, a forced tool) until a real count carries them.
            tokens = self._core.estimate(messages) + extra
        else:
            tokens = self._core.estimate(messages)
        # The ledger still follows the history (the usage anchor is recorded against it).
        return tokens if self._exact is None else self._exact.count(messages)

    def _read_twice(self, messages: Any) -> Any:
        """``messages`` as a list when an exact session reads them twice (the ledger, then the
        count) and they are an iterator: the count of the spent one was that of an empty
        history (3 tokens for a 11-token turn). A str or mapping stays as given, for the core's
        TypeError."""
        if self._exact is None or isinstance(messages, (list, tuple, str, bytes, Mapping)):
            return messages
        if isinstance(messages, Iterable):
            return list(messages)
        return messages

    @classmethod
    def from_request(cls, body: Any, /, *, provider: str | None = None, **kw: Any) -> Session:
        """A session for the conversation of a request body as sent to the SDK (read by the
        core's body reader, as `contextfold.estimate_request` reads it): its provider, model,
        tools, system prompt and structured output; the tokens its settings add (Anthropic
        thinking, a forced tool choice) are counted until the first recorded usage carries
        them. ``kw`` are the other `Session` arguments."""
        from contextfold.request import body_errors_named, read_request

        r = read_request(body, provider=provider)
        with body_errors_named(r):
            s = cls(provider=r.provider, model=r.model, tools=r.tools, system=r.system,
                    response_format=r.response_format, **kw)
        s._settings_tokens = r.settings_tokens
        return s

    def pressure(self, messages: Sequence[Any], /) -> float:
        """``estimate(messages) / usable_tokens``: 1.0 means no room left for the reply."""
        return self._tokens(messages) / self.usable_tokens

    def should_compact(self, messages: Sequence[Any], /) -> bool:
        """True when the estimate reaches ``trigger_tokens`` or, with ``max_request_bytes``, when
        the messages' wire size exceeds it."""
        trigger = self.trigger_tokens
        if self.max_request_bytes is None:
            return self._tokens(messages) >= trigger
        messages = self._read_twice(messages)
        tokens, _, _, wire = self._core.measure(messages)
        if self._exact is not None:
            tokens = self._exact.count(messages)
        return tokens >= trigger or wire > self.max_request_bytes

    def wire_bytes(self, messages: Sequence[Any], /) -> int:
        """Compact-JSON bytes of ``messages`` (cached per message when ``max_request_bytes`` is
        set, computed in full otherwise)."""
        if self._core.track_wire:
            return self._core.measure(messages)[3]
        return wire_bytes(messages, provider=cast("_Provider", self.provider))

    def record_usage(
        self, usage: Any, /, messages: Sequence[Any] | None = None, *, model: str | None = None
    ) -> int | None:
        """Record the provider's real prompt count of a response.

        ``usage`` is the SDK usage object, the whole response or a dict (see
        ``prompt_tokens_of``), read whole (``last_usage_detail``: cache read / write tokens;
        with Anthropic's server-side compaction the anchor is the prompt of the history as
        sent, the compaction iteration's). It applies to the messages of the last ``estimate`` call, or to
        ``messages`` when given. ``model`` (default: the response's ``model`` when it has one)
        restarts the correction when it differs from the previous usage's. Returns the prompt
        tokens, or None when the usage does not say (Ollama served from cache): nothing is
        recorded then.
        """
        detail = usage_of(usage)
        tokens, response_model = detail.prompt_tokens, detail.model
        if tokens is None:
            log.debug("usage without a prompt count (unknown, not 0): nothing recorded")
            return None
        if tokens > HUGE:
            raise InvalidUsageError(f"prompt tokens {tokens} beyond any context window", "usage")
        # A response's model is the server's text: cut mid-character upstream, it holds a lone
        # surrogate the core cannot read (was: a bare UnicodeEncodeError).
        model = _utf8(model or response_model)
        self._last_usage_detail = detail
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

    @property
    def last_usage_detail(self) -> Usage | None:
        """The last recorded usage read whole: cache read / write tokens, and the compacted
        prompt of a server-side compaction (`contextfold.usage.Usage`); None before any."""
        return getattr(self, "_last_usage_detail", None)

    @property
    def usages(self) -> int:
        """Number of usages recorded since the session started (or was reset)."""
        return self._core.usages

    # -- state across processes ----------------------------------------------------------------

    def to_state(self) -> bytes:
        """The session as bytes, to continue it in another process (a replica, after a restart).

        Holds, per message of the last history seen, a 64-bit content hash and its costs (~11
        bytes), the usage anchor, correction, last usage and model, what prices the overhead
        (provider, model, system prompt, tool definitions) and this object's settings; never the
        messages, never object ids. Versioned and checksummed: ``from_state`` refuses bytes
        written by another contextfold version or changed in any way (``SessionStateError``).
        """
        meta = json.dumps(
            {
                "provider": self.provider,
                "context_window": self._window,
                "output_reserve": self._reserve,
                "trigger_ratio": self.trigger_ratio,
                "max_request_bytes": self.max_request_bytes,
                "summary_hashes": list(self.summary_hashes),
                # A body's settings (`from_request`) count until a usage carries them, in any
                # process that continues the session.
                "settings_tokens": self._settings_tokens,
            },
            separators=(",", ":"),
        )
        return self._core.to_state(meta=meta)

    @classmethod
    def from_state(cls, data: bytes, /) -> Session:
        """A session continuing the one ``to_state`` saved (possibly in another process).

        Its first estimate reads the whole history once and matches each message, by content
        hash, against the saved costs: the usage anchor is kept only when every message it
        covers is unchanged, so the estimates are the ones the original process would give, and
        a history that changed meanwhile gets the calibrated heuristic, never a stale real
        count. Raises ``SessionStateError`` (a ValueError) for bytes from another version,
        corrupted, cut or self-contradictory.
        """
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"state must be bytes, got {type(data).__name__}")
        core, meta_text = SessionLedger.from_state(bytes(data))
        try:
            meta = json.loads(meta_text)
            provider = meta["provider"]
            window = meta["context_window"]
            reserve = meta["output_reserve"]
            ratio = float(meta["trigger_ratio"])
            max_bytes = meta["max_request_bytes"]
            if not isinstance(provider, str) or not 0.0 < ratio <= 1.0:
                raise ValueError("out of range")
            for v in (window, reserve, max_bytes):
                if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 0):
                    raise ValueError("out of range")
            hashes = meta.get("summary_hashes", [])
            if not isinstance(hashes, list) or len(hashes) > MAX_SUMMARY_HASHES or not all(
                    isinstance(h, int) and not isinstance(h, bool) and 0 <= h < 2**64 for h in hashes):
                raise ValueError("summary_hashes out of range")
            settings_tokens = meta.get("settings_tokens", 0)
            if isinstance(settings_tokens, bool) or not isinstance(settings_tokens, int) or not (
                    0 <= settings_tokens <= MAX_SETTINGS_TOKENS):
                raise ValueError("settings_tokens out of range")
        except (ValueError, KeyError, TypeError, RecursionError) as e:
            # RecursionError: settings nested beyond the parser's depth (a forged state).
            raise SessionStateError(f"session state invalid: settings unreadable ({type(e).__name__})") from e
        self = cls.__new__(cls)
        self._core = core
        # An exact session is not saved: a restored one estimates (exact=True counts again).
        self._exact = None
        self._exact_extras = (None, None)
        self._settings_tokens = settings_tokens
        self.provider = provider
        self._window = window
        self._reserve = reserve
        self.trigger_ratio = ratio
        self.max_request_bytes = max_bytes
        self.summary_hashes = tuple(hashes)
        return self

    def invalidate(self, start: int = 0) -> None:
        """Forget cached costs from message ``start`` on (after editing messages in place)."""
        self._core.invalidate(count_arg("start", start))
        if self._exact is not None:
            self._exact.invalidate()

    def reset(self) -> None:
        """Forget everything learned: cached costs, usage anchor, correction, last usage."""
        self._core.reset()
        if self._exact is not None:
            self._exact.reset()

    def __repr__(self) -> str:
        return (
            f"Session(provider={self.provider!r}, model={self.model!r}, "
            f"context_window={self.context_window!r}, correction={self.correction:.4f}, "
            f"last_usage={self.last_usage!r})"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle a session (to ship it to a worker process) through ``to_state``: the copy
        continues it exactly as ``from_state`` does (content hashes, usage anchor, calibration,
        settings). An ``image_sizes`` callable or mapping does not travel: pass it again if the
        copy must size remote images."""
        return (Session.from_state, (self.to_state(),))
