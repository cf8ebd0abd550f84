"""`RemoteTool`: one tool of an MCP server as a typedspy `Tool`.

Arguments are checked against the remote ``inputSchema`` with jsonschema before anything is
sent; the result is read against the remote ``outputSchema``. A signature is derived from the
schemas (one field per top-level property) so ReAct can list the tool in either of its modes;
the schemas themselves stay the contract.

Its errors are `ToolError`s, so a ReAct agent reports them to its model as observations::

    ToolError
    └── RemoteToolError       the server reported a failure (isError), a protocol error, or
        │                     the connection is gone; ``kind`` says which
        └── RemoteResultError the server answered, but the result is unusable: it violates the
                              tool's own outputSchema, is too large, or has no usable content

Invalid arguments are the core `ToolArgumentsError`, whether caught locally before the call
(against the remote ``inputSchema``) or reported by a typedspy server.
"""

from __future__ import annotations

import copy
import json
import keyword
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Annotated, Any

import mcp_types as types
from pydantic import Field, WithJsonSchema
from pydantic.fields import FieldInfo

from typedspy._json import first_not_json
from typedspy._json import loads as bounded_loads
from typedspy._runtime import run_sync
from typedspy._types import FieldError
from typedspy.errors import SchemaError, ToolArgumentsError, ToolError
from typedspy.mcp._jsonschema import Checker
from typedspy.schema import to_openai_strict
from typedspy.signature import Signature, build_signature
from typedspy.tools import Tool

__all__ = ["Caller", "RemoteResultError", "RemoteTool", "RemoteToolError"]

Caller = Callable[[str, dict[str, Any]], Awaitable[types.CallToolResult]]
"""Sends one ``tools/call`` (name, arguments) and returns the server's result."""

_RESULT = "result"
_MAX_DEPTH = 200  # argument nesting; the SDK's serializer stops near 250 levels with its envelope
_MAX_INLINED = 5_000  # objects in a tool's signature schemas once references are inlined


class RemoteToolError(ToolError):
    """A remote MCP tool failed.

    Attributes:
        tool: The tool's name.
        kind: ``"invalid_result"``, ``"output_error"``, ``"rejected"`` or ``"error"`` as a
            typedspy server reports them; ``"protocol"`` for an MCP error response,
            ``"connection"`` when the server cannot be reached, ``"result"`` for an unusable
            result (`RemoteResultError`).
        errors: Field errors the server named (or the result's violations).
    """

    def __init__(
        self,
        message: str,
        *,
        tool: str | None,
        kind: str = "error",
        errors: Sequence[FieldError] = (),
    ) -> None:
        super().__init__(message, tool=tool, errors=errors)
        self.kind = kind


class RemoteResultError(RemoteToolError):
    """A remote tool's result cannot be used; ``errors`` name the paths that violate its schema."""

    def __init__(self, message: str, *, tool: str, errors: Sequence[FieldError] = ()) -> None:
        super().__init__(message, tool=tool, kind="result", errors=errors)


class RemoteTool(Tool):
    """A tool that runs on an MCP server; made by `typedspy.mcp.tools`.

    ``acall`` validates the arguments against the remote ``inputSchema`` (nothing is sent when
    they fail), calls the server, and returns the outputs: the ``structuredContent`` checked
    against the ``outputSchema`` when the tool declares one, else ``{"result": text}``.

    Attributes:
        definition: The tool as the server listed it.
        max_result_chars: Results whose JSON is longer are a `RemoteResultError`.
    """

    def __init__(self, definition: types.Tool, call: Caller, *, max_result_chars: int) -> None:
        """Wrap one listed tool; ``call`` sends ``tools/call`` over the open connection.

        Raises:
            SchemaError: The tool's schemas are not valid JSON Schema.
        """
        self.definition = definition
        self.max_result_chars = max_result_chars
        self._send = call
        self._inputs = Checker(definition.input_schema, where=f"{definition.name}'s inputSchema")
        output = definition.output_schema
        self._outputs = (
            Checker(output, where=f"{definition.name}'s outputSchema") if output else None
        )
        super().__init__(
            _signature(definition),
            self._send_checked,
            name=definition.name,
            description=definition.description or "",
            title=definition.title,
        )

    def __repr__(self) -> str:
        return f"RemoteTool({self.name!r})"

    def parse_arguments(self, arguments: str | Mapping[str, Any]) -> dict[str, Any]:
        """Decode the arguments and check them against the remote ``inputSchema``.

        A null for an optional property whose schema does not accept null is dropped (strict
        tool calling sends null for "not given").

        Raises:
            ToolArgumentsError: Not a JSON object, or violations of the schema (by path).
        """
        value = _decode(self.name, arguments)
        # The fallback ReAct step names a renamed property by its field name.
        renamed = {
            name: info.alias
            for name, info in self.signature.input_fields.items()
            if info.alias and info.alias != name
        }
        value = {renamed.get(key, key): item for key, item in value.items()}
        # Before the schema: a NaN went as null, a lone surrogate (half an emoji a model
        # escaped) broke the stdio connection, a cycle or deep nesting was the SDK's ValueError.
        found = first_not_json(value, most=sys.maxsize, max_depth=_MAX_DEPTH, utf8=True)
        if found is not None:
            path, item, why = found
            at = FieldError(path, f"{item}: {why}" if isinstance(item, float) else why)
            raise ToolArgumentsError(
                f"{self.name}: invalid arguments: {at}", tool=self.name, errors=[at]
            )
        errors = self._inputs.errors(value)
        nulls = {key for key, item in value.items() if item is None}
        dropped = {e.path[0] for e in errors if len(e.path) == 1 and e.path[0] in nulls}
        optional = set(self.definition.input_schema.get("properties", {})) - set(
            self.definition.input_schema.get("required", [])
        )
        if dropped and dropped <= optional:
            value = {k: v for k, v in value.items() if k not in dropped}
            errors = self._inputs.errors(value)
        if errors:
            shown = "; ".join(str(e) for e in errors[:5])
            raise ToolArgumentsError(
                f"{self.name}: invalid arguments: {shown}", tool=self.name, errors=errors
            )
        return value

    async def acall(self, arguments: str | Mapping[str, Any]) -> dict[str, Any]:
        """Check the arguments, call the server, and check its result.

        Raises:
            ToolArgumentsError: Invalid arguments (nothing was sent), or the server said so.
            RemoteResultError: The result violates the outputSchema or is too large.
            RemoteToolError: The server reported a failure, or could not be reached.
        """
        return await self._send_checked(**self.parse_arguments(arguments))

    def __call__(self, **kwargs: Any) -> dict[str, Any]:
        """Run synchronously with keyword arguments; see `acall`."""
        return run_sync(lambda: self.acall(kwargs), async_name="RemoteTool.acall")

    def dump_outputs(self, outputs: Mapping[str, Any]) -> dict[str, Any]:
        """The outputs as JSON-ready data (they already are)."""
        return dict(outputs)

    def _openai_parameters(self, target: str) -> tuple[dict[str, Any], bool]:
        """The remote ``inputSchema`` for the LM's schema target, and whether it is strict.

        For ``openai-strict`` it is reshaped into the strict subset when it fits and sent
        with ``strict: true``; a schema outside the subset (and any other target) is sent as
        the server wrote it, without ``strict``. The remote schema is checked either way.
        """
        schema = copy.deepcopy(self.definition.input_schema)
        if target == "openai-strict":
            try:
                return to_openai_strict(copy.deepcopy(schema), name=self.name), True
            except SchemaError:
                pass
        return schema, False

    def to_mcp_tool(self) -> dict[str, Any]:
        """The tool as the server listed it."""
        return self.definition.model_dump(by_alias=True, exclude_none=True, mode="json")

    async def _send_checked(self, **arguments: Any) -> dict[str, Any]:
        result = await self._send(self.name, arguments)
        if result.is_error:
            raise _reported_error(self.name, result)
        outputs = self._outputs_of(result)
        # Measured before it is checked: checking costs up to 20 subschemas a value (ADR-104).
        size = len(json.dumps(outputs, ensure_ascii=False, default=str))
        if size > self.max_result_chars:
            raise RemoteResultError(
                f"{self.name} returned {size} characters, more than the limit of "
                f"{self.max_result_chars} (max_result_chars)",
                tool=self.name,
            )
        errors = self._outputs.errors(outputs) if self._outputs is not None else []
        if errors:
            shown = "; ".join(str(e) for e in errors[:5])
            message = f"{self.name} returned a result that violates its own outputSchema: {shown}"
            raise RemoteResultError(message, tool=self.name, errors=errors)
        return outputs

    def _outputs_of(self, result: types.CallToolResult) -> dict[str, Any]:
        if self._outputs is None:
            return {_RESULT: _text_of(result)}
        structured = result.structured_content
        if not isinstance(structured, dict):
            raise RemoteResultError(
                f"{self.name} declares an outputSchema but returned no structured object",
                tool=self.name,
            )
        return structured


def _reported_error(tool: str, result: types.CallToolResult) -> Exception:
    """The typed error for an ``isError`` result (a typedspy server's shape keeps its paths)."""
    detail = result.structured_content
    error = detail.get("error") if isinstance(detail, dict) else None
    if not isinstance(error, dict):
        return RemoteToolError(f"{tool} failed: {_text_of(result)}", tool=tool)
    errors = [
        FieldError(tuple(e.get("path") or ()), str(e.get("message", "")))
        for e in error.get("errors") or ()
        if isinstance(e, dict)
    ]
    message, kind = str(error.get("message", "")), str(error.get("kind", "error"))
    if kind == "invalid_arguments":
        return ToolArgumentsError(message, tool=tool, errors=errors)
    return RemoteToolError(message or f"{tool} failed", tool=tool, kind=kind, errors=errors)


def _text_of(result: types.CallToolResult) -> str:
    """The result's content as text; blocks that are not text are named, not dropped."""
    parts = []
    for block in result.content:
        if isinstance(block, types.TextContent):
            parts.append(block.text)
        elif isinstance(block, (types.ImageContent, types.AudioContent)):
            parts.append(f"[{block.type} content ({block.mime_type}), not shown]")
        else:
            parts.append(f"[{block.type} content, not shown]")
    return "\n".join(parts)


def _decode(tool: str, arguments: object) -> dict[str, Any]:
    value: object = arguments
    if isinstance(arguments, str):
        try:
            value = bounded_loads(arguments) if arguments.strip() else {}
        except ValueError as exc:
            raise _bad(tool, f"not valid JSON: {exc}") from None
    if isinstance(value, Mapping):
        return dict(value)
    raise _bad(tool, f"arguments must be a JSON object, got {type(value).__name__}")


def _bad(tool: str, message: str) -> ToolArgumentsError:
    return ToolArgumentsError(
        f"{tool}: invalid arguments: {message}", tool=tool, errors=[FieldError((), message)]
    )


def _signature(definition: types.Tool) -> type[Signature]:
    """Fields for the top-level properties, each carrying its remote schema."""
    inputs = _fields(definition.input_schema)
    outputs = _fields(definition.output_schema) if definition.output_schema else {}
    if not outputs:
        outputs = {_RESULT: (str, Field(description="the tool's result"))}
    camel = "".join(part.capitalize() for part in definition.name.replace("-", "_").split("_"))
    return build_signature(
        f"Remote{camel or 'Tool'}", inputs, outputs, definition.description or definition.name
    )


def _fields(schema: Mapping[str, Any]) -> dict[str, tuple[Any, FieldInfo]]:
    properties = schema.get("properties")
    if not isinstance(properties, Mapping):
        return {}
    required = set(schema.get("required") or ())
    budget = [_MAX_INLINED]
    fields: dict[str, tuple[Any, FieldInfo]] = {}
    taken = set(properties)  # a made-up name must not be another property's
    for index, (wire, sub) in enumerate(properties.items()):
        usable = wire.isidentifier() and not keyword.iskeyword(wire) and not wire.startswith("_")
        name = wire if usable and not hasattr(Signature, wire) else f"field_{index}"
        while name != wire and name in taken:
            name += "_"
        taken.add(name)
        shown = sub if isinstance(sub, dict) else {}
        annotation = Annotated[Any, WithJsonSchema(_inlined(shown, schema, budget))]
        alias = None if name == wire else wire
        description = shown.get("description")
        default: Any = ... if wire in required else None  # `...`: required
        info: FieldInfo = Field(default, alias=alias, description=description)
        fields[name] = (annotation, info)
    return fields


def _inlined(
    sub: dict[str, Any], root: Mapping[str, Any], budget: list[int], refs: int = 0
) -> dict[str, Any]:
    """``sub`` with local ``#/$defs/...`` references replaced by their targets.

    At most 8 references deep, and `_MAX_INLINED` objects for the whole tool (``budget``
    counts down): definitions that each name the next several times would otherwise grow
    exponentially (9 levels of 8 properties: 8^9 objects). Past either bound, any value.
    """
    budget[0] -= 1
    ref = sub.get("$ref")
    if isinstance(ref, str):
        target = (root.get("$defs") or {}).get(ref.removeprefix("#/$defs/"))
        if refs < 8 and budget[0] > 0 and ref.startswith("#/$defs/") and isinstance(target, dict):
            return _inlined(target, root, budget, refs + 1)
        return {}  # recursive, foreign, or past the bound (the remote schema still checks)
    out: dict[str, Any] = {}
    for key, value in sub.items():
        if isinstance(value, dict):
            out[key] = _inlined(value, root, budget, refs)
        elif isinstance(value, list):
            out[key] = [
                _inlined(v, root, budget, refs) if isinstance(v, dict) else v for v in value
            ]
        else:
            out[key] = value
    return out
