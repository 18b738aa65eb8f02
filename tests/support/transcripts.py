"""Loading the recorded transcripts (shared/data layout) for tests and benchmarks.

Two sources share one layout: the small subset committed under ``tests/data`` (always there)
and the full set in ``../shared/data`` (present on the team's machines; tests that need it skip
visibly when it is absent). See ``tests/data/README.md`` for origin and licenses.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

ROOT = Path(__file__).resolve().parents[2]
LOCAL = ROOT / "tests" / "data"
SHARED = Path(os.environ.get("CONTEXTFOLD_SHARED_DATA", ROOT.parent / "shared" / "data"))

_BLOB = re.compile(r"^<<BLOB:([0-9a-f]{40})>>$")

# The wire format a user passes as ``provider=`` for a recorded API: how the messages are
# written. What they cost is the model's business (``model=``), as a user calls the library.
WIRE_OF_API = {
    "chat.completions": "openai",
    "responses": "openai",
    "responses.input_tokens": "openai",
    "responses.compact": "openai",
    "messages": "anthropic",
    "messages.count_tokens": "anthropic",
    "generateContent": "gemini",
    "countTokens": "gemini",
}


def shared_available() -> bool:
    return (SHARED / "mini-swe-agent-gemini3" / "conversations.jsonl").exists()


def _restore(value: Any, blobs: Path) -> Any:
    """Put the original base64 strings back in place of ``<<BLOB:sha1>>`` markers."""
    if isinstance(value, str):
        m = _BLOB.match(value)
        if m:
            p = blobs / f"{m.group(1)}.txt"
            return p.read_text() if p.exists() else value
        return value
    if isinstance(value, list):
        return [_restore(v, blobs) for v in value]
    if isinstance(value, dict):
        return {k: _restore(v, blobs) for k, v in value.items()}
    return value


@dataclass
class Request:
    """One recorded request with the provider's reported prompt tokens."""

    source: str
    provider: str  # as recorded (openai, azure, anthropic, google, bedrock, groq, ...)
    api: str
    model: str
    messages: list
    system: Any
    tools: Any
    options: dict
    usage: int | None
    has_image: bool
    raw: dict = field(repr=False, default_factory=dict)
    dataset: str = ""

    @property
    def profile(self) -> str:
        """The ``provider=`` (wire format) a user of this API passes; the model prices it."""
        if self.api in WIRE_OF_API:
            return WIRE_OF_API[self.api]
        if self.provider == "ollama":
            return "ollama"
        # Bedrock Converse and other block formats: read generically, priced by the model.
        return "openai-compatible"


def load_requests(root: Path, *, with_usage: bool = True) -> list[Request]:
    """Recorded requests of every ``requests.jsonl`` under ``root`` (blobs restored)."""
    out = []
    for path in sorted(root.glob("*/requests.jsonl")):
        blobs = path.parent / "blobs"
        with path.open() as f:
            for line in f:
                r = json.loads(line)
                if r.get("complete_context") is False:
                    continue  # continues server-side state: the count covers more than was sent
                if with_usage and r.get("usage_prompt_tokens") is None:
                    continue
                out.append(
                    Request(
                        source=r["source"],
                        provider=r["provider"],
                        api=r["api"],
                        model=r.get("model") or "",
                        messages=_restore(r.get("messages") or [], blobs),
                        system=_restore(r.get("system"), blobs),
                        tools=r.get("tools"),
                        options=r.get("request_options") or {},
                        usage=r.get("usage_prompt_tokens"),
                        has_image=bool(r.get("has_image_or_binary")),
                        raw=r,
                        dataset=path.parent.name,
                    )
                )
    return out


def load_conversations(root: Path, name: str) -> list[dict]:
    """Conversations of ``root/name/conversations.jsonl`` (tau-bench, SWE trajectories)."""
    path = root / name / "conversations.jsonl"
    if not path.exists():
        return []
    with path.open() as f:
        return [json.loads(line) for line in f]


def first_conversations(per_set: int) -> list[list[dict]]:
    """The messages of the first ``per_set`` conversations of each compaction data set
    (tau-bench airline, then the SWE runs), from ../shared/data when present, else tests/data."""
    root = SHARED if shared_available() else LOCAL
    out = []
    for name in ("tau-bench-airline", "mini-swe-agent-gemini3"):
        out += [c["messages"] for c in load_conversations(root, name)[:per_set]]
    return out


def shared_fixture(name: str, source_part: str) -> Any:
    """The conversation of data set ``name`` in ../shared/data whose source names
    ``source_part``, as an evaluation fixture with no probes of its own."""
    from contextfold import evaluation as ev

    row = next(r for r in load_conversations(SHARED, name) if source_part in r["source"])
    return ev.Fixture(row["source"], list(row["messages"]), (ev.Probe("-", ("-",)),), "openai", row.get("tools"), None)


def swe_calls(conversations: list[dict]) -> Iterator[tuple[dict, int, list, int]]:
    """(trajectory, k, messages sent by call k, reported prompt tokens) for each model call."""
    for conv in conversations:
        for k, req in enumerate(conv.get("requests") or []):
            if req.get("usage_prompt_tokens"):
                yield conv, k, conv["messages"][: req["n_messages"]], req["usage_prompt_tokens"]


def swe_call_kwargs(conv: dict) -> dict:
    """How a user of an OpenAI-compatible router calls the library for a SWE trajectory: the
    OpenAI chat wire format, the model named as the router names it."""
    return {"provider": "openai", "model": conv.get("model") or None}


def system_text(system: Any) -> Any:
    """A recorded ``system`` field in the shape ``estimate(system=...)`` takes."""
    if system is None:
        return None
    if isinstance(system, (str, list)):
        # Gemini's systemInstruction is {"parts": [...]}; lists of blocks pass through.
        return system
    if isinstance(system, dict):
        if "parts" in system:
            return system["parts"]
        if "text" in system:
            return system["text"]
    return json.dumps(system)


# How a caller names the serving platform of a Gemini model in the model string (LiteLLM's
# routing prefixes): the recorded `provider` says which platform served the request.
PLATFORM_PREFIX = {"google": "gemini/", "google-vertex": "vertex_ai/"}


def platform_model(r: Request) -> str:
    """The recorded model name with its serving platform named, as a caller who knows it
    spells it (``vertex_ai/gemini-3-flash-preview``); other providers' names unchanged."""
    prefix = PLATFORM_PREFIX.get(r.provider)
    return prefix + r.model if prefix and r.model and "/" not in r.model else r.model


# Where each recorded API keeps the structured-output schema a caller passes as
# ``response_format=`` (OpenAI chat ``response_format``, the Responses ``text`` parameter,
# Gemini's ``generationConfig``, Anthropic's ``output_format``).
RESPONSE_FORMAT_OPTION = {"openai": ("response_format", "text"), "gemini": ("generationConfig",),
                          "anthropic": ("output_format",), "openai-compatible": ("response_format",)}


def response_format(r: Request) -> Any:
    """The recorded request's structured-output option, as its caller passed it (or None)."""
    for key in RESPONSE_FORMAT_OPTION.get(r.profile, ()):
        if r.options.get(key) is not None:
            return r.options[key]
    return None


def estimate_request(cf: Any, r: Request, *, name_platform: bool = False) -> int:
    """contextfold's estimate of a recorded request, as its caller passes it: messages, tools,
    system and structured-output schema (``response_format``). ``name_platform``: spell the
    model with its serving platform (``platform_model``)."""
    tools = r.tools
    if tools and isinstance(tools, list) and tools and isinstance(tools[0], dict):
        if "functionDeclarations" in tools[0] or "function_declarations" in tools[0]:
            decls = []
            for t in tools:
                decls.extend(t.get("functionDeclarations") or t.get("function_declarations") or [])
            tools = decls or None
    elif tools is not None and not isinstance(tools, list):
        tools = None
    return cf.estimate(
        r.messages,
        provider=r.profile,
        model=platform_model(r) if name_platform else r.model,
        tools=tools or None,
        system=system_text(r.system),
        response_format=response_format(r),
    )


def request_body(r: Request, *, name_platform: bool = False) -> dict[str, Any]:
    """The recorded request as its caller passed it to the SDK: the body of its API with the
    recorded ``request_options`` (tool_choice, thinking, reasoning, response_format, ...) in it.
    ``name_platform``: spell the model with its serving platform (``platform_model``)."""
    model = platform_model(r) if name_platform else r.model
    opts = dict(r.options)
    body: dict[str, Any]
    if r.api.startswith("generateContent") or r.api.startswith("countTokens"):
        body = {"model": model, "contents": r.messages}
        if r.system is not None:
            body["systemInstruction"] = r.system
    elif r.api in ("converse", "count_tokens"):
        body = {"modelId": model, "messages": r.messages}
        if r.system is not None:
            body["system"] = r.system
        if r.tools:
            opts["toolConfig"] = {**opts.get("toolConfig", {}), "tools": r.tools}
    elif r.api.startswith("responses"):
        body = {"model": model, "input": r.messages}
        if r.system is not None:
            body["instructions"] = r.system
    else:
        body = {"model": model, "messages": r.messages}
        if r.system is not None:
            body["system"] = r.system
    if r.tools is not None and "modelId" not in body:
        body["tools"] = r.tools
    body.update(opts)
    return body


def estimate_request_body(cf: Any, r: Request, *, name_platform: bool = False) -> int:
    """contextfold's ``estimate_request`` of the recorded request's body (``request_body``),
    with ``provider=`` the recorded API's wire format as a user of that API passes it."""
    return int(cf.estimate_request(request_body(r, name_platform=name_platform), provider=r.profile))


def session_errors(cf: Any, root: Path, **session_kw: Any) -> tuple[list[float], list[float]]:
    """|estimate/real - 1| of a Session over every SWE call (usage of call k-1 recorded before
    call k is estimated): (first calls, later calls)."""
    first: list[float] = []
    later: list[float] = []
    for conv in load_conversations(root, "mini-swe-agent-gemini3"):
        s = cf.Session(**swe_call_kwargs(conv), **session_kw)
        for k, req in enumerate(conv["requests"]):
            real = req.get("usage_prompt_tokens")
            est = s.estimate(conv["messages"][: req["n_messages"]])
            if real:
                (first if k == 0 else later).append(abs(est / real - 1))
                s.record_usage({"prompt_tokens": real})
    return first, later
