"""OpenAI Agents SDK integration: a session that compacts the items it hands back
(``pip install openai-agents``)::

    session = CompactingSession("user-42", trigger=100_000)
    await Runner.run(agent, "next question", session=session)

The session stores every item in an inner session (default: the SDK's ``SQLiteSession``, in
memory) and never alters them; ``get_items()`` returns the history compacted when it reaches
the trigger (Responses API items, the format the SDK keeps), reusing the same compaction on the
next turns until the history reaches the trigger again.

The runner reads a session once per ``Runner.run``: the items of the run's own tool loop reach
the model uncompacted. ``session.compact_model_input`` compacts every model call's input too::

    await Runner.run(agent, q, session=session,
                     run_config=RunConfig(call_model_input_filter=session.compact_model_input))
"""

from __future__ import annotations

from typing import Any

from contextfold.compactor import Compactor
from contextfold.integrations.folding import CompactingHistory, require_budget

try:
    from agents.memory.session import SessionABC
    from agents.memory.sqlite_session import SQLiteSession
except ImportError as e:  # pragma: no cover - exercised only without the SDK
    raise ImportError("contextfold.integrations.openai_agents needs the OpenAI Agents SDK: pip install openai-agents") from e

__all__ = ["CompactingSession"]


class CompactingSession(SessionABC):  # type: ignore[misc, unused-ignore]
    """A ``Session`` whose ``get_items()`` is compacted.

    ``inner``: the session that stores the items (default ``SQLiteSession(session_id)``).
    ``compactor``: a ``contextfold.Compactor``; or give its options (``trigger``, ``budget``,
    ``keep``, ``strategy``, ``summarizer``, ``model``, ``context_window``, ``tools``,
    ``system``: the agent's instructions and tool definitions, to count them). ``history``
    exposes ``compactions`` and the ``last`` result."""

    def __init__(self, session_id: str, *, inner: Any = None, compactor: Compactor | None = None, **options: Any) -> None:
        self.session_id = session_id
        self.inner = inner if inner is not None else SQLiteSession(session_id)
        if compactor is None:
            compactor = Compactor(wire_format="responses", **options)
        elif options:
            raise TypeError("pass either a compactor or its options, not both")
        require_budget(compactor, "CompactingSession")
        self.history = CompactingHistory(compactor, hook="CompactingSession")

    async def get_items(self, limit: int | None = None) -> list[Any]:
        """The stored items, compacted when they reach the trigger (``limit``: the latest N of
        them, as stored, uncompacted)."""
        items = await self.inner.get_items(limit)
        if limit is not None:
            return list(items)
        return await self.history.acompact(items)

    async def compact_model_input(self, data: Any) -> Any:
        """A ``RunConfig(call_model_input_filter=...)``: the input of each model call of a run
        (the session's items plus what the run appended since) compacted as ``get_items``
        compacts, the agent's instructions and tools (its function tools, handoffs and hosted
        tools, unless the session was given ``tools=``) counted in the trigger and budget. The
        runner reads the session once per run, so without it a long tool loop reaches the model
        whole."""
        from agents.run_config import ModelInputData

        model_data = data.model_data
        tools: Any = ... if self.history.compactor.tools else agent_tools(data.agent)
        items = await self.history.acompact(model_data.input, system=model_data.instructions, tools=tools)
        return ModelInputData(input=items, instructions=model_data.instructions)

    async def add_items(self, items: list[Any]) -> None:
        """Store new items (all of them, verbatim)."""
        await self.inner.add_items(items)

    async def pop_item(self) -> Any:
        """Remove and return the newest stored item."""
        return await self.inner.pop_item()

    async def clear_session(self) -> None:
        """Forget every stored item."""
        await self.inner.clear_session()


def agent_tools(agent: Any) -> list[dict[str, Any]] | None:
    """The tool definitions an Agents SDK ``agent`` sends (Responses API shape): its function
    tools and handoffs as ``function`` tools with their JSON schema, its hosted tools (web
    search, file search, ...) as the SDK writes them. Uncounted, a tool whose description was
    3,500 tokens took 10 of 21 requests of a run over the trigger."""
    out: list[dict[str, Any]] = []
    for tool in getattr(agent, "tools", None) or ():
        schema = getattr(tool, "params_json_schema", None)
        if isinstance(schema, dict):
            out.append({"type": "function", "name": tool.name, "description": tool.description or "",
                        "parameters": schema, "strict": bool(getattr(tool, "strict_json_schema", False))})
            continue
        try:
            from agents.models.openai_responses import Converter

            out.extend(dict(t) for t in Converter.convert_tools([tool], []).tools if isinstance(t, dict))
        except Exception:  # noqa: BLE001 - (a tool the SDK's converter refuses alone: not counted)
            continue
    for h in getattr(agent, "handoffs", None) or ():
        try:
            from agents.handoffs import Handoff, handoff

            made = h if isinstance(h, Handoff) else handoff(h)
        except Exception:  # noqa: BLE001 - (not a handoff the SDK can make: not counted)
            continue
        out.append({"type": "function", "name": made.tool_name, "description": made.tool_description or "",
                    "parameters": made.input_json_schema, "strict": bool(made.strict_json_schema)})
    return out or None

