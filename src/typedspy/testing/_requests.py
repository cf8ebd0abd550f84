"""Checks on a chat-completions request, made the way api.openai.com makes them.

Each check raises `Rejected` carrying the 400 the stand-in answers with (no sockets here).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from typedspy.schema import (
    check_name,
    check_openai_strict,
    format_violation,
    meta_schema_violation,
)
from typedspy.testing._datagen import generate_instance
from typedspy.testing._payloads import error_body

__all__ = [
    "Outcome",
    "Rejected",
    "forced_tool",
    "function_of",
    "json_object_content",
    "message_texts",
    "missing",
    "structured",
]

_FENCED_JSON = re.compile(r"```json\s*\n(.*?)```", re.DOTALL | re.IGNORECASE)
_EMPTY_PARAMETERS = {
    "type": "object",
    "properties": {},
    "required": [],
    "additionalProperties": False,
}


@dataclass(frozen=True)
class Outcome:
    """An answer to send: status, JSON body, extra headers, and SSE chunks when streaming."""

    status: int
    body: dict[str, Any]
    headers: Mapping[str, str] = field(default_factory=dict)
    chunks: list[dict[str, Any]] | None = None


class Rejected(Exception):
    """A 400 (or other error) found while checking a request."""

    def __init__(self, message: str, *, param: str | None, code: str | None = None) -> None:
        super().__init__(message)
        self.outcome = Outcome(400, error_body(message, param=param, code=code))


def missing(where: str) -> Rejected:
    message = f"Missing required parameter: '{where}'."
    return Rejected(message, param=where, code="missing_required_parameter")


def function_of(tool: object, index: int, *, checks_strict: bool) -> tuple[str, dict[str, Any]]:
    where = f"tools[{index}].function"
    spec = tool.get("function") if isinstance(tool, dict) else None
    if not isinstance(tool, dict) or tool.get("type") != "function" or not isinstance(spec, dict):
        raise missing(where)
    name = spec.get("name")
    bad_name = check_name(name)
    if bad_name or not isinstance(name, str):  # check_name flags every non-string
        message = f"Invalid '{where}.name': {bad_name[0].message}"
        raise Rejected(message, param=f"{where}.name", code="invalid_value")
    parameters = spec.get("parameters", _EMPTY_PARAMETERS)
    if not isinstance(parameters, dict):
        raise Rejected(
            f"Invalid type for '{where}.parameters': expected an object.",
            param=f"{where}.parameters",
            code="invalid_type",
        )
    invalid = meta_schema_violation(parameters)  # not JSON Schema: refused whatever `strict` says
    if invalid is not None:
        message = format_violation(invalid, name=name, kind="function")
        raise Rejected(message, param=f"{where}.parameters", code="invalid_function_parameters")
    strict = spec.get("strict") is True and checks_strict
    violations = check_openai_strict(parameters, name=name) if strict else []
    if violations:
        message = format_violation(violations[0], name=name, kind="function")
        raise Rejected(message, param=f"{where}.parameters", code="invalid_function_parameters")
    return name, parameters


def forced_tool(req: dict[str, Any], tools: dict[str, dict[str, Any]]) -> str | None:
    choice = req.get("tool_choice")
    if choice is None:
        return None
    if not tools:
        raise Rejected(
            "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are "
            "specified.",
            param="tool_choice",
        )
    if choice in ("none", "auto"):
        return None
    if choice == "required":
        return next(iter(tools))
    function = choice.get("function") if isinstance(choice, dict) else None
    name = function.get("name") if isinstance(function, dict) else None
    if name in tools:
        return str(name)
    raise Rejected(
        f"Invalid value for 'tool_choice': function {json.dumps(name)} is not among 'tools'.",
        param="tool_choice",
        code="invalid_value",
    )


def structured(req: dict[str, Any]) -> bool:
    fmt = req.get("response_format")
    return isinstance(fmt, dict) and fmt.get("type") in ("json_object", "json_schema")


def json_object_content(req: dict[str, Any], seed: int) -> tuple[str, dict[str, Any]]:
    """Generated JSON for JSON mode, and the schema it follows.

    The schema is ``response_format.schema`` (llama.cpp takes one), else a fenced schema in the
    prompt, else none (``{}``).
    """
    texts = list(message_texts(req["messages"]))
    if not any("json" in text.lower() for _, text in texts):
        raise Rejected(
            "'messages' must contain the word 'json' in some form, to use 'response_format' of "
            "type 'json_object'.",
            param="messages",
        )
    given = req["response_format"].get("schema")
    if isinstance(given, dict):
        return json.dumps(generate_instance(given, seed=seed), separators=(",", ":")), given
    for role, text in texts:
        if role not in ("system", "developer", "user"):
            continue
        for block in _FENCED_JSON.findall(text):
            try:
                schema = json.loads(block)
            except ValueError:
                continue
            if isinstance(schema, dict) and "properties" in schema:
                content = json.dumps(generate_instance(schema, seed=seed), separators=(",", ":"))
                return content, schema
    return "{}", {}


def message_texts(messages: list[Any]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for message in messages:
        if not isinstance(message, dict):
            continue
        role, content = str(message.get("role")), message.get("content")
        if isinstance(content, str):
            out.append((role, content))
        elif isinstance(content, list):
            out.extend(
                (role, part["text"])
                for part in content
                if isinstance(part, dict) and isinstance(part.get("text"), str)
            )
    return out
