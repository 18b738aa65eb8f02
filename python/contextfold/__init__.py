"""contextfold: keep LLM-agent conversations inside their context window."""

from contextfold._core import __version__

__all__ = ["__version__"]
