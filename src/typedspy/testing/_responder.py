"""What the stand-in server answers to a chat-completions request (no sockets here).

Scripted replies are used first, in order. Otherwise the request is checked the way
api.openai.com checks it (strict schemas, the "json" word for JSON mode, tool choice) and
answered with data generated from the requested schema.
"""

from __future__ import annotations

import json
import re
import threading
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from typedspy.schema.targets._openai_rules import check_name, check_openai_strict, format_violation
from typedspy.testing._datagen import generate_instance
from typedspy.testing._payloads import (
    chat_completion,
    completion_chunks,
    error_body,
    usage_for,
)

__all__ = ["PLAIN_REPLY", "Outcome", "Reply", "Responder"]

PLAIN_REPLY = "standin reply"
_FENCED_JSON = re.compile(r"```json\s*\n(.*?)```", re.DOTALL | re.IGNORECASE)
_EMPTY_PARAMETERS = {
    "type": "object",
    "properties": {},
    "required": [],
    "additionalProperties": False,
}
_DEFAULT_ERRORS: Mapping[int, tuple[str, str, str | None]] = {
    400: ("Bad request.", "invalid_request_error", None),
    401: ("Incorrect API key provided.", "invalid_request_error", "invalid_api_key"),
    404: ("The model does not exist.", "invalid_request_error", "model_not_found"),
    429: ("Rate limit reached for requests.", "requests", "rate_limit_exceeded"),
    500: ("The server had an error while processing your request.", "server_error", None),
    503: ("The engine is currently overloaded, please try again later.", "server_error", None),
}  # fmt: skip


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


@dataclass(frozen=True)
class Outcome:
    """An answer to send: status, JSON body, extra headers, and SSE chunks when streaming."""

    status: int
    body: dict[str, Any]
    headers: Mapping[str, str] = field(default_factory=dict)
    chunks: list[dict[str, Any]] | None = None


class _Rejected(Exception):
    """A 400 (or other error) found while checking a request."""

    def __init__(self, message: str, *, param: str | None, code: str | None = None) -> None:
        super().__init__(message)
        self.outcome = Outcome(400, error_body(message, param=param, code=code))


def _missing(where: str) -> _Rejected:
    message = f"Missing required parameter: '{where}'."
    return _Rejected(message, param=where, code="missing_required_parameter")


class Responder:
    """Decides the answer to each request; thread-safe."""

    def __init__(
        self,
        *,
        supports_json_schema: bool,
        supports_tools: bool,
        seed: int,
        model: str,
        answer: Callable[[dict[str, Any]], Reply | str | dict[str, Any] | None] | None = None,
    ) -> None:
        self.answer = answer
        self.supports_json_schema = supports_json_schema
        self.supports_tools = supports_tools
        self.seed = seed
        self.model = model
        self._lock = threading.Lock()
        self._queue: deque[Reply | str | dict[str, Any]] = deque()
        self._count = 0

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
            return self._scripted(scripted, req)
        try:
            if not isinstance(request, dict):
                raise _Rejected("The request body must be a JSON object.", param=None)
            return self._generated(req, self.seed + index)
        except _Rejected as rejected:
            return rejected.outcome

    # --- scripted -----------------------------------------------------------------------

    def _scripted(self, reply: Reply | str | dict[str, Any], req: dict[str, Any]) -> Outcome:
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

    def _generated(self, req: dict[str, Any], seed: int) -> Outcome:
        if not isinstance(req.get("messages"), list):
            raise _missing("messages")
        if not isinstance(req.get("model"), str):
            raise _missing("model")
        content = self._content(req, seed)
        tools = self._tools(req)
        forced = _forced_tool(req, tools)
        if forced is None:
            completion = chat_completion(
                content, model=self._model(req), usage=_usage(req, content)
            )
            return _finish(completion, req, {})
        parameters = tools[forced]
        arguments = json.dumps(generate_instance(parameters, seed=seed), separators=(",", ":"))
        completion = chat_completion(
            None,
            tool_calls=[{"name": forced, "arguments": arguments}],
            finish_reason="tool_calls",
            model=self._model(req),
            usage=_usage(req, arguments),
        )
        return _finish(completion, req, {})

    def _content(self, req: dict[str, Any], seed: int) -> str:
        fmt = req.get("response_format")
        if fmt is None:
            return PLAIN_REPLY
        if not isinstance(fmt, dict):
            raise _Rejected(
                "Invalid type for 'response_format': expected an object.",
                param="response_format",
                code="invalid_type",
            )
        kind = fmt.get("type")
        if kind == "text":
            return PLAIN_REPLY
        if kind == "json_object":
            return _json_object_content(req, seed)
        if kind == "json_schema":
            return self._json_schema_content(fmt, seed)
        raise _Rejected(
            f"Invalid value: {json.dumps(kind)}. Supported values are: 'json_object', "
            "'json_schema', and 'text'.",
            param="response_format.type",
            code="invalid_value",
        )

    def _json_schema_content(self, fmt: dict[str, Any], seed: int) -> str:
        if not self.supports_json_schema:
            raise _Rejected(
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
        # OpenAI checks the name whether or not the schema is strict.
        bad_name = check_name(name)
        if bad_name:
            message = format_violation(bad_name[0], name=str(name))
            raise _Rejected(message, param="response_format.json_schema.name", code="invalid_value")
        violations = check_openai_strict(schema, name=name) if spec.get("strict") is True else []
        if violations:
            message = format_violation(violations[0], name=name)
            raise _Rejected(message, param="response_format", code="invalid_json_schema")
        if not isinstance(schema, dict):
            return "{}"
        return json.dumps(generate_instance(schema, seed=seed), separators=(",", ":"))

    def _tools(self, req: dict[str, Any]) -> dict[str, dict[str, Any]]:
        """The request's functions by name, after OpenAI's checks on them."""
        tools = req.get("tools")
        if tools is None:
            return {}
        if not self.supports_tools:
            raise _Rejected(
                "Unsupported parameter: 'tools' is not supported with this model.",
                param="tools",
                code="unsupported_parameter",
            )
        if not isinstance(tools, list) or not tools:
            raise _Rejected(
                "Invalid 'tools': expected a non-empty array.", param="tools", code="invalid_value"
            )
        found: dict[str, dict[str, Any]] = {}
        for index, tool in enumerate(tools):
            name, parameters = _function(tool, index)
            found[name] = parameters
        return found

    def _model(self, req: dict[str, Any]) -> str:
        model = req.get("model")
        return model if isinstance(model, str) else self.model


def _function(tool: object, index: int) -> tuple[str, dict[str, Any]]:
    where = f"tools[{index}].function"
    spec = tool.get("function") if isinstance(tool, dict) else None
    if not isinstance(tool, dict) or tool.get("type") != "function" or not isinstance(spec, dict):
        raise _missing(where)
    name = spec.get("name")
    bad_name = check_name(name)
    if bad_name or not isinstance(name, str):  # check_name flags every non-string
        message = f"Invalid '{where}.name': {bad_name[0].message}"
        raise _Rejected(message, param=f"{where}.name", code="invalid_value")
    parameters = spec.get("parameters", _EMPTY_PARAMETERS)
    violations = check_openai_strict(parameters, name=name) if spec.get("strict") is True else []
    if violations:
        message = format_violation(violations[0], name=name, kind="function")
        raise _Rejected(message, param=f"{where}.parameters", code="invalid_function_parameters")
    return name, parameters if isinstance(parameters, dict) else {}


def _forced_tool(req: dict[str, Any], tools: dict[str, dict[str, Any]]) -> str | None:
    choice = req.get("tool_choice")
    if choice is None:
        return None
    if not tools:
        raise _Rejected(
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
    raise _Rejected(
        f"Invalid value for 'tool_choice': function {json.dumps(name)} is not among 'tools'.",
        param="tool_choice",
        code="invalid_value",
    )


def _json_object_content(req: dict[str, Any], seed: int) -> str:
    texts = list(_message_texts(req["messages"]))
    if not any("json" in text.lower() for _, text in texts):
        raise _Rejected(
            "'messages' must contain the word 'json' in some form, to use 'response_format' of "
            "type 'json_object'.",
            param="messages",
        )
    for role, text in texts:
        if role not in ("system", "developer", "user"):
            continue
        for block in _FENCED_JSON.findall(text):
            try:
                schema = json.loads(block)
            except ValueError:
                continue
            if isinstance(schema, dict) and "properties" in schema:
                return json.dumps(generate_instance(schema, seed=seed), separators=(",", ":"))
    return "{}"


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
