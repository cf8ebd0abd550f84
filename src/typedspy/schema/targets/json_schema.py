"""The ``json-schema`` target: full JSON Schema for servers that enforce all of it.

Keeps every constraint, default and ``$ref`` as Pydantic wrote them (vLLM, llama.cpp and Gemini
accept much more than OpenAI's strict subset), with the ``_type`` tags, ``anyOf`` for unions, and
without the ``title`` noise.
"""

from __future__ import annotations

from typedspy.schema._generate import JSONSchema, iter_subschemas

__all__ = ["to_json_schema"]


def to_json_schema(schema: JSONSchema, *, name: str) -> JSONSchema:
    """Strip titles and turn ``oneOf`` into ``anyOf``; everything else is kept."""
    del name  # every target takes it; this one needs no name-specific checks
    stack = [schema]
    while stack:
        node = stack.pop()
        title = node.get("title")
        if isinstance(title, str):
            del node["title"]
        if "oneOf" in node and "anyOf" not in node:
            node["anyOf"] = node.pop("oneOf")
            node.pop("discriminator", None)
        stack.extend(iter_subschemas(node))
    return schema
