"""What the stand-in server answers to a chat-completions request (no sockets here).

Scripted replies are used first, in order. Otherwise the request is checked the way
api.openai.com checks it (a schema valid under the JSON Schema meta-schema, strict schemas, the
"json" word for JSON mode, tool choice) and answered with data generated from the requested
schema. Every reply is checked against the request's schema (ADR-046): generated data that does
not validate is a bug in the generator, answered with a 500 the SDK does not retry; a scripted
reply that does not validate is noted in `Responder.mismatches` (tests script such replies on
purpose, to exercise retries). A check that fails raises `Rejected`, carrying the 400 sent.
"""

from __future__ import annotations

import json
import re
import threading
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from typedspy.errors import SchemaError
from typedspy.schema import (
    check_name,
    check_openai_strict,
    format_violation,
    meta_schema_violation,
    validate_instance,
)
from typedspy.testing._datagen import generate_instance
from typedspy.testing._payloads import (
    Outcome,
    chat_completion,
    completion_chunks,
    error_body,
    requested_schema,
    usage_for,
)
from typedspy.testing._quirks import Quirks, spoil

__all__ = ["PLAIN_REPLY", "Reply", "Responder"]

PLAIN_REPLY = "standin reply"
_DEFAULT_ERRORS: Mapping[int, tuple[str, str, str | None]] = {
    400: ("Bad request.", "invalid_request_error", None),
    401: ("Incorrect API key provided.", "invalid_request_error", "invalid_api_key"),
    404: ("The model does not exist.", "invalid_request_error", "model_not_found"),
    429: ("Rate limit reached for requests.", "requests", "rate_limit_exceeded"),
    500: ("The server had an error while processing your request.", "server_error", None),
    503: ("The engine is currently overloaded, please try again later.", "server_error", None),
}  # fmt: skip
_FENCED_JSON = re.compile(r"```json\s*\n(.*?)```", re.DOTALL | re.IGNORECASE)
_EMPTY_PARAMETERS = {
    "type": "object",
    "properties": {},
    "required": [],
    "additionalProperties": False,
}


class Rejected(Exception):
    """A 400 (or other error) found while checking a request."""

    def __init__(self, message: str, *, param: str | None, code: str | None = None) -> None:
        super().__init__(message)
        self.outcome = Outcome(400, error_body(message, param=param, code=code))


class _GeneratorBug(Rejected):
    """Generated data that does not validate against its schema: answered with a 500."""

    def __init__(self, where: str, problem: str) -> None:
        message = (
            f"typedspy stand-in bug: the data it generated for {where} does not validate "
            f"against that schema ({problem}). Please report it with the schema."
        )
        super().__init__(message, param=None)
        # The SDK honours x-should-retry: a retry with another seed could hide the bug.
        self.outcome = Outcome(
            500, error_body(message, type="server_error"), {"x-should-retry": "false"}
        )


@dataclass
class Reply:
    """A scripted reply for :meth:`StandIn.enqueue`.

    Attributes:
        content: The assistant's text.
        refusal: A refusal message (sent with ``content`` null).
        finish_reason: ``stop``, ``length``, ``tool_calls``, ``content_filter`` ...
        tool_calls: ``[{"name": ..., "arguments": "<json>"}]``; set ``finish_reason`` to
            ``"tool_calls"`` as well, as OpenAI does.
        status: HTTP status; anything but 200 answers with an error body.
        error: ``{"message", "type", "param", "code"}`` for a non-200 reply; a realistic
            default for the status is used when omitted.
        headers: Extra response headers, e.g. ``{"Retry-After": "0"}``.
        usage: Token counts; estimated when omitted.
    """

    content: str | None = None
    refusal: str | None = None
    finish_reason: str = "stop"
    tool_calls: list[dict[str, Any]] | None = None
    status: int = 200
    error: dict[str, Any] | None = None
    headers: dict[str, str] | None = None
    usage: dict[str, int] | None = None


@dataclass
class Responder:
    """Decides the answer to each request; thread-safe."""

    supports_json_schema: bool
    supports_tools: bool
    seed: int
    model: str
    answer: Callable[[dict[str, Any]], Reply | str | dict[str, Any] | None] | None = None
    quirks: Quirks = field(default_factory=Quirks)
    mismatches: list[str] = field(default_factory=list[str], init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)
    _queue: deque[Reply | str | dict[str, Any]] = field(default_factory=deque, init=False)
    _count: int = field(default=0, init=False)
    _spoiled: int = field(default=0, init=False)

    def enqueue(self, *replies: Reply | str | dict[str, Any]) -> None:
        with self._lock:
            self._queue.extend(replies)

    def respond(self, request: object) -> Outcome:
        with self._lock:
            index = self._count
            self._count += 1
            scripted = self._queue.popleft() if self._queue else None
        req = request if isinstance(request, dict) else {}
        if scripted is None and self.answer is not None:
            scripted = self.answer(req)
        if scripted is not None:
            self._check_scripted(index, scripted, req)
            return self._outcome(scripted, req)
        try:
            if not isinstance(request, dict):
                raise Rejected("The request body must be a JSON object.", param=None)
            return self._outcome(self._generated(req, self.seed + index), req)
        except Rejected as rejected:  # a _GeneratorBug too
            return rejected.outcome

    def _check_scripted(
        self, index: int, reply: Reply | str | dict[str, Any], req: dict[str, Any]
    ) -> None:
        """Note a scripted reply whose content does not validate against the request's schema."""
        schema = requested_schema(req)
        content = reply if isinstance(reply, str) else getattr(reply, "content", None)
        if schema is None or not isinstance(content, str) or meta_schema_violation(schema):
            return  # no (valid) schema asked for, or a completion / refusal / tool call scripted
        try:
            problems = validate_instance(json.loads(content), schema)
        except ValueError:
            problems = ["the content is not JSON"]
        except Exception as exc:  # a $ref that resolves nowhere, and the like
            problems = [f"cannot check it against the schema ({exc})"]
        if problems:
            with self._lock:
                self.mismatches.append(f"request {index} (scripted): {problems[0]}")

    def _outcome(self, reply: Reply | str | dict[str, Any], req: dict[str, Any]) -> Outcome:
        """What sends ``reply``, scripted or generated: an error or a completion, maybe streamed."""
        if isinstance(reply, dict):
            return _finish(reply, req, {})
        if isinstance(reply, str):
            reply = Reply(content=reply)
        headers = dict(reply.headers or {})
        if reply.status != 200:
            return Outcome(reply.status, _error_for(reply), headers)
        completion = chat_completion(
            reply.content,
            refusal=reply.refusal,
            finish_reason=reply.finish_reason,
            tool_calls=reply.tool_calls,
            model=self._model(req),
            usage=reply.usage or _usage(req, reply.content or reply.refusal or ""),
        )
        return _finish(completion, req, headers)

    # --- generated ----------------------------------------------------------------------

    def _generated(self, req: dict[str, Any], seed: int) -> Reply:
        if not isinstance(req.get("messages"), list):
            raise _missing("messages")
        if not isinstance(req.get("model"), str):
            raise _missing("model")
        content, finish_reason = self._content(req, seed)
        tools = self._tools(req)
        forced = _forced_tool(req, tools)
        if self.quirks.constrains_tool_steps and _structured(req):
            forced = None  # the format constrains the tool step too: no call can come out
        if forced is None:
            return Reply(content, finish_reason=finish_reason)
        arguments = json.dumps(self._instance(tools[forced], seed, forced), separators=(",", ":"))
        call = {"name": forced, "arguments": arguments}
        return Reply(tool_calls=[call], finish_reason="tool_calls", usage=_usage(req, arguments))

    def _content(self, req: dict[str, Any], seed: int) -> tuple[str, str]:
        """The reply's content for the request's format, and its finish reason."""
        fmt = req.get("response_format")
        if fmt is None or self.quirks.ignores_response_format:
            return PLAIN_REPLY, "stop"
        if not isinstance(fmt, dict):
            raise Rejected(
                "Invalid type for 'response_format': expected an object.",
                param="response_format",
                code="invalid_type",
            )
        kind = fmt.get("type")
        if kind == "text":
            return PLAIN_REPLY, "stop"
        if kind == "json_object" and self.quirks.rejects_json_object:
            raise Rejected(
                "'response_format.type' must be 'json_schema'", param="response_format.type"
            )
        if kind == "json_object":
            content, schema = _json_object_content(req, seed)
        elif kind == "json_schema":
            content, schema = self._json_schema_content(fmt, seed)
        else:
            raise Rejected(
                f"Invalid value: {json.dumps(kind)}. Supported values are: 'json_object', "
                "'json_schema', and 'text'.",
                param="response_format.type",
                code="invalid_value",
            )
        return self._quirky(content, schema, req)

    def _quirky(self, content: str, schema: dict[str, Any], req: dict[str, Any]) -> tuple[str, str]:
        """``content`` as the impersonated server would send it (spoiled ``times`` times)."""
        if not self.quirks.spoils_output or not content.startswith("{"):
            return content, "stop"
        with self._lock:
            if self.quirks.times is not None and self._spoiled >= self.quirks.times:
                return content, "stop"
            self._spoiled += 1
        cap = req.get("max_tokens", req.get("max_completion_tokens"))
        return spoil(self.quirks, content, schema, cap if isinstance(cap, int) else None)

    def _json_schema_content(self, fmt: dict[str, Any], seed: int) -> tuple[str, dict[str, Any]]:
        if not self.supports_json_schema:
            raise Rejected(
                "Invalid parameter: 'response_format' of type 'json_schema' is not supported "
                "with this model.",
                param="response_format",
                code="unsupported_parameter",
            )
        spec = fmt.get("json_schema")
        if not isinstance(spec, dict):
            raise _missing("response_format.json_schema")
        if "name" not in spec:
            raise _missing("response_format.json_schema.name")
        name, schema = spec["name"], spec.get("schema")
        if schema is not None and not isinstance(schema, dict):
            raise Rejected(
                "Invalid type for 'response_format.json_schema.schema': expected an object.",
                param="response_format.json_schema.schema",
                code="invalid_type",
            )
        # OpenAI checks the name whether or not the schema is strict.
        bad_name = check_name(name)
        if bad_name:
            message = format_violation(bad_name[0], name=str(name))
            raise Rejected(message, param="response_format.json_schema.name", code="invalid_value")
        strict = spec.get("strict") is True and not self.quirks.ignores_strict
        _check_schema(schema, name, "response_format", strict=strict, param="response_format")
        if not isinstance(schema, dict):
            return "{}", {}
        instance = self._instance(schema, seed, f"response_format {name!r}")
        return json.dumps(instance, separators=(",", ":")), schema

    def _instance(self, schema: dict[str, Any], seed: int, where: str) -> Any:
        """Data generated for ``schema``, checked against it (a mismatch is a generator bug)."""
        try:
            instance = generate_instance(schema, seed=seed)
            problems = validate_instance(instance, schema)
        except Exception as exc:  # a $ref that resolves nowhere, and the like
            raise Rejected(
                f"Invalid schema for {where}: {exc}", param=None, code="invalid_json_schema"
            ) from exc
        if problems:
            with self._lock:
                self.mismatches.append(f"{where} (generated): {problems[0]}")
            raise _GeneratorBug(where, problems[0])
        return instance

    def _tools(self, req: dict[str, Any]) -> dict[str, dict[str, Any]]:
        """The request's functions by name, after OpenAI's checks on them."""
        tools = req.get("tools")
        if tools is None:
            return {}
        if not self.supports_tools:
            raise Rejected(
                "Unsupported parameter: 'tools' is not supported with this model.",
                param="tools",
                code="unsupported_parameter",
            )
        if not isinstance(tools, list) or not tools:
            raise Rejected(
                "Invalid 'tools': expected a non-empty array.", param="tools", code="invalid_value"
            )
        found: dict[str, dict[str, Any]] = {}
        for index, tool in enumerate(tools):
            name, parameters = _function_of(
                tool, index, checks_strict=not self.quirks.ignores_strict
            )
            found[name] = parameters
        return found

    def _model(self, req: dict[str, Any]) -> str:
        model = req.get("model")
        return model if isinstance(model, str) else self.model


def _usage(req: dict[str, Any], produced: str) -> dict[str, int]:
    prompt = len(json.dumps(req.get("messages", []), default=str)) // 4
    return usage_for(produced, prompt_tokens=prompt)


def _error_for(reply: Reply) -> dict[str, Any]:
    fallback = _DEFAULT_ERRORS.get(
        reply.status,
        (
            f"Scripted error {reply.status}.",
            "server_error" if reply.status >= 500 else "invalid_request_error",
            None,
        ),
    )
    given = reply.error or {}
    return error_body(
        str(given.get("message", fallback[0])),
        type=str(given.get("type", fallback[1])),
        param=given.get("param"),
        code=given.get("code", fallback[2]),
    )


def _finish(completion: dict[str, Any], req: dict[str, Any], headers: dict[str, str]) -> Outcome:
    if req.get("stream") is not True:
        return Outcome(200, completion, headers)
    options = req.get("stream_options")
    include_usage = isinstance(options, dict) and options.get("include_usage") is True
    return Outcome(200, completion, headers, completion_chunks(completion, include_usage))


def _missing(where: str) -> Rejected:
    message = f"Missing required parameter: '{where}'."
    return Rejected(message, param=where, code="missing_required_parameter")


def _function_of(tool: object, index: int, *, checks_strict: bool) -> tuple[str, dict[str, Any]]:
    where = f"tools[{index}].function"
    spec = tool.get("function") if isinstance(tool, dict) else None
    if not isinstance(tool, dict) or tool.get("type") != "function" or not isinstance(spec, dict):
        raise _missing(where)
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
    strict = spec.get("strict") is True and checks_strict
    _check_schema(parameters, name, "function", strict=strict, param=f"{where}.parameters")
    return name, parameters


def _check_schema(
    schema: object,
    name: str,
    kind: Literal["response_format", "function"],
    *,
    strict: bool,
    param: str,
) -> None:
    """OpenAI's checks on a requested schema, the meta-schema's then (if strict) its subset's."""
    # Not JSON Schema at all: refused whatever `strict` says.
    invalid = meta_schema_violation(schema) if isinstance(schema, dict) else None
    violations = [invalid] if invalid else check_openai_strict(schema, name=name) if strict else []
    if not violations:
        return
    code = "invalid_function_parameters" if kind == "function" else "invalid_json_schema"
    raise Rejected(format_violation(violations[0], name=name, kind=kind), param=param, code=code)


def _forced_tool(req: dict[str, Any], tools: dict[str, dict[str, Any]]) -> str | None:
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
    if isinstance(choice, str):  # OpenAI's wording for a value outside an enum
        raise Rejected(
            f"Invalid value: '{choice}'. Supported values are: 'none', 'auto', and 'required'.",
            param="tool_choice",
            code="invalid_value",
        )
    if not isinstance(choice, dict):
        raise Rejected(
            "Invalid type for 'tool_choice': expected one of a string or an object.",
            param="tool_choice",
            code="invalid_type",
        )
    function: object = cast("dict[str, Any]", choice).get("function")
    if not isinstance(function, dict):
        raise _missing("tool_choice.function")
    name: object = cast("dict[str, Any]", function).get("name")
    if not isinstance(name, str):
        raise _missing("tool_choice.function.name")
    if name in tools:
        return name
    raise Rejected(
        f"Invalid value for 'tool_choice': function '{name}' is not among 'tools'.",
        param="tool_choice",
        code="invalid_value",
    )


def _structured(req: dict[str, Any]) -> bool:
    fmt = req.get("response_format")
    return isinstance(fmt, dict) and fmt.get("type") in ("json_object", "json_schema")


def _json_object_content(req: dict[str, Any], seed: int) -> tuple[str, dict[str, Any]]:
    """Generated JSON for JSON mode, and the schema it follows.

    The schema is ``response_format.schema`` (llama.cpp takes one), else a fenced schema in the
    prompt, else none (``{}``).
    """
    texts = list(_message_texts(req["messages"]))
    if not any("json" in text.lower() for _, text in texts):
        raise Rejected(
            "'messages' must contain the word 'json' in some form, to use 'response_format' of "
            "type 'json_object'.",
            param="messages",
        )
    given = req["response_format"].get("schema")
    if isinstance(given, dict):
        try:
            instance = generate_instance(given, seed=seed)
        except SchemaError as exc:  # an unresolvable $ref, an endless recursion
            message = f"Invalid schema for response_format 'json_object': {exc}"
            code = "invalid_json_schema"
            raise Rejected(message, param="response_format.schema", code=code) from exc
        return json.dumps(instance, separators=(",", ":")), given
    for role, text in texts:
        if role not in ("system", "developer", "user"):
            continue
        for block in _FENCED_JSON.findall(text):
            try:
                schema = json.loads(block)
            except ValueError:
                continue
            if isinstance(schema, dict) and "properties" in schema:
                try:
                    instance = generate_instance(schema, seed=seed)
                except SchemaError:
                    continue  # only a hint in the prompt: a schema no value fits is skipped
                return json.dumps(instance, separators=(",", ":")), schema
    return "{}", {}


def _message_texts(messages: list[Any]) -> list[tuple[str, str]]:
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
