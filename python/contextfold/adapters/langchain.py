"""LangChain chat-model adapter (``pip install '.[langchain]' in a checkout of contextfold``).

Takes any ``langchain_core.language_models.BaseChatModel`` (``ChatOpenAI``, ``ChatAnthropic``,
``init_chat_model(...)``, a fake model in tests): the prompt goes as a ``SystemMessage`` and a
``HumanMessage`` through ``invoke`` / ``ainvoke``. The model's own client settings (timeouts,
retries) apply; ``options`` are passed to ``invoke`` as keyword arguments.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from contextfold.adapters import Completion, Prompt, import_sdk, stop_reason

__all__ = ["LangChainAdapter", "is_chat_model", "model_name"]

# Finish reasons that mean the reply was cut at the output cap, as LangChain providers report
# them in response_metadata (OpenAI "length", Anthropic "max_tokens", Gemini "MAX_TOKENS").
_CUT = frozenset({"length", "max_tokens", "MAX_TOKENS"})


def is_chat_model(client: Any) -> bool:
    """True when ``client`` is a LangChain ``BaseChatModel`` (without importing LangChain when
    the client does not come from it)."""
    if "langchain" not in type(client).__module__ and not any("langchain" in c.__module__ for c in type(client).__mro__):
        return False
    from langchain_core.language_models import BaseChatModel

    return isinstance(client, BaseChatModel)


def model_name(chat_model: Any) -> str | None:
    """The model a LangChain chat model calls (``model_name`` / ``model``), when it says."""
    for attr in ("model_name", "model", "model_id"):
        v = getattr(chat_model, attr, None)
        if isinstance(v, str) and v:
            return v
    return None


class LangChainAdapter:
    """``chat_model.invoke([SystemMessage(system), HumanMessage(user)])``."""

    name = "langchain chat model"
    estimate_provider = "openai"
    is_async = False

    def __init__(self, chat_model: Any) -> None:
        import_sdk("langchain_core", "langchain")
        self.client = chat_model

    def _messages(self, prompt: Prompt) -> list[Any]:
        from langchain_core.messages import HumanMessage, SystemMessage

        return [SystemMessage(prompt.system), HumanMessage(prompt.user)]

    def complete(self, prompt: Prompt, *, model: str, timeout: float, options: Mapping[str, Any]) -> Completion:
        """Invoke the chat model and wait for its reply."""
        return _completion(self.client.invoke(self._messages(prompt), **dict(options)))

    async def acomplete(self, prompt: Prompt, *, model: str, timeout: float, options: Mapping[str, Any]) -> Completion:
        """``ainvoke`` the chat model."""
        return _completion(await self.client.ainvoke(self._messages(prompt), **dict(options)))


def _completion(message: Any) -> Completion:
    text = getattr(message, "text", None)
    if isinstance(text, str):
        text = str(text)  # langchain-core 1.x: a str subclass that is also callable (deprecated)
    elif callable(text):  # langchain-core < 1.0: text() was a method
        text = text()
    if not isinstance(text, str):
        content = getattr(message, "content", "")
        text = content if isinstance(content, str) else ""
    meta = getattr(message, "response_metadata", None) or {}
    reason = meta.get("finish_reason") or meta.get("stop_reason")
    usage = getattr(message, "usage_metadata", None) or {}
    return Completion(
        text, reason in _CUT, usage.get("input_tokens"), usage.get("output_tokens"), stop_reason(reason)
    )
