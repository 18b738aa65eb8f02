"""The request as sent: a provider request body, exactly as passed to the SDK, read and priced.

``estimate_request(body)`` prices what ``client.chat.completions.create(**body)``,
``client.responses.create(**body)``, ``client.messages.create(**body)``, Gemini's
``generateContent`` request or Bedrock's ``converse(**body)`` sends: the history, the system
prompt, the tools, the structured-output schema and the settings that cost prompt tokens without
being text (Anthropic thinking and forced tool choice). The body is read by the Rust core, one
reader per API; the CLI and `contextfold.inputs` use the same reader.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from contextfold._core import _Provider

from contextfold import _core
from contextfold.breakdown import REQUEST_ROLE, Breakdown, UnmeasuredPart, breakdown, with_mcp_servers
from contextfold.history import detect_wire_format
from contextfold.images import ImageSizes
from contextfold.summarize.base import utf8_text

#: Why an MCP server is listed in ``Breakdown.unmeasured`` (the core's reason, verbatim).
MCP_REASON = (
    "MCP server: its tools are listed by the server at request time (unknown offline); "
    "pass mcp_sizes={name: tokens} to price them"
)

#: Body fields that continue state the provider keeps (a previous response, a conversation, a
#: stored prompt, a Gemini context cache): what they add to the prompt is not in the body, and
#: is priced at 0.
SERVER_STATE_FIELDS = {
    "openai-responses": ("previous_response_id", "conversation", "prompt"),
    "gemini": ("cachedContent", "cached_content"),
}
SERVER_STATE_REASON = "server-side state: what {field} adds to the prompt is kept by the provider (unknown offline); priced at 0"

#: Hosted tools priced at a fitted prior (the median over recorded requests of what the server
#: inserts: its tool prompt and the search / execution results), by the type's prefix.
HOSTED_TOOL_PREFIXES = ("web_search", "web_fetch", "code_execution", "code_interpreter", "mcp", "file_search",
                        "image_generation", "tool_search_tool", "advisor", "openrouter:web_search")
HOSTED_TOOL_REASON = ("hosted tool {type}: its server-side prompt and the results it inserts are unknown offline; "
                      "priced at the median of recorded requests carrying it")

#: Anthropic's computer use tool (``computer_20250124`` ...): the core prices its documented 735
#: tokens a definition and the system prompt the docs give only as a range, 466-499 tokens, at
#: its middle (src/client_tools.rs; https://docs.claude.com/en/docs/about-claude/pricing
#: "Computer use tool"). The range is what a breakdown lists as assumed.
COMPUTER_TOOL_TYPE = re.compile(r"^computer_\d{8}$")
COMPUTER_TOOL_DEFINITION = 735
COMPUTER_SYSTEM_PROMPT = 483
COMPUTER_TOOL_REASON = ("computer use tool {type}: Anthropic documents its system prompt as 466-499 tokens, a range; "
                        "priced at 483 beside the 735 of its definition")


@dataclass(frozen=True, slots=True)
class McpServer:
    """An MCP server the provider connects to (Anthropic ``mcp_servers``)."""

    name: str
    url: str


@dataclass(frozen=True, slots=True)
class RequestSettings:
    """What a body asks for beyond its text.

    ``thinking`` is ``"off"``, ``"enabled"`` (with ``thinking_budget`` tokens when given) or
    ``"adaptive"``; ``tool_choice`` is None (not set), ``"auto"``, ``"none"``, ``"any"`` (OpenAI
    ``required``, Gemini ``ANY``) or ``"tool"`` (``tool_name``); ``server_tools`` are hosted
    tools given without a definition (Gemini ``googleSearch``); ``cache_breakpoints`` counts
    ``cache_control`` markers on the body, its system blocks and its tools.
    """

    thinking: str
    thinking_budget: int | None
    reasoning_effort: str | None
    tool_choice: str | None
    tool_name: str | None
    mcp_servers: tuple[McpServer, ...]
    server_tools: tuple[str, ...]
    cache_breakpoints: int


@dataclass(frozen=True, slots=True)
class RequestBody:
    """A request body, read: ``api`` (``openai-chat``, ``openai-responses``, ``anthropic``,
    ``gemini``, ``bedrock``), the ``provider=`` it is estimated with, the ``model`` it names, and
    its parts in the shapes `contextfold.estimate` takes (the caller's own objects; the
    Responses API's string ``input`` as one user message; Gemini ``contents`` given as
    google-genai also takes them, a str, a part or a list mixing parts and contents, as the
    ``{"role", "parts"}`` turns the SDK sends). ``settings_tokens`` is what the settings add to
    the estimate (tokens)."""

    api: str
    provider: str
    model: str | None
    messages: Any
    tools: list[Any] | None
    system: Any
    response_format: Any
    settings: RequestSettings
    settings_tokens: int
    #: The body's fields that continue provider-kept state (``SERVER_STATE_FIELDS``).
    server_state: tuple[str, ...] = ()
    #: The body's field of each of ``tools`` (``tools[2]``; Gemini's
    #: ``tools[0].functionDeclarations[1]`` and Bedrock's ``toolConfig.tools[1]``, whose lists
    #: are flattened into ``tools``).
    tool_fields: tuple[str, ...] = ()
    #: The body's field that holds ``response_format`` (``text`` for Responses,
    #: ``output_format``, ``generationConfig``, ...).
    format_field: str = "response_format"

    def options(self) -> dict[str, Any]:
        """Keyword arguments of `contextfold.estimate` / `breakdown` for this body."""
        return {"provider": self.provider, "model": self.model, "tools": self.tools, "system": self.system,
                "response_format": self.response_format}


def read_request(body: Any, /, *, provider: str | None = None) -> RequestBody:
    """Read a request body (a dict, any other Mapping, or an SDK params object). ``provider=``
    forces the provider (it also settles a bare ``messages`` body as Anthropic's or OpenAI's).
    Raises ``ValueError`` with ``.field`` naming the body's field (``messages``,
    ``thinking.budget_tokens``, ``instructions``, ``tools[0].function.name``, ``text.format``):
    the system prompt, tool names and structured-output option are checked here, so
    `estimate_request`, `breakdown_request` and `count_request` refuse the same bodies."""
    if isinstance(provider, str):
        # Read as UTF-8 by the core: a lone surrogate becomes U+FFFD, an unknown provider.
        provider = utf8_text(provider)
    api, prov, model, messages, tools, system, rf, s, tokens, (tool_fields, format_field) = _core.read_request(
        body, provider=cast("_Provider | None", provider))
    settings = RequestSettings(
        thinking=s[0],
        thinking_budget=s[1],
        reasoning_effort=s[2],
        tool_choice=s[3],
        tool_name=s[4],
        mcp_servers=tuple(McpServer(n, u) for n, u in s[5]),
        server_tools=tuple(s[6]),
        cache_breakpoints=s[7],
    )
    return RequestBody(api, prov, model, messages, tools, system, rf, settings, tokens,
                       _server_state(body, SERVER_STATE_FIELDS.get(api, ())), tuple(tool_fields), format_field)


def _field(obj: Any, name: str) -> Any:
    """``obj[name]`` of a mapping, ``obj.name`` of an SDK object; None when absent."""
    if isinstance(obj, Mapping):
        return obj.get(name)
    return getattr(obj, name, None)


def _server_state(body: Any, fields: tuple[str, ...]) -> tuple[str, ...]:
    """The fields of ``fields`` set on the body or its Gemini ``config``."""
    config = _field(body, "config")
    found = []
    for name in fields:
        if _field(body, name) is not None:
            found.append(name)
        elif config is not None and _field(config, name) is not None:
            found.append(f"config.{name}")
    return tuple(found)


def _hosted_tools(r: RequestBody, b: Breakdown) -> list[UnmeasuredPart]:
    """The body's hosted tools the estimate priced at a fitted prior, and the part of a computer
    use tool its docs give only as a range."""
    out = []
    for i, t in enumerate(r.tools or []):
        ty = _field(t, "type")
        name = _field(t, "name")
        cost = b.by_tool.get(name) if isinstance(name, str) else None
        cost = cost or b.by_tool.get(f"tools[{i}]")
        if isinstance(ty, str) and cost and ty.startswith(HOSTED_TOOL_PREFIXES):
            out.append(UnmeasuredPart(-1, f"hosted_tool:{ty}", int(cost), HOSTED_TOOL_REASON.format(type=ty)))
        # Priced at the documented figures (an Anthropic model; elsewhere it is a definition).
        elif isinstance(ty, str) and cost and COMPUTER_TOOL_TYPE.match(ty) and cost >= COMPUTER_TOOL_DEFINITION:
            out.append(UnmeasuredPart(-1, f"client_tool:{ty}", COMPUTER_SYSTEM_PROMPT, COMPUTER_TOOL_REASON.format(type=ty)))
    return out


def _mcp_tokens(r: RequestBody, mcp_sizes: Mapping[str, int] | None) -> tuple[int, list[McpServer]]:
    """(tokens the caller's size hints give the MCP servers, the servers left unmeasured)."""
    sizes = dict(mcp_sizes or {})
    known = 0
    unknown = []
    for server in r.settings.mcp_servers:
        n = sizes.get(server.name)
        if n is None:
            unknown.append(server)
            continue
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise TypeError(f"mcp_sizes[{server.name!r}] must be a non-negative int (tokens), got {n!r}")
        known += n
    return known, unknown


def estimate_request(
    body: Any,
    /,
    *,
    provider: str | None = None,
    image_sizes: ImageSizes | None = None,
    mcp_sizes: Mapping[str, int] | None = None,
) -> int:
    """Estimated prompt tokens of a request body as sent (see the module docs).

    ``provider=`` forces the provider (otherwise the body's API says it; the ``model`` in the
    body picks the token family). ``image_sizes`` sizes remote images as in
    `contextfold.estimate`. ``mcp_sizes`` maps an MCP server's name to the tokens its tool
    listing costs (an Anthropic body's ``mcp_servers`` are otherwise not priced: their tools are
    fetched by the provider; `breakdown_request` lists them in ``unmeasured``).
    """
    r = read_request(body, provider=provider)
    known, _ = _mcp_tokens(r, mcp_sizes)
    with body_errors_named(r):
        return int(_core.estimate(r.messages, image_sizes=image_sizes, **r.options())) + r.settings_tokens + known


def breakdown_request(
    body: Any,
    /,
    *,
    provider: str | None = None,
    image_sizes: ImageSizes | None = None,
    mcp_sizes: Mapping[str, int] | None = None,
) -> Breakdown:
    """`contextfold.breakdown` of a request body as sent: the same total as `estimate_request`.

    The settings' hidden prompt is in ``by_kind["overhead"]`` and ``request_overhead["settings"]``
    (role ``"request"``); MCP servers sized by ``mcp_sizes`` in ``tool_schemas``; the others are
    listed in ``unmeasured`` (index -1: the request, not a message) with the reason.
    """
    return breakdown_of(read_request(body, provider=provider), image_sizes=image_sizes, mcp_sizes=mcp_sizes)


def breakdown_of(
    r: RequestBody, /, *, image_sizes: ImageSizes | None = None, mcp_sizes: Mapping[str, int] | None = None,
    tool_servers: Mapping[str, str] | None = None,
) -> Breakdown:
    """`breakdown_request` of a body already read (`read_request`); ``tool_servers`` as in
    `contextfold.breakdown`."""
    with body_errors_named(r):
        b = breakdown(r.messages, image_sizes=image_sizes, tool_servers=tool_servers, **r.options())
    assumed = tuple(_hosted_tools(r, b)) + tuple(
        UnmeasuredPart(-1, f"server_state:{f}", 0, SERVER_STATE_REASON.format(field=f)) for f in r.server_state)
    if assumed:
        b = dataclasses.replace(b, unmeasured=b.unmeasured + assumed)
    known, unknown = _mcp_tokens(r, mcp_sizes)
    extra = r.settings_tokens + known
    if not extra and not unknown:
        return b
    by_kind = dict(b.by_kind)
    by_kind["overhead"] = by_kind.get("overhead", 0) + r.settings_tokens
    by_kind["tool_schemas"] = by_kind.get("tool_schemas", 0) + known
    by_role = dict(b.by_role)
    if extra:
        by_role[REQUEST_ROLE] = by_role.get(REQUEST_ROLE, 0) + extra
    request = dict(b.request_overhead)
    if r.settings_tokens:
        request["settings"] = r.settings_tokens
    if known:
        request["tool_schemas"] = request.get("tool_schemas", 0) + known
    unmeasured = b.unmeasured + tuple(UnmeasuredPart(-1, f"mcp_server:{s.name}", 0, MCP_REASON) for s in unknown)
    # The sized servers join by_tool / by_server too, so those still add up to the tool schemas.
    sized = [(s.name, mcp_sizes[s.name]) for s in r.settings.mcp_servers if s not in unknown] if mcp_sizes else []
    return dataclasses.replace(b, total=b.total + extra, by_kind=by_kind, by_role=by_role,
                               request_overhead=request, unmeasured=unmeasured, **with_mcp_servers(b, sized))


def count_request(body: Any, /, *, image_sizes: ImageSizes | None = None) -> int:
    """Prompt tokens of an OpenAI request body (chat.completions or Responses), as
    `contextfold.count` bills it: exact for the messages, function tools and json_schema format.

    A Responses body is counted with that API's own rules (``count(..., api="responses")``): a
    non-empty ``instructions`` joins as the first system message; function tools and calls are
    billed as the Responses API bills them (not chat's gpt-5 tool preamble); ``text.format``
    is rendered as chat's ``response_format``. What no tokenizer can count is added as
    `estimate_request` prices it: hosted tools (``web_search``, ``code_interpreter``, ``mcp``,
    ...) at the same fitted constants (the server inserts their prompt and results), and
    nothing for server-side state (``previous_response_id``, ``conversation``, a stored
    ``prompt``; `breakdown_request` lists them in ``unmeasured``). Raises
    ``UnknownModelError`` for a model without a public tokenizer and ``ValueError`` for a body
    of another API."""
    r = read_request(body, provider="openai")
    if r.api not in ("openai-chat", "openai-responses"):
        raise ValueError(f"count_request counts OpenAI bodies; this one is written for {r.api}")
    if not r.model:
        raise _field_error("count_request needs the body's model", "model")
    # The model first: a Mistral body with a `thinking` block was refused as "written for
    # anthropic" where the promised answer is that no public tokenizer counts its model.
    _core.encoding_for(r.model)
    # A bare `messages` body reads as chat's when forced to OpenAI; its blocks may say otherwise
    # (Anthropic `tool_use`, Gemini `parts`), and counting them as chat text is a wrong number.
    written_for = detect_wire_format(r.messages, tools=r.tools)
    if written_for not in ("chat", "responses"):
        raise _field_error(f"count_request counts OpenAI bodies; these messages are written for {written_for}",
                           "messages")
    if r.api == "openai-chat":
        with body_errors_named(r):
            return int(_core.count(r.messages, model=r.model, tools=r.tools, response_format=r.response_format,
                                   image_sizes=image_sizes))
    messages = r.messages
    # An empty `instructions` sends no system message: of the 8 recorded requests with one,
    # the 2 with nothing uncountable (gpt-4o, function tools, 278 and 335 tokens) are exact
    # without it, 4 over with it.
    if r.system is not None and r.system != "":
        messages = [{"role": "system", "content": r.system}, *messages]
    with body_errors_named(r):
        return int(_core.count(messages, model=r.model, tools=r.tools, response_format=r.response_format,
                               image_sizes=image_sizes, api="responses"))


def _field_error(reason: str, field: str) -> ValueError:
    """A ``ValueError`` saying ``field: reason`` whose ``.field`` names the body's field."""
    err = ValueError(f"{field}: {reason}")
    err.field = field  # type: ignore[attr-defined]
    return err


#: Where the core's readers of the extras place an error: ``tools[j]`` of the list they were
#: given, or ``response_format``, then a path inside it (``tools[3].function.parameters``).
_EXTRAS_PATH = re.compile(r"^(tools\[(\d+)\]|response_format)(\S*?): ")


@contextlib.contextmanager
def body_errors_named(r: RequestBody) -> Iterator[None]:
    """Name the body's field in an error the core raises at ``tools[j]`` or ``response_format``
    of the parts `read_request` handed it: a ``ValueError`` whose ``.field`` is the body's own
    (``tools[1].functionDeclarations[0]`` of a Gemini body whose tools the core read flattened,
    ``text.format.strict`` of a Responses body), with the original chained. The schemas are
    serialized by the estimate (a schema that contains itself, nests past the bound, or holds
    what the exact count cannot render: bytes, objects without ``model_dump``), not by the body
    reader, which would double what pricing a body's tools costs."""
    try:
        yield
    except (TypeError, ValueError) as e:
        m = _EXTRAS_PATH.match(str(e))
        if m is None or hasattr(e, "field"):
            raise
        if m.group(2) is not None:
            j = int(m.group(2))
            head = r.tool_fields[j] if j < len(r.tool_fields) else m.group(1)
        else:
            head = r.format_field
        raise _field_error(str(e)[m.end():], head + m.group(3)) from e
