"""The ``json-schema`` target: JSON Schema as constrained-decoding engines enforce it.

Keeps the constraints, defaults and ``$ref``s Pydantic wrote (vLLM, llama.cpp and Gemini accept
much more than OpenAI's strict subset), with the ``_type`` tags, ``anyOf`` for unions, and
without the ``title`` noise. What no engine enforces is adjusted so that whatever an engine
emits validates (reference/local-servers.md): ``uniqueItems`` (llguidance refuses it, xgrammar
lacks it, vllm#12131) is restated in the description, and ``date-time``/``date`` formats become
patterns of the values Pydantic accepts (engines allow a lower-case ``t`` and second 60).
"""

from __future__ import annotations

from typedspy.schema._generate import JSONSchema, walk_schema
from typedspy.schema._patterns import DATE, DATE_TIME
from typedspy.schema.targets._notes import restate, with_notes

__all__ = ["to_json_schema"]


def to_json_schema(schema: JSONSchema, *, name: str) -> JSONSchema:
    """Strip titles, turn ``oneOf`` into ``anyOf``, and make the rest enforceable by engines."""
    del name  # every target takes it; this one needs no name-specific checks
    for node in walk_schema(schema):
        title = node.get("title")
        if isinstance(title, str):
            del node["title"]
        if "oneOf" in node and "anyOf" not in node:
            node["anyOf"] = node.pop("oneOf")
            node.pop("discriminator", None)
        _enforceable(node)
    return schema


_FORMAT_PATTERNS = {"date-time": DATE_TIME, "date": DATE}


def _enforceable(node: JSONSchema) -> None:
    notes: list[str] = []
    restate(node, notes, "uniqueItems")  # still checked locally (sets, validators)
    pattern = _FORMAT_PATTERNS.get(node.get("format", ""))
    if pattern is not None and node.get("type") == "string" and "pattern" not in node:
        del node["format"]
        node["pattern"] = pattern
    with_notes(node, notes)
