"""LangChain integration (``pip install '.[langchain]' in a checkout of contextfold``).

``contextfold.langchain`` is ``contextfold.integrations.langchain`` (kept importable under
this name): ``ContextFoldMiddleware``, ``token_counter``, ``make_token_counter``,
``to_openai_messages``."""

from contextfold.integrations.langchain import (
    ContextFoldMiddleware,
    make_token_counter,
    to_openai_messages,
    token_counter,
)

__all__ = ["ContextFoldMiddleware", "make_token_counter", "to_openai_messages", "token_counter"]
