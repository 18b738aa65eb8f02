"""SDK objects whose JSON dump pydantic refuses, as the JSON the SDK itself would send.

google-genai's ``GenerateContentConfig`` takes Python types where the wire holds JSON: a pydantic
model class (or ``list[Model]``) as ``response_schema``, a plain function as a tool. Its
``model_dump(mode="json")`` raises on them (``PydanticSerializationError: Unable to serialize
unknown type: ModelMetaclass``), and every price of such a request failed. The core reads the
config through ``json_ready`` instead: the same fields, those values written as the schemas and
function declarations they stand for.
"""

from __future__ import annotations

import inspect
from typing import Any

__all__ = ["json_ready"]


def json_ready(obj: Any) -> Any:
    """``obj`` (a pydantic model instance) as JSON-ready values, keys by alias, ``None`` left out:
    a model class or a generic type as its JSON schema, a function as a function declaration
    (name, description, parameters' schema)."""
    dumped = obj.model_dump(mode="python", by_alias=True, exclude_none=True)
    return _ready(dumped, 0)


def _ready(value: Any, depth: int) -> Any:
    if depth > 64:
        return None
    if isinstance(value, dict):
        # A function among the tools is one function declaration of its own tool.
        return {str(k): [{"functionDeclarations": [_declaration(t)]} if inspect.isroutine(t) else _ready(t, depth + 2)
                         for t in v] if k == "tools" and isinstance(v, list) else _ready(v, depth + 1)
                for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_ready(v, depth + 1) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, type) and hasattr(value, "model_json_schema"):
        return value.model_json_schema()
    if inspect.isfunction(value) or inspect.ismethod(value):
        return _declaration(value)
    schema = _schema_of(value)
    if schema is not None:
        return schema
    if hasattr(value, "model_dump"):
        return _ready(value.model_dump(mode="python", by_alias=True, exclude_none=True), depth + 1)
    return str(getattr(value, "value", value))  # (an enum: its wire value)


def _schema_of(annotation: Any) -> dict[str, Any] | None:
    """The JSON schema of a type (``list[Model]``, ``int``), or None for a value that is none."""
    if not (isinstance(annotation, type) or hasattr(annotation, "__origin__")):
        return None
    try:
        from pydantic import TypeAdapter

        schema: dict[str, Any] = TypeAdapter(annotation).json_schema()
        return schema
    except Exception:  # noqa: BLE001 - (a type pydantic cannot describe: not a schema)
        return None


def _declaration(fn: Any) -> dict[str, Any]:
    """A function as the declaration an SDK builds from it: its name, docstring and parameters."""
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, p in inspect.signature(fn).parameters.items():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        properties[name] = (_schema_of(p.annotation) if p.annotation is not p.empty else None) or {}
        if p.default is p.empty:
            required.append(name)
    return {"name": fn.__name__, "description": inspect.getdoc(fn) or "",
            "parameters": {"type": "object", "properties": properties, "required": required}}
