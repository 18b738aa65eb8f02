"""Peers' compaction run on the evaluation's fixtures, beside contextfold's strategies.

``langchain``: LangChain's ``SummarizationMiddleware`` (langchain >= 1.0) as it ships, with the
same summarizer as contextfold's default (the extractive digest, passed as the middleware's
``summarizer``): what differs is the middleware's own algorithm, where it cuts, what it keeps
whole and what it lets the summarizer read. It is called as a user sets it up for a budget:
summarize when the history reaches the budget, keep the newest half of it (``("tokens", n)``
in LangChain's own counter, ``count_tokens_approximately``), the rest for the summary. The
budget is turned into LangChain's units by the share of the history it is in contextfold's
(the same share of each counter's total). Its defaults stay: the summarizer reads the last
4,000 tokens of what is folded (``trim_tokens_to_summarize``), and the summary is a user
message opening the history. A leading system message is the agent's system prompt (LangChain
agents take it apart from the messages) and stays in front.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from contextfold import _core
from contextfold.summarize.base import SummaryRequest
from contextfold.summarize.extractive import ExtractiveSummarizer

__all__ = ["PEERS", "langchain_summarization", "peer_compaction", "peer_missing", "peer_summary"]

#: Tokens (contextfold's) of the middleware's summary envelope ("Here is a summary of the
#: conversation to date:"), left out of the summary's room.
_ENVELOPE_TOKENS = 16


def peer_missing(name: str) -> str | None:
    """Why peer ``name`` cannot run here (None: it can)."""
    if name not in PEERS:
        return f"unknown peer {name!r} (known: {', '.join(PEERS)})"
    try:
        import langchain.agents.middleware  # noqa: F401
    except ImportError:
        return "LangChain's SummarizationMiddleware needs langchain >= 1.0: pip install 'contextfold[langchain]'"
    return None


def langchain_summarization(messages: Sequence[Any], *, budget: int, provider: str, tools: Any = None,
                            system: Any = None) -> list[Any]:
    """``messages`` (OpenAI chat dicts) after LangChain's ``SummarizationMiddleware`` ran once
    before a model call, set up for ``budget`` tokens (contextfold's estimate, ``tools`` and
    ``system`` included) as the module says; OpenAI chat dicts again. Unchanged when the
    middleware does not trigger."""
    from langchain.agents.middleware import SummarizationMiddleware
    from langchain_core.language_models.fake_chat_models import FakeListChatModel
    from langchain_core.messages import RemoveMessage, convert_to_messages, convert_to_openai_messages
    from langchain_core.messages.utils import count_tokens_approximately
    from langchain_core.runnables import RunnableLambda

    msgs = list(messages)
    head = msgs[:1] if msgs and isinstance(msgs[0], dict) and msgs[0].get("role") == "system" else []
    rest = msgs[len(head):]
    prov = provider if provider in _core.PROVIDERS else "openai"
    ours = int(_core.estimate(rest, provider=prov))  # type: ignore[arg-type]
    overhead = int(_core.estimate(head, provider=prov, tools=tools, system=system))  # type: ignore[arg-type]
    room = max(1, budget - overhead)
    lc = list(convert_to_messages(rest))
    trigger = max(1, int(count_tokens_approximately(lc) * room / max(1, ours)))
    summary_tokens = max(1, room - room // 2 - _ENVELOPE_TOKENS)

    def summarize(folded: Sequence[Any]) -> str:
        return ExtractiveSummarizer().summarize(
            SummaryRequest(messages=list(folded), provider=prov, max_tokens=summary_tokens)).text

    middleware = SummarizationMiddleware(
        FakeListChatModel(responses=["(unused: the summarizer writes the summary)"]),
        trigger=("tokens", trigger), keep=("tokens", max(1, trigger // 2)), summarizer=RunnableLambda(summarize))
    update = middleware.before_model({"messages": lc}, None)  # type: ignore[typeddict-item, arg-type]
    if update is None:
        return msgs
    kept = [m for m in update["messages"] if not isinstance(m, RemoveMessage)]
    return head + list(convert_to_openai_messages(kept))


#: How LangChain's middleware opens the message that carries its summary.
LANGCHAIN_SUMMARY_PREFIX = "Here is a summary of the conversation to date:"


def peer_summary(name: str, messages: Sequence[Any]) -> str | None:
    """The text of the summary peer ``name`` put into ``messages`` (its output), or None."""
    if name == "langchain":
        for m in messages:
            if not isinstance(m, dict) or m.get("role") != "user":
                continue
            content = m.get("content")
            if isinstance(content, str) and content.startswith(LANGCHAIN_SUMMARY_PREFIX):
                return content[len(LANGCHAIN_SUMMARY_PREFIX):].strip()
    return None


#: Peer name -> its compaction: ``f(messages, budget=, provider=, tools=, system=)``.
PEERS: dict[str, Callable[..., list[Any]]] = {"langchain": langchain_summarization}


def peer_compaction(name: str, messages: Sequence[Any], *, budget: int, provider: str, tools: Any = None,
                    system: Any = None) -> list[Any]:
    """``messages`` compacted by peer ``name`` to ``budget`` tokens (see ``PEERS``); raises
    ``ValueError`` when the peer is unknown or not installed."""
    why = peer_missing(name)
    if why is not None:
        raise ValueError(why)
    return PEERS[name](messages, budget=budget, provider=provider, tools=tools, system=system)
