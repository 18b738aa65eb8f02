"""Contextfold inside the agent frameworks, each through the framework's own hook, each SDK
imported only by its module (``pip install '.[<extra>]'``):

- ``contextfold.integrations.langchain``: ``ContextFoldMiddleware`` for ``create_agent`` and a
  drop-in ``token_counter``.
- ``contextfold.integrations.litellm``: ``ContextFoldLogger``, a ``CustomLogger`` whose
  pre-call hook compacts (``litellm.callbacks`` or the LiteLLM proxy's config).
- ``contextfold.integrations.pydantic_ai``: ``history_processor`` for
  ``Agent(history_processors=[...])``.
- ``contextfold.integrations.openai_agents``: ``CompactingSession``, a session of the OpenAI
  Agents SDK that compacts the items it hands back.
"""
