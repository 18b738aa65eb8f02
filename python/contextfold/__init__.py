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
    preload,
    request_overhead,
    shrink_json,
    wire_bytes,
)
from contextfold.breakdown import Breakdown, MessageTokens, UnmeasuredPart, breakdown
from contextfold.compactor import CompactionResult, Compactor, Pruned, detect_wire_format
from contextfold.content_store import (
    ContentStore,
    CorruptEntryError,
    DirectoryContentStore,
    MemoryContentStore,
    RedisContentStore,
    default_content_store,
)
from contextfold.recall import RECALL_TOOL, recall_tool
from contextfold.repair import RepairResult, repair
from contextfold.errors import (
    CompactionBudgetError,
    CompactionError,
    InvalidMessageError,
    InternalError,
    InvalidUsageError,
    SessionStateError,
    SessionStoreError,
    UnknownModelError,
    UnknownModelWarning,
    UnknownPricesWarning,
    UnpairedToolCallsError,
    InvalidArgumentsError,
)
from contextfold.limits import context_window, ollama_context_window
from contextfold.images import fetch_image_size, http_image_sizes
from contextfold.model_info import ModelInfo, check_model, model_info
from contextfold.prune import find_tail_start, prune
from contextfold.request import (
    RequestBody,
    RequestSettings,
    breakdown_request,
    count_request,
    estimate_request,
    read_request,
)
from contextfold.session import Session
from contextfold.summarize import (
    ExtractiveSummarizer,
    LLMSummarizer,
    Summarizer,
    SummaryRequest,
    SummaryResult,
    SummaryUsage,
)

__all__ = [
    "UnknownModelWarning",
    "UnknownPricesWarning",
    "UnpairedToolCallsError",
    "InvalidArgumentsError",
    "check_model",
    "InternalError",
    "PROVIDERS",
    "Breakdown",
    "CompactionBudgetError",
    "CompactionError",
    "CompactionResult",
    "Compactor",
    "ContentStore",
    "CorruptEntryError",
    "DirectoryContentStore",
    "MemoryContentStore",
    "RECALL_TOOL",
    "RedisContentStore",
    "RepairResult",
    "ExtractiveSummarizer",
    "InvalidMessageError",
    "InvalidUsageError",
    "LLMSummarizer",
    "MessageTokens",
    "ModelInfo",
    "Pruned",
    "RequestBody",
    "RequestSettings",
    "Session",
    "SessionStateError",
    "SessionStoreError",
    "Summarizer",
    "SummaryRequest",
    "SummaryResult",
    "SummaryUsage",
    "UnknownModelError",
    "UnmeasuredPart",
    "__version__",
    "breakdown",
    "breakdown_request",
    "context_window",
    "count",
    "count_each",
    "count_many",
    "count_request",
    "count_text",
    "default_content_store",
    "detect_wire_format",
    "encoding_for",
    "preload",
    "estimate",
    "estimate_each",
    "estimate_many",
    "estimate_request",
    "fetch_image_size",
    "find_tail_start",
    "http_image_sizes",
    "image_size",
    "image_tokens",
    "model_info",
    "ollama_context_window",
    "prune",
    "recall_tool",
    "repair",
    "read_request",
    "request_overhead",
    "shrink_json",
    "wire_bytes",
]
