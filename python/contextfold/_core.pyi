"""Type stubs of the Rust extension. Token counts are in the provider's tokens; `*_bytes` are bytes."""

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, NotRequired, TypedDict, Unpack, final

_Provider = Literal["openai", "anthropic", "gemini", "ollama", "openai-compatible"]
_Detail = Literal["auto", "low", "high", "original"]
# URL (or file id) -> (width, height) in pixels; or a callable returning that or None.
_ImageSizes = Mapping[str, tuple[int, int] | None] | Callable[[str], tuple[int, int] | None]
# A structured-output schema: OpenAI's `response_format`, the Responses `text` (or its `format`),
# Anthropic's `output_format`, Gemini's `generationConfig` or a bare JSON schema, or a pydantic
# model class (its `model_json_schema()`).
_ResponseFormat = Mapping[str, Any] | type

__version__: str
__all__ = [
    "IDENTIFIER_INDEX_HEADING",
    "ExactLedger",
    "MIN_SUMMARY_TOKENS",
    "PROVIDERS",
    "RECALL_TOOL",
    "SUMMARY_MARKERS",
    "WIRE_FORMATS",
    "CONTENT_KEYS",
    "SessionLedger",
    "CompactionOptions",
    "MessageCache",
    "PricedRequest",
    "PruneOptions",
    "__version__",
    "breakdown",
    "called_tools",
    "_floor_walk",
    "_model_info",
    "_vocabularies_built",
    "count",
    "count_each",
    "count_many",
    "cap_text",
    "compaction_plan",
    "compaction_verify",
    "count_text",
    "preload",
    "detect_wire_format",
    "tools_wire_format",
    "encoding_for",
    "estimate",
    "estimate_each",
    "estimate_many",
    "extractive_digest",
    "extractive_digest_report",
    "find_tail_start",
    "identifier_index",
    "identifier_index_at",
    "image_size",
    "image_tokens",
    "apply_edits",
    "prune",
    "merge_summary",
    "message_previews",
    "render_transcript",
    "tool_output_texts",
    "read_request",
    "request_overhead",
    "shrink_json",
    "tool_costs",
    "summary_block",
    "standing_rules",
    "requests_sections",
    "summary_hash",
    "summary_message",
    "wire_bytes",
    "fold_id",
    "fold_ids_in",
    "recall_calls",
    "recall_image_result",
    "recall_images",
    "recall_page",
    "recall_result",
    "recall_tool",
    "repair_history",
    "cut_middle",
    "tail_floor",
    "cap_text",
    "merge_summary",
    "message_previews",
    "render_transcript",
    "tool_output_texts",
    "shrink_arguments",
    "legal_cuts_of",
    "without_summary",
]
PROVIDERS: list[str]
#: Each wire format's key of a message's content (``"parts"`` for Gemini, else ``"content"``).
CONTENT_KEYS: dict[str, str]

def estimate(
    messages: Sequence[Any],
    /,
    *,
    provider: _Provider = "openai",
    model: str | None = None,
    tools: Sequence[Any] | None = None,
    system: str | Sequence[Any] | None = None,
    response_format: _ResponseFormat | None = None,
    image_sizes: _ImageSizes | None = None,
) -> int:
    """Estimated prompt tokens of a whole request, without tokenizing.

    ``provider`` is the wire format the messages are written in; ``model`` decides how they cost
    (token family, image formula, hidden overheads; see ``model_info``). Remote images (URLs and
    uploaded file ids) are priced as 1024x1024 unless ``image_sizes`` (URL or file id ->
    ``(width, height)``, or a callable returning it or None) knows their size; only those
    references are looked up.

    ``response_format``: the structured-output schema the reply is held to (OpenAI
    ``response_format`` or Responses ``text``, Anthropic ``output_format``, Gemini
    ``generationConfig`` or its schema, or a pydantic model class), priced with the tools.

    Equals ``sum(estimate_each(messages)) + request_overhead(tools=..., system=...,
    response_format=...)``. Every
    message is priced with its whole envelope (role, name, tool calls with ids, names, arguments
    and JSON syntax, tool results, reasoning); images by their pixel size read from the header.
    Messages may be dicts (OpenAI chat, Responses items, Anthropic, Gemini, Bedrock blocks) or
    SDK objects. Raises ``InvalidMessageError`` naming the message index and field on bad input;
    never mutates ``messages``.
    """

def called_tools(messages: Sequence[Any], /) -> list[str]:
    """The names of the tools ``messages`` call, sorted."""

def tool_costs(
    tools: Sequence[Any], /, *, provider: _Provider = "openai", model: str | None = None
) -> list[tuple[str, float]]:
    """Each tool's ``(name, own cost)`` in fractional tokens (OpenAI models: its exact
    rendering); ``contextfold.breakdown`` shares the tool schemas out in these proportions."""

def breakdown(
    messages: Sequence[Any],
    /,
    *,
    provider: _Provider = "openai",
    model: str | None = None,
    tools: Sequence[Any] | None = None,
    system: str | Sequence[Any] | None = None,
    response_format: _ResponseFormat | None = None,
    image_sizes: _ImageSizes | None = None,
) -> tuple[
    int,
    list[str],
    list[str],
    list[tuple[int, list[int]]],
    list[int],
    int,
    list[tuple[int, str, int, str]],
]:
    """Raw breakdown ``(total, kinds, roles, per_message, request, request_system, unmeasured)``
    in tokens; ``per_message`` holds ``(tokens, by_kind)`` with ``by_kind`` ordered like
    ``kinds``. Use ``contextfold.breakdown``, which wraps it in dataclasses."""

def estimate_each(
    messages: Sequence[Any],
    /,
    *,
    provider: _Provider = "openai",
    model: str | None = None,
    image_sizes: _ImageSizes | None = None,
) -> list[int]:
    """Estimated tokens of each message (envelope included), in order."""

def request_overhead(
    *,
    provider: _Provider = "openai",
    model: str | None = None,
    tools: Sequence[Any] | None = None,
    system: str | Sequence[Any] | None = None,
    response_format: _ResponseFormat | None = None,
) -> int:
    """Tokens a request costs beyond its messages: reply priming, a top-level system prompt,
    tool definitions and the provider's hidden tool-use prompt, and a structured-output schema
    (OpenAI models: the text OpenAI renders for it, as ``count`` bills it). The one overhead
    function every estimate uses."""

def wire_bytes(messages: Sequence[Any], /, *, provider: _Provider = "openai") -> int:
    """Bytes of ``messages`` serialized as compact UTF-8 JSON (base64 payloads included): the
    size that counts against a request-body cap, not against the context window."""

def image_tokens(
    image: str | bytes | bytearray,
    /,
    *,
    provider: _Provider = "openai",
    model: str | None = None,
    detail: _Detail = "auto",
) -> int:
    """Tokens one image costs under the provider's formula (OpenAI tiles or patches, Anthropic
    28-px patches, Gemini 258-token tiles) from the pixel size in its header. ``image`` is a data
    URL, a base64 string, a URL (priced at the documented 1024x1024 default) or raw bytes."""

def _floor_walk(messages: object, /, *, windows: bool = False) -> int:
    """Benchmarks only: the cheapest walk of a history (every string's length and a 128-byte
    sample of it; with ``windows``, also the three 64-byte windows the estimate reads from texts
    over 1 KiB); ``estimate`` is reported as a multiple of its time. The result is a checksum."""

def _model_info(
    model: str, /
) -> tuple[str, str, str, str | None, int | None, str | None, str, list[str], str | None]:
    """Fields of ``contextfold.ModelInfo`` (use ``contextfold.model_info``)."""

def image_size(image: str | bytes | bytearray, /) -> tuple[int, int] | None:
    """``(width, height)`` from a PNG, JPEG, GIF or WebP header, decoding only its first bytes;
    ``None`` when the header is unreadable."""

def estimate_many(
    histories: Sequence[Sequence[Any]],
    /,
    *,
    provider: _Provider = "openai",
    model: str | None = None,
    tools: Sequence[Any] | None = None,
    system: str | Sequence[Any] | None = None,
    response_format: _ResponseFormat | None = None,
    threads: int | None = None,
) -> list[int]:
    """``[estimate(h, ...) for h in histories]`` in one call: every history is read from the
    Python objects (with the GIL), then priced on ``threads`` threads (default: the CPU count)
    with the GIL released. Reading the objects dominates, so the speedup over one thread is
    modest; the gain is one boundary crossing and the GIL left free while pricing."""

@final
class SessionLedger:
    """Per-session cache of message costs, usage anchor and correction: the Rust core of
    ``contextfold.Session`` (use that class; this one is its engine).

    Stores, per message of the last history seen, the object's identity, a cheap fingerprint
    and its cost, never the message. Calls are serialized by an internal mutex."""

    def __new__(
        cls,
        request: PricedRequest,
        /,
        *,
        track_wire: bool = False,
        smoothing: float = 0.5,
        image_sizes: _ImageSizes | None = None,
    ) -> SessionLedger: ...
    def estimate(self, messages: Sequence[Any], /) -> int:
        """Prompt tokens of ``messages``: anchored on the last usage while its prefix is
        unchanged, else the calibrated heuristic; prices only messages not seen last call."""
    def measure(self, messages: Sequence[Any], /) -> tuple[int, int, int, int]:
        """``(tokens, heuristic, anchored_messages, wire_bytes)``; wire bytes are 0 unless
        ``track_wire``."""
    def record_usage(
        self, real: int, /, *, messages: Sequence[Any] | None = None, model: str | None = None
    ) -> tuple[int, int, int, int, int, float, bool]:
        """Record a real prompt count for the last estimated history (or ``messages``).
        Returns ``(messages, payload_chars, heuristic, estimate_before, real, correction,
        model_changed)``."""
    def invalidate(self, start: int = 0) -> None:
        """Forget cached costs of messages ``start..`` (in-place edits)."""
    def reset(self) -> None:
        """Forget cached costs, anchor, correction and last usage."""
    def set_model(self, model: str | None, /) -> None:
        """Switch model: new estimator; cached costs, anchor and correction dropped."""
    def to_state(self, *, meta: str = ...) -> bytes:
        """The ledger as versioned, checksummed bytes (content hashes and costs, anchor,
        correction, overhead inputs) plus ``meta``; independent of object ids."""
    @staticmethod
    def from_state(data: bytes, /) -> tuple[SessionLedger, str]:
        """``(ledger, meta)`` from ``to_state`` bytes; ``SessionStateError`` for another
        version, corrupted or contradictory bytes."""
    @property
    def usages(self) -> int: ...
    @property
    def correction(self) -> float: ...
    @property
    def last_usage(self) -> int | None: ...
    @property
    def model(self) -> str | None: ...
    @property
    def provider(self) -> str: ...
    @property
    def overhead(self) -> int: ...
    @property
    def cached_messages(self) -> int: ...
    @property
    def anchored_messages(self) -> int | None: ...
    @property
    def text_encoding(self) -> str | None: ...
    @property
    def track_wire(self) -> bool: ...

_Encoding = Literal["o200k_base", "cl100k_base", "o200k_harmony"]

def count(
    messages: Sequence[Any],
    /,
    *,
    model: str,
    tools: Sequence[Any] | None = None,
    response_format: Any | None = None,
    image_sizes: _ImageSizes | None = None,
    api: Literal["chat", "responses"] | None = None,
) -> int:
    """Prompt tokens the OpenAI API bills for this chat.completions request, tokenized with the
    model's own encoding (offline; tiktoken-rs embeds the vocabularies). By default the API is
    the one whose shape the history shows (Responses items, else chat). ``api="responses"``
    counts a Responses request (its flat tool definitions and calls are billed otherwise; its
    hosted tools get the estimator's fitted constants); ``response_format`` takes either API's
    json_schema shape (chat's, or the Responses ``text`` / ``text.format``).

    Messages: cookbook envelope (3 per message + role + content, +1 per name, +3 reply
    priming); tool calls as OpenAI renders them (ids not billed, results authored by
    ``functions.NAME``, parallel calls through ``multi_tool_use.parallel``); images by OpenAI's
    tile or patch formula from the header's pixel size. ``tools`` are rendered as OpenAI's
    TypeScript ``namespace functions`` block and a ``json_schema`` ``response_format`` as its
    ``# Response Formats`` section; both were derived from recorded usage (see README for the
    measured accuracy). Reasoning models (o3, o4, gpt-5) get their measured constants.
    Tokenizes with the GIL released. Raises ``UnknownModelError`` for a non-OpenAI model and
    ``InvalidMessageError`` (message index, field) on bad input; never mutates its arguments.
    """

def count_each(messages: Sequence[Any], /, *, model: str) -> list[int]:
    """Exact tokens of each message, envelope included, in order: ``count(messages, model=m)``
    equals ``sum(count_each(messages, model=m)) + 3`` (2 on reasoning models) without tools.
    Histories only grow, so callers can cache these per message."""

def count_text(text: str, /, *, model: str | None = None, encoding: _Encoding | None = None) -> int:
    """Tokens of ``text`` in the model's (or the named) encoding. Special-token text such as
    ``"<|endoftext|>"`` is counted as ordinary text, as the API does for content. One of
    ``model`` / ``encoding`` is required; ``encoding`` wins when both are given."""

def preload(*, provider: _Provider = "openai", model: str | None = None) -> list[_Encoding]:
    """Build now, with the GIL released, the tokenizer vocabularies that pricing for
    ``provider`` / ``model`` counts with exactly (an OpenAI model's system prompt and tool
    block), so the first ``estimate`` / ``count`` of a request does not build them: once per
    process, 0.13-0.25 s and ~25 MB for o200k_base, ~0.06 s and ~18 MB for cl100k_base, which a first call
    otherwise spends holding the GIL. Call it at start-up, or beside it in a thread (asyncio:
    ``await asyncio.to_thread(contextfold.preload, model="gpt-4o")``). Returns
    the encodings those are, ``[]`` for a model priced without one (Claude, Gemini, ...).
    Raises ``ValueError`` for an unknown provider; an unknown model name is priced as the
    provider's default family, as ``estimate`` does."""

def _vocabularies_built() -> list[_Encoding]:
    """Benchmarks and tests: the exact counter's vocabularies this process has built so far
    (``"o200k_base"`` also serves o200k_harmony)."""

def encoding_for(model: str) -> _Encoding:
    """The tiktoken encoding of an OpenAI model name (prefix match as tiktoken does; ``ft:`` and
    provider prefixes such as ``openai/`` are stripped). Raises ``UnknownModelError``."""

def count_many(
    histories: Sequence[Sequence[Any]],
    /,
    *,
    model: str,
    tools: Sequence[Any] | None = None,
    response_format: Any | None = None,
    threads: int | None = None,
) -> list[int]:
    """``[count(h, model=..., tools=..., response_format=...) for h in histories]`` in one call:
    the histories are read in batches with the GIL held, then tokenized on ``threads`` threads
    (default: the CPU count) with the GIL released. BPE dominates exact counting, so this scales
    with the cores. Raises ``UnknownModelError`` for a non-OpenAI model."""

def find_tail_start(
    messages: Sequence[Any],
    /,
    *,
    budget_tokens: int,
    protect_first_n: int = 1,
    min_tail: int = 3,
    soft_ceiling: float = 1.5,
    provider: _Provider = "openai",
    model: str | None = None,
) -> int:
    """Index where the protected tail begins, walking back from the end by token budget
    (the same per-message estimate as ``estimate_each``).

    Rules, in order: (1) ``head`` is the first cut at or after ``protect_first_n`` that splits
    no tool group; if fewer than ``min_tail + 1`` messages follow it, ``head`` is returned and
    there is nothing to summarize (minimum compressible history: head + min_tail + 1).
    (2) Messages are added from the end while the tail stays within ``budget_tokens``; one more
    is taken if the tail stays within ``budget_tokens * soft_ceiling``. (3) The tail keeps at
    least ``min_tail`` messages. (4) At least one message is left to summarize. (5) A cut inside
    a tool group (assistant tool calls / ``tool_use`` and their results) moves to the group's
    start when that stays within the ceiling or when moving past it would break the floor, else
    past the group. The summarizable middle is ``messages[head:start]``; ``start == head``
    means nothing to summarize.
    """

def apply_edits(
    messages: Sequence[Any], edits: Sequence[Sequence[Any]], /, *, copy: Callable[[Any], Any]
) -> list[Any]:
    """``(index, path, value, ...)`` edits (the compaction plan's) applied
    copy-on-write to a new list; ``value`` None removes the list element ``path`` names (after
    every replacement, highest position first); an empty ``path`` sets the message's own fields
    ``value`` (a dict) names. Use ``contextfold.prune.apply_edits``."""

class _PruneKnobs(TypedDict, total=False):
    """The knobs of ``contextfold.prune`` besides the tail's budget (see its docstring;
    defaults are the core's)."""

    protect_first_n: int
    min_tail: int
    soft_ceiling: float
    tool_result_max_tokens: int
    arguments_max_chars: int
    prune_images: bool
    dedupe: bool
    cache_block_tokens: int

@final
class PruneOptions:
    """``contextfold.prune``'s knobs, checked once (a bool or a non-int count is a TypeError, a
    negative count, ``soft_ceiling`` below 1, ``min_tail`` 0 or ``arguments_max_chars`` below
    64 a ValueError; huge counts mean "all of it")."""

    def __new__(cls, *, protect_tail_tokens: int, **options: Unpack[_PruneKnobs]) -> PruneOptions: ...
    @property
    def protect_tail_tokens(self) -> int: ...

def prune(
    messages: Sequence[Any],
    /,
    request: PricedRequest,
    options: PruneOptions,
    *,
    copy: Callable[[Any], Any],
) -> list[Any]:
    """The prune plan of ``messages`` priced by ``request``'s estimator, applied copy-on-write to
    a new list (``contextfold.prune``): only the containers on an edited path are new objects,
    dicts and lists copied shallowly and any other container by ``copy``; nothing the caller
    holds is changed."""

def merge_summary(
    message: Any, text: str, /, *, format: _WireFormat, at_start: bool, copy: Callable[[Any], Any]
) -> Any:
    """A copy of ``message`` carrying ``text`` as a text block of its content (first when
    ``at_start``, else last) in ``format``'s shape; a string content becomes ``text`` and the
    string (at the start) or two blocks (at the end). The caller's message is never changed;
    ``copy`` copies a container that is not a dict or list (a LangChain message stays of its
    class)."""

def without_summary(
    message: Any, /, *, format: _WireFormat, copy: Callable[[Any], Any]
) -> tuple[Any, bool] | None:
    """A copy of ``message`` without the contextfold summary merged into it (``merge_summary``'s
    inverse), and whether the summary opened it; None when it holds no summary, nothing besides
    one, or one inside a block with other text. The copy is for reading the turn's own words
    (a digest of the messages behind the summary), not for sending; the caller's message is
    never changed."""

def shrink_arguments(messages: Sequence[Any], /, *, max_chars: int, copy: Callable[[Any], Any]) -> list[Any]:
    """A new list where, in every message, each tool call's arguments longer than ``max_chars``
    characters (at least 64) are shrunk to valid JSON of at most that many, written in the
    message's own wire format; copy-on-write, the caller's objects are never changed."""

def legal_cuts_of(messages: Sequence[Any], /) -> list[bool]:
    """For each message, whether a cut before it keeps every tool group whole (a call and its
    results on one side), in the history's own wire format."""

def render_transcript(messages: Sequence[Any], /, *, max_block_chars: int = 8_000,
                      previous: str | None = None) -> list[str]:
    """One text entry per message, ``"[i] role: ..."``, in order, for a summarizer of any
    provider: calls as ``→ call NAME [id] ARGS`` (arguments shrunk to valid JSON), results as
    ``← result [id]: ...`` or ``[i] tool result (id): ...``, binary payloads as a short marker,
    thinking capped at a quarter, signatures and encrypted reasoning left out. Reads every wire
    format, SDK objects and LangChain messages. ``max_block_chars`` caps each text, argument or
    tool result (characters). A message carrying ``previous`` (the summary the library wrote
    and a summarizer is asked to update, given apart) is rendered without it: what its host
    says besides, or no entry when it holds the summary alone."""

def cap_text(text: str, max_chars: int, /) -> str:
    """``text`` if it has at most ``max_chars`` characters, else its head (2/3) and tail (1/3)
    around a ``…[cut N chars]…`` marker, at most ``max_chars`` characters in all."""

def message_previews(messages: Sequence[Any], /, *, width: int = 80) -> list[str]:
    """A one-line preview of each message (any wire format), at most ``width`` characters: what
    it says with whitespace collapsed, then ``→ name`` for its calls; ``…`` ends a cut line."""

def tool_output_texts(messages: Sequence[Any], /) -> list[tuple[int, str]]:
    """(message index, text) of every tool output: tool messages, Responses output items and
    result blocks; for a text agent without tool results, its user messages after the first."""

def shrink_json(text: str, /, *, max_chars: int) -> str:
    """Shrink a JSON text (a tool call's ``arguments``) to valid JSON of at most ``max_chars``
    characters, keeping its shape, so a provider that re-parses arguments never sees a cut string.

    ``max_chars`` counts characters (``len(str)``, Unicode code points), not bytes; it must be at
    least 64 (``ValueError`` otherwise). Valid JSON that fits is returned unchanged (the same
    object, byte for byte). Otherwise the first of these that fits is used:

    0. the compact form (whitespace between tokens removed);
    1. string values longer than a common cap (as large as fits, never below 32 characters) keep a
       head and a short tail around ``…[cut N chars]…``; the longest strings shrink first, short
       ones (paths, ids, enums) stay whole; keys, numbers, booleans and null are never changed;
    2. arrays longer than ``K + 1`` items keep their first ``K - 1`` items, a marker element
       ``"…[N items cut]…"`` and their last item (``K`` as large as fits, at least 2);
    3. non-empty containers from a depth on become ``"…[object of N keys cut]…"`` /
       ``"…[array of N items cut]…"`` (as deep as fits; at worst the whole document is one
       marker, wrapped so the root keeps its type: ``{"_cut": "…[object of N keys cut]…"}``,
       since arguments and Anthropic ``tool_use.input`` must stay an object).

    Cuts fall on character boundaries of the decoded string: an escape or an escaped surrogate
    pair is never split, and ``N`` counts decoded characters. An escaped LONE surrogate
    (``"\\ud800"``, which Python's json writes but strict parsers refuse) becomes ``"\\ufffd"``,
    even in a text that fits. Invalid JSON (including text already
    cut mid-value) becomes ``{"invalid_json_preview": "<head>…", "original_chars": N}``.
    Deterministic and idempotent (``shrink_json(shrink_json(x, max_chars=m), max_chars=m)`` is the
    first result); linear per pass in the input and iterative, so 100 MB or 100,000 levels of
    nesting are fine. The GIL is released for inputs over 64 KiB. A ``str`` holding lone
    surrogates cannot be JSON text and raises ``UnicodeEncodeError``.
    """

_WireFormat = Literal["chat", "responses", "anthropic", "gemini", "bedrock"]
#: ``(kind, message index, block or call index, replacement text, tokens saved)``.
# (message index, path, value or None to remove, kind, part or call index, tokens saved)
_PlannedEdit = tuple[int, list[str | int], Any, str, int, int]

SUMMARY_MARKERS: tuple[str, str]
MIN_SUMMARY_TOKENS: int
WIRE_FORMATS: list[str]

class _CompactionPlan(TypedDict):
    """What ``compaction_plan`` returns (token counts are the estimator's)."""

    #: Each message's tokens as the plan priced them (``estimate_each`` of the same messages
    #: with the request's provider and model).
    costs: list[int]
    #: Where a tail may open, one byte per position ``0..=len(messages)`` (1: no tool round is
    #: split there).
    legal: bytes
    overhead_tokens: int
    tokens_before: int
    tokens_after_mask: int
    mask_edits: list[_PlannedEdit]
    head_end: int
    tail_start: int
    kept: list[int]
    folded: list[int]
    previous_summary: str | None
    summary_role: Literal["user", "assistant"] | None
    merge_index: int | None
    merge_at_start: bool
    tail_edits: list[_PlannedEdit]
    summary_tokens: int
    fixed_tokens: int
    seams: list[int]
    reason: str | None
    input_failures: list[tuple[str, int, str]]
    #: Where the pending last turn begins (calls awaiting their results); ``len(messages)``
    #: when there is none.
    pending_from: int
    folds: NotRequired[list[tuple[str, str]]]

@final
class MessageCache:
    """Messages read once per compaction, by object identity: ``compaction_plan``,
    ``compaction_verify`` and ``extractive_digest`` given the same cache read each message
    object once and reuse that reading after. For one compaction's calls only: an object changed
    in place after it was read reads as it was."""

    def __init__(self) -> None: ...
    def __len__(self) -> int:
        """How many distinct message objects the cache has read."""
    def __reduce__(self) -> tuple[type[MessageCache], tuple[()]]:
        """A copy or a pickle is a new, empty cache."""

@final
class PricedRequest:
    """A request's fixed parts, read and priced once: provider, model, wire format, tools,
    system prompt and response format (``text_encoding``: text tokenized instead of estimated).
    A compaction plan, a verification, a prune and a session take it instead of reading the
    tools and system prompt on every call. ``format`` is needed by a plan and a verification."""

    def __new__(
        cls,
        *,
        provider: _Provider = "openai",
        model: str | None = None,
        tools: Sequence[Any] | None = None,
        system: str | Sequence[Any] | None = None,
        response_format: _ResponseFormat | None = None,
        format: _WireFormat | None = None,
        text_encoding: _Encoding | None = None,
    ) -> PricedRequest: ...
    @property
    def provider(self) -> _Provider: ...
    @property
    def model(self) -> str | None: ...
    @property
    def format(self) -> _WireFormat | None: ...
    @property
    def text_encoding(self) -> _Encoding | None: ...
    @property
    def overhead_tokens(self) -> int:
        """Tokens of reply priming, system prompt, tools and response format."""

class _CompactionKnobs(TypedDict, total=False):
    protect_first_n: int
    min_tail: int
    soft_ceiling: float
    summary_floor_share: float
    tool_result_max_tokens: int
    arguments_max_chars: int
    prune_images: bool
    dedupe: bool
    cache_block_tokens: int
    keep_tool_uses: int
    exclude_tools: Sequence[str]
    clear_tool_inputs: bool
    keep_thinking_turns: int | None
    mask_observations: bool
    recoverable: bool
    masks_only: bool

@final
class CompactionOptions:
    """The compaction plan's knobs that stay the same from call to call, checked once:
    ``protect_first_n`` (1), ``min_tail`` (3), ``soft_ceiling`` (1.5), ``summary_floor_share``
    (0: old tool output inside the tail is masked when the summary would get less than this
    share of ``summary_tokens``), and the masking knobs: ``tool_result_max_tokens`` (200),
    ``arguments_max_chars`` (2000), ``prune_images``, ``dedupe``, ``mask_observations`` (True),
    ``cache_block_tokens`` (0), ``keep_tool_uses`` (0), ``exclude_tools``,
    ``clear_tool_inputs`` (False), ``keep_thinking_turns`` (None), ``recoverable`` (False),
    ``masks_only`` (False: the caller folds where masking misses the budget; True: it never
    folds, so placeholders name their outputs' identifiers whether or not the budget is met)."""

    def __new__(cls, **options: Unpack[_CompactionKnobs]) -> CompactionOptions: ...
    def replace(self, **changes: Unpack[_CompactionKnobs]) -> CompactionOptions:
        """A copy with ``changes`` applied."""
    @property
    def min_tail(self) -> int: ...
    @property
    def tool_result_max_tokens(self) -> int: ...
    @property
    def arguments_max_chars(self) -> int: ...
    @property
    def cache_block_tokens(self) -> int: ...
    @property
    def recoverable(self) -> bool: ...

def compaction_plan(
    messages: Sequence[Any],
    /,
    request: PricedRequest,
    options: CompactionOptions,
    *,
    budget_tokens: int,
    tail_tokens: int,
    summary_tokens: int,
    pinned: Sequence[int] = ...,
    trusted_summaries: Sequence[int] = ...,
    masks: bool = True,
    check_input: bool = True,
    costs: Sequence[int] | None = None,
    reprice: Sequence[int] = ...,
    cache: MessageCache | None = None,
    carried_whole: bool = False,
) -> _CompactionPlan:
    """Plan a compaction in one walk: costs, head (``protect_first_n`` and the first user
    request), protected tail (token budget, never inside a tool group), mask edits (prune's,
    filtered by ``keep_tool_uses`` / ``exclude_tools`` / pinned, plus ``clear_tool_inputs``,
    thinking drops and text agents' observations), the middle's kept and folded messages, the
    previous summary (only one the caller trusts: its ``summary_hash`` is in
    ``trusted_summaries``, or it is the user or assistant message right after the head, carrying
    no tool result, and holds only the summary or opens with it), and the summary's role (or
    the message of the tail to merge it into, never the head or a pinned message) so no two
    neighbours share a role. ``request`` needs a ``format``. ``input_failures`` are what the
    history already fails (the checks of ``compaction_verify`` but the budget) when it is over
    ``budget_tokens``; else empty (a history within the budget is not changed). A caller moving
    the tail of a history it planned already passes ``masks=False`` (no ``mask_edits``;
    ``tokens_after_mask`` is ``tokens_before``) and ``check_input=False`` (no ``input_failures``:
    it has them), and the first plan's ``costs`` (tokens per message) with the indices of the
    messages it changed in ``reprice``: only those are priced again, as a fresh plan would price
    them. ``ValueError`` when ``costs`` does not have one entry per message or ``reprice`` names
    no message. ``cache``: messages read through it are read once per object (``MessageCache``)."""

def summary_hash(body: str, /) -> int:
    """The 64-bit hash by which a later compaction trusts a summary as the library's own (the
    text between the markers)."""

def compaction_verify(
    messages: Sequence[Any],
    /,
    request: PricedRequest,
    *,
    budget_tokens: int | None = None,
    seams: Sequence[int] = ...,
    overhead_tokens: int | None = None,
    cache: MessageCache | None = None,
) -> tuple[int, list[tuple[str, int, str]]]:
    """Check a finished history written for ``request`` (which needs a ``format``):
    ``(tokens, [(kind, message index or -1, description)])``. Pairs of calls and results per
    format, roles at ``seams`` and the first turn, JSON of every arguments string / tool_use
    input, and the budget. ``overhead_tokens`` (the plan's) stands for the request's overhead
    (by default the request's own, priced beside these messages). ``cache``: as
    ``compaction_plan``'s."""

IDENTIFIER_INDEX_HEADING: str
"""Heading of the identifier index section of a summary."""

def identifier_index_at(summary: str) -> int | None:
    """Where ``summary``'s identifier index section starts (characters): the last line that is
    the heading alone; None without one."""

def identifier_index(
    messages: Sequence[Any],
    /,
    *,
    max_tokens: int,
    provider: _Provider = "openai",
    model: str | None = None,
    previous: str | None = None,
    besides: str | None = None,
    cache: MessageCache | None = None,
) -> str:
    """The identifier index of ``messages`` (paths, URLs, hashes, ids, numbers with units, error
    lines, issue numbers, config keys, symbols), ranked by who said them, how often and how
    recently, in at most ``max_tokens`` tokens; the identifiers of ``previous`` (a summary: its
    index and its lines) carried first. Identifiers ``besides`` (the text the index is appended
    to) already shows as whole words are left out. An empty string when nothing fits.
    ``cache``: as ``compaction_plan``'s."""

def extractive_digest(
    messages: Sequence[Any],
    /,
    *,
    max_tokens: int,
    provider: _Provider = "openai",
    model: str | None = None,
    previous: str | None = None,
    instructions: str | None = None,
    cache: MessageCache | None = None,
) -> str:
    """The extractive digest of ``messages`` in at most ``max_tokens`` tokens (see
    ``contextfold.ExtractiveSummarizer``). ``cache``: as ``compaction_plan``'s."""

def extractive_digest_report(
    messages: Sequence[Any],
    /,
    *,
    max_tokens: int,
    provider: _Provider = "openai",
    model: str | None = None,
    previous: str | None = None,
    instructions: str | None = None,
    cache: MessageCache | None = None,
) -> tuple[str, int, int]:
    """``extractive_digest``, with how many of the user's requests (of ``messages`` and
    ``previous``; courtesies aside; one a standing rule says whole is kept as it) it left out,
    and of how many: ``(text, left_out, requests)``."""

def requests_sections(
    messages: Sequence[Any],
    /,
    *,
    rooms: Sequence[int],
    provider: _Provider = "openai",
    model: str | None = None,
    previous: str | None = None,
    cache: MessageCache | None = None,
) -> list[str]:
    """The user's requests of ``messages`` (a folded span) and of ``previous`` (its requests
    section carried), as the extractive digest's requests section alone, packed into each room
    of ``rooms`` (tokens) as the digest packs them, in order, from one reading of the span; ""
    where there are none."""

def standing_rules(
    messages: Sequence[Any], /, *, previous: str | None = None, cache: MessageCache | None = None
) -> list[str]:
    """The standing rules a summary of ``messages`` (a folded span) must keep, in order: those of
    ``previous`` (the summary folded with them) and of the span's system and user turns, each
    one sentence on one line. ``cache``: as ``compaction_plan``'s."""

def summary_message(text: str, /, *, format: _WireFormat, role: Literal["user", "assistant"]) -> str:
    """The summary as one message of the wire format, as compact JSON."""

def summary_block(text: str, /, *, format: _WireFormat, role: Literal["user", "assistant"]) -> str:
    """A text block of the wire format carrying ``text``, as compact JSON."""

def detect_wire_format(messages: Sequence[Any], /) -> _WireFormat | None:
    """The wire format of a history as the core reads it, from the first message that shows
    one; None when none does (plain text messages, an empty history). Reads messages one by one
    and stops at the first that decides. Raises ``InvalidMessageError`` on a message it cannot
    read, ``TypeError`` when ``messages`` is a str or a dict."""

def tools_wire_format(tools: Any, /) -> _WireFormat | None:
    """The wire format a list of tool definitions is written in, from the first definition
    whose shape tells (chat's nested ``function``, Responses' flat ``name``, Anthropic's
    ``input_schema`` or dated types, Gemini's ``functionDeclarations``, Bedrock's
    ``toolSpec``); None when ``tools`` is not a list or none tells. Never raises."""

# -- recoverable folds (src/recall.rs) --------------------------------------------------------

RECALL_TOOL: str

def fold_id(text: str, /) -> str:
    """The stable short id of a text: ``cf`` + 12 hex digits of its 64-bit hash."""

def fold_ids_in(text: str, /, *, anywhere: bool = False) -> list[str]:
    """The fold ids a text names (``id=cf...``), in order, without repeats; with ``anywhere``,
    every fold id it holds however written (the recall tool's argument in cleared call
    arguments too): ``cf`` and 12 hex digits as a word of their own."""

def recall_tool(*, format: _WireFormat) -> str:
    """The recall tool's declaration in ``format``'s tool list, as compact JSON."""

def recall_calls(message: Any, /) -> list[tuple[str, str]]:
    """``(call id, arguments JSON)`` of each recall call in ``message`` (any format)."""

def recall_result(message: Any, /, *, call_id: str, text: str) -> str:
    """The message answering recall call ``call_id`` of ``message`` with ``text``, in
    ``message``'s own format, as compact JSON."""

def recall_page(
    text: str, /, *, offset: int, max_tokens: int, provider: _Provider = "openai", model: str | None = None
) -> tuple[str, int, int]:
    """One page of ``text`` from character ``offset``, at most ``max_tokens`` estimated tokens:
    ``(page, end offset in characters, total characters)``."""

def recall_images(
    text: str, /, *, known_image: bool = False
) -> tuple[int, list[tuple[str, str, str | None, int | None, int | None, int, int, int | None]]] | None:
    """The images a stored original holds: ``(characters of text before them, [(kind, source,
    media type, width, height, start, end, pages)])``, kind ``"base64"`` / ``"url"`` /
    ``"file"`` / ``"document"`` (a document's base64), width and height in pixels (None when the
    header does not say them), start and end in characters of ``text``, a document's pages
    where its bytes say them; None when it holds none. ``known_image``: the fold was an image, so
    a lone URL or file id is one."""

def recall_image_result(
    message: Any, /, *, call_id: str, text: str, images: list[tuple[str, str, str | None]]
) -> str | None:
    """The message answering recall call ``call_id`` of ``message`` with ``text`` and
    ``images`` (``(kind, source, media type)``) as images, in ``message``'s own format, as
    compact JSON; None where its tool result cannot carry them."""

# -- repair (src/repair.rs) -----------------------------------------------------------------

def repair_history(
    messages: Sequence[Any],
    /,
    *,
    format: _WireFormat,
    copy: Callable[[Any], Any],
    like: Callable[[dict[str, Any]], Any] | None = None,
    held_upstream: bool = False,
) -> tuple[list[Any], list[str]]:
    """``(repaired messages, changes)``: stand-in results for unanswered calls, results without
    a call dropped, duplicate call ids made unique; a pending last turn left as it is. ``like``
    turns each added message (a dict) into the history's own kind of message.
    ``held_upstream``: a Responses input that continues a stored response; a result whose call
    is nowhere in it answers a call held there and is kept (once per id)."""

# -- degrading steps (src/degrade.rs) -----------------------------------------------------------

def cut_middle(
    messages: Sequence[Any], /, *, index: int, keep_tokens: int, provider: _Provider = "openai",
    model: str | None = None, recoverable: bool = True, arguments: bool = False
) -> tuple[tuple[int, list[str | int], Any], str, str] | None:
    """The edit cutting the middle of ``messages[index]`` down to about ``keep_tokens`` (its
    head and end kept; the marker names the fold id and the recall tool when ``recoverable``):
    ``((index, path, value), id, whole text)``. With ``arguments``, a message without such text
    (a call whose arguments alone are huge) gets its longest arguments cut instead, valid JSON,
    the whole arguments as the text. None when the message holds neither."""

def tail_floor(messages: Sequence[Any], /) -> tuple[int | None, int | None, int, bool]:
    """``(task index, last user turn index, floor start, whether the last user turn also carries
    tool results)``: a compaction keeps messages from ``floor start`` on whatever the budget; a
    last user turn with results beside its words may have its results cut, never its words."""
def read_request(
    body: Any, /, *, provider: _Provider | None = None
) -> tuple[
    str,
    str,
    str | None,
    Any,
    list[Any] | None,
    Any,
    Any,
    tuple[str, int | None, str | None, str | None, str | None, list[tuple[str, str]], list[str], int],
    int,
    tuple[list[str], str],
]:
    """A request body read by the core: ``(api, provider, model, messages, tools, system,
    response_format, settings, settings_tokens)``; ``contextfold.request.read_request`` wraps it.
    Raises ``ValueError`` with ``.field`` naming the body's field."""

@final
class ExactLedger:
    """Exact counts of one conversation turn by turn (``Session(exact=True)``): only messages
    not seen in the same place last call are tokenized; counts are remembered by content."""

    def __new__(cls, *, model: str, tools: Sequence[Any] | None = None, response_format: Any | None = None) -> ExactLedger: ...
    def count(self, messages: Sequence[Any], /) -> int:
        """Exact prompt tokens of ``messages``, equal to ``count(messages, model=..., tools=...,
        response_format=...)``."""
    @property
    def cached_messages(self) -> int:
        """Messages whose counts are cached."""
    def invalidate(self) -> None:
        """Forget the history seen (in-place edits); counts remembered by content stay."""
    def reset(self) -> None:
        """Forget everything."""
