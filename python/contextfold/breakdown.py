"""Where a request's estimated tokens go: per message, by role, by kind, and what was assumed.

All figures are estimated prompt tokens (the same estimator as `contextfold.estimate`), computed
in one call into the Rust core.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from contextfold import _core
from contextfold.images import ImageSizes
from contextfold.panic_guard import no_panic

#: The kinds of `Breakdown.by_kind`, in display order.
KINDS: tuple[str, ...] = (
    "text",
    "tool_calls",
    "tool_outputs",
    "images",
    "reasoning",
    "media",
    "tool_schemas",
    "overhead",
)

#: The `by_role` key of what the request costs beyond its messages and a top-level system
#: prompt: reply priming and tool definitions.
REQUEST_ROLE = "request"


@dataclass(frozen=True, slots=True)
class MessageTokens:
    """One message's estimated tokens (``tokens``, equal to its `estimate_each` entry), split by
    kind (``by_kind``: only the kinds it has, summing to ``tokens``)."""

    index: int
    role: str
    tokens: int
    by_kind: Mapping[str, int]


@dataclass(frozen=True, slots=True)
class UnmeasuredPart:
    """A part priced by an assumption (remote image URL or uploaded file id that ``image_sizes``
    did not size, audio / video / document without inline data, unknown part type):
    ``assumed_tokens`` is what the estimate charged for it, ``reason`` says what was assumed."""

    index: int
    kind: str
    assumed_tokens: int
    reason: str


@dataclass(frozen=True, slots=True)
class Breakdown:
    """The estimate of one request, split.

    ``total`` equals `contextfold.estimate` with the same arguments; ``by_kind`` and ``by_role``
    each sum to it. ``by_role`` has the messages' roles as sent, ``"system"`` also holding a
    top-level ``system=`` prompt, and ``"request"`` for reply priming and tool schemas.
    ``request_overhead`` is `contextfold.request_overhead` split by kind.
    """

    total: int
    per_message: tuple[MessageTokens, ...]
    by_role: Mapping[str, int]
    by_kind: Mapping[str, int]
    request_overhead: Mapping[str, int]
    unmeasured: tuple[UnmeasuredPart, ...]
    #: Tool name -> tokens of its definition: the tools' part of ``by_kind["tool_schemas"]``
    #: shared out by each tool's own cost (OpenAI models: its exact rendering); a structured-output
    #: schema is ``"(response_format)"``, the provider's hidden tool-use prompt
    #: ``"(tool-use prompt)"``, the tools an MCP server lists at request time (an Anthropic
    #: body's ``mcp_servers``, sized by ``breakdown_request(..., mcp_sizes=)``)
    #: ``"mcp__SERVER__*"``. The values add up to ``by_kind["tool_schemas"]``.
    by_tool: Mapping[str, int] = field(default_factory=dict)
    #: ``by_tool`` grouped by MCP server (``mcp__SERVER__tool`` names, or the ``tool_servers``
    #: mapping; a sized ``mcp_servers`` entry under its name); tools of no server under
    #: ``"(local)"``. With ``by_tool``'s ``"(tool-use prompt)"`` and ``"(response_format)"``
    #: the values add up to ``by_kind["tool_schemas"]``.
    by_server: Mapping[str, int] = field(default_factory=dict)
    #: Tools of ``by_tool`` the history never calls (their schemas are paid for every turn).
    unused_tools: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (per-message entries as ``{"index", "role", "tokens", "by_kind"}``)."""
        return {
            "total": self.total,
            "by_role": dict(self.by_role),
            "by_kind": dict(self.by_kind),
            "request_overhead": dict(self.request_overhead),
            "per_message": [
                {"index": m.index, "role": m.role, "tokens": m.tokens, "by_kind": dict(m.by_kind)}
                for m in self.per_message
            ],
            "unmeasured": [
                {"index": u.index, "kind": u.kind, "assumed_tokens": u.assumed_tokens, "reason": u.reason}
                for u in self.unmeasured
            ],
            "by_tool": dict(self.by_tool),
            "by_server": dict(self.by_server),
            "unused_tools": list(self.unused_tools),
        }


@no_panic
def breakdown(
    messages: Sequence[Any],
    /,
    *,
    provider: str = "openai",
    model: str | None = None,
    tools: Sequence[Any] | None = None,
    system: str | Sequence[Any] | None = None,
    response_format: Mapping[str, Any] | type | None = None,
    image_sizes: ImageSizes | None = None,
    tool_servers: Mapping[str, str] | None = None,
) -> Breakdown:
    """The estimated prompt tokens of a request split per message, by role and by kind.

    Same arguments and same total as `contextfold.estimate` (tokens). Kinds: ``text``,
    ``tool_calls``, ``tool_outputs``, ``images``, ``reasoning``, ``media`` (audio, video,
    documents, unknown parts), ``tool_schemas`` (tool definitions and a ``response_format``
    schema) and ``overhead`` (message envelopes, reply
    priming). ``image_sizes`` (a mapping from image URL or uploaded file id to ``(width,
    height)`` in pixels, or a callable returning that or None) prices those images at their size,
    as `contextfold.estimate` does, and takes them off ``unmeasured``. ``by_tool`` splits the tool
    schemas per tool and ``by_server`` per MCP server (``tool_servers`` maps a tool name to its
    server where the names do not say it). Raises
    ``InvalidMessageError`` naming the message index and field on bad input.
    """
    total, kinds, roles, per, request, request_system, unmeasured = _core.breakdown(
        messages,
        provider=provider,  # type: ignore[arg-type]
        model=model,
        tools=tools,
        system=system,
        response_format=response_format,
        image_sizes=image_sizes,
    )
    by_kind = dict.fromkeys(kinds, 0)
    by_role: dict[str, int] = {}
    per_message = []
    for i, (role, (tokens, shares)) in enumerate(zip(roles, per)):
        mine = {}
        for k, v in zip(kinds, shares):
            if v:
                mine[k] = v
                by_kind[k] += v
        by_role[role] = by_role.get(role, 0) + tokens
        per_message.append(MessageTokens(i, role, tokens, mine))
    request_kinds = dict(zip(kinds, request))
    for k, v in request_kinds.items():
        by_kind[k] += v
    if request_system:
        by_role["system"] = by_role.get("system", 0) + request_system
    rest = sum(request) - request_system
    if rest:
        by_role[REQUEST_ROLE] = by_role.get(REQUEST_ROLE, 0) + rest
    by_tool = _by_tool(request_kinds.get("tool_schemas", 0), provider, model, tools, system, response_format)
    return Breakdown(
        total=total,
        per_message=tuple(per_message),
        by_role=by_role,
        by_kind=by_kind,
        request_overhead={k: v for k, v in request_kinds.items() if v},
        unmeasured=tuple(UnmeasuredPart(*u) for u in unmeasured),
        by_tool=by_tool,
        by_server=_by_server(by_tool, tool_servers),
        unused_tools=_unused(messages, by_tool),
    )


def _unused(messages: Sequence[Any], by_tool: Mapping[str, int]) -> tuple[str, ...]:
    defined = [n for n in by_tool if n not in (RESPONSE_FORMAT_KEY, TOOL_PROMPT_KEY)
               and not n.startswith("tools[") and not n.endswith("__*")]
    if not defined:
        return ()
    called = set(_core.called_tools(messages))
    return tuple(n for n in defined if n not in called)


#: The ``by_tool`` key of a structured-output schema.
RESPONSE_FORMAT_KEY = "(response_format)"
#: The ``by_tool`` key of the provider's hidden tool-use prompt (beyond the definitions).
TOOL_PROMPT_KEY = "(tool-use prompt)"


def mcp_server_key(server: str) -> str:
    """The ``by_tool`` key of the tools MCP server ``server`` lists at request time (unknown
    offline, priced by a size hint): ``mcp__SERVER__*``, the agent CLIs' wildcard for every
    tool of a server, so `server_of` groups it under ``server``."""
    return f"mcp__{server}__*"


def with_mcp_servers(b: Breakdown, sized: Sequence[tuple[str, int]]) -> dict[str, Any]:
    """``by_tool`` / ``by_server`` of ``b`` with MCP servers sized by the caller (``(server
    name, tokens)`` pairs, as added to ``by_kind["tool_schemas"]``): each under
    `mcp_server_key` and its server, so both still add up to the tool schemas. Keyword
    arguments for ``dataclasses.replace(b, ...)``."""
    by_tool = dict(b.by_tool)
    by_server = dict(b.by_server)
    for server, n in sized:
        key = mcp_server_key(server)
        by_tool[key] = by_tool.get(key, 0) + n
        by_server[server] = by_server.get(server, 0) + n
    return {"by_tool": by_tool, "by_server": by_server}


def _apportion(total: int, weights: Sequence[float]) -> list[int]:
    """``total`` shared in proportion to ``weights`` (largest remainders), summing to it."""
    w = [max(0.0, x) for x in weights]
    s = sum(w)
    if not w or total <= 0:
        return [0] * len(w)
    if s <= 0:
        w, s = [1.0] * len(w), float(len(w))
    exact = [total * x / s for x in w]
    out = [int(x) for x in exact]
    for i in sorted(range(len(w)), key=lambda i: out[i] - exact[i])[: total - sum(out)]:
        out[i] += 1
    return out


def _by_tool(share: int, provider: str, model: str | None, tools: Sequence[Any] | None, system: Any,
             response_format: Any) -> dict[str, int]:
    """Tool name -> tokens: ``share`` (the request's tool schemas) less a structured-output
    schema's part, shared out by each tool's own cost."""
    out: dict[str, int] = {}
    rf = 0
    if response_format is not None:
        opts: dict[str, Any] = {"provider": provider, "model": model, "tools": tools, "system": system}
        rf = max(0, min(share, _core.request_overhead(**opts, response_format=response_format)
                        - _core.request_overhead(**opts)))
    if tools:
        costs = _core.tool_costs(tools, provider=provider, model=model)  # type: ignore[arg-type]
        own = round(sum(c for _, c in costs))
        # What the definitions do not account for is the provider's hidden tool-use prompt
        # (Anthropic's, gpt-5's preamble); definitions that overlap (OpenAI's shared namespace
        # header, counted once per tool alone) share the block instead.
        prompt = max(0, share - rf - own)
        for j, ((name, _), n) in enumerate(zip(costs, _apportion(share - rf - prompt, [c for _, c in costs]))):
            key = name or f"tools[{j}]"
            out[key] = out.get(key, 0) + n
        if prompt:
            out[TOOL_PROMPT_KEY] = prompt
    else:
        rf = share
    if rf:
        out[RESPONSE_FORMAT_KEY] = rf
    return out


def server_of(name: str, mapping: Mapping[str, str] | None = None) -> str:
    """The MCP server of a tool: ``mapping[name]``, else the ``SERVER`` of an
    ``mcp__SERVER__tool`` name, else ``"(local)"``."""
    if mapping and name in mapping:
        return mapping[name]
    # A server's unlisted tools (`mcp_server_key`): the whole name between, even with "__" in it.
    if name.startswith("mcp__") and name.endswith("__*") and len(name) > len("mcp____*"):
        return name[len("mcp__"):-len("__*")]
    # The agent CLIs' convention for MCP tools: mcp__SERVER__TOOL.
    if name.startswith("mcp__") and name.count("__") >= 2:
        return name.split("__")[1]
    return "(local)"


def _by_server(by_tool: Mapping[str, int], mapping: Mapping[str, str] | None) -> dict[str, int]:
    out: dict[str, int] = {}
    for name, n in by_tool.items():
        if name in (RESPONSE_FORMAT_KEY, TOOL_PROMPT_KEY):
            continue
        server = server_of(name, mapping)
        out[server] = out.get(server, 0) + n
    return out
