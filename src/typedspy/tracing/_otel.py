"""`OpenTelemetry`: a callback that turns module, attempt and tool events into spans (ADR-025).

Only ``opentelemetry-api`` is imported; whoever runs the program configures the SDK and its
exporters. Without this callback in the settings nothing here runs: typedspy's call path checks
for callbacks once per request and otherwise never reaches this module. Credentials never
appear: requests are described from `LMRequest` and the LM's redacted ``endpoint``, never from
headers; prompt and completion text only with ``capture_content=True``.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urlsplit

from typedspy._text import encodable
from typedspy._version import __version__
from typedspy.callbacks import BaseCallback
from typedspy.errors import ConfigurationError
from typedspy.react import observation
from typedspy.tools import ConfirmationRequired
from typedspy.tracing._messages import input_messages, output_messages

if TYPE_CHECKING:
    from opentelemetry.trace import Span, SpanKind, Tracer, TracerProvider

    from typedspy._types import Attempt
    from typedspy.lm import BaseLM, LMRequest, LMResponse
    from typedspy.tools import Tool

__all__ = ["OpenTelemetry"]


@dataclass
class _Open:
    span: Span
    token: object | None  # the context token to detach, when the span was made current
    owned: bool = True  # a chat span this LM call started (not an attempt's)
    tool: Tool | None = None  # an execute_tool span's tool (its result is rendered as sent)


class OpenTelemetry(BaseCallback):
    """Spans for module calls, LM attempts and tool calls, as the GenAI conventions say (ADR-079).

    Add it to the callbacks: ``ts.configure(callbacks=[OpenTelemetry()])``. Spans:

    - ``invoke_workflow {Module}`` per module call (``invoke_agent {Module}`` for agents);
    - ``chat {model}`` (kind ``CLIENT``) per attempt (or per request outside a module), with
      the request's model and parameters, the response's model, id, finish reasons and token
      usage, ``server.address``/``server.port``, ``typedspy.attempt`` and
      ``typedspy.failure_kind`` (``decode_failed``, ``validation_failed``, or the error class
      that ended the call);
    - ``execute_tool {tool}`` per tool an agent runs, with ``gen_ai.tool.name``.

    A `ConfirmationRequired` that pauses a run is no error: the spans it ends carry
    ``typedspy.paused`` and a ``typedspy.paused`` event, and keep an unset (OK) status.

    Args:
        tracer_provider: Where spans go; the global provider when ``None`` (a no-op one until
            the application sets one up).
        capture_content: Also record messages, completions and tool arguments/results
            (``gen_ai.input.messages``, ``gen_ai.output.messages``, ...). Off by default:
            prompts often hold personal data.

    Raises:
        ConfigurationError: ``opentelemetry-api`` is not installed (``pip install
            "typedspy[otel]"``).
    """

    def __init__(
        self, *, tracer_provider: TracerProvider | None = None, capture_content: bool = False
    ) -> None:
        try:
            from opentelemetry import context, trace
        except ImportError as exc:
            raise ConfigurationError(
                'typedspy.tracing needs opentelemetry-api: pip install "typedspy[otel]"'
            ) from exc
        self._trace = trace
        self._context = context
        self._tracer: Tracer = trace.get_tracer("typedspy", __version__, tracer_provider)
        self.capture_content = capture_content
        self._open: dict[str, _Open] = {}
        # The attempt spans open now, by id (any span type, hashable or not): a request made
        # while one is the current span is described on it.
        self._attempts: dict[int, Span] = {}
        self._lock = threading.Lock()

    # -- spans --

    def _start(
        self,
        call_id: str,
        name: str,
        attributes: Callable[[], Mapping[str, Any]],
        *,
        kind: SpanKind | None = None,
        tool: Tool | None = None,
    ) -> Span:
        span = self._tracer.start_span(name, kind=kind or self._trace.SpanKind.INTERNAL)
        token = self._context.attach(self._trace.set_span_in_context(span))
        with self._lock:  # open before its attributes: nothing they do loses the span
            self._open[call_id] = _Open(span, token, tool=tool)
        if span.is_recording():  # a no-op tracer costs no attribute work
            span.set_attributes(_encodable(attributes()))
        return span

    def _chat(self, call_id: str, lm: BaseLM, extra: Mapping[str, Any]) -> Span:
        """Open ``chat {model}`` (kind ``CLIENT``): the LM's attributes and ``extra``."""
        return self._start(
            call_id,
            f"chat {lm.model}",
            lambda: {**_lm_attributes(lm), **extra},
            kind=self._trace.SpanKind.CLIENT,
        )

    def _end(self, call_id: str, exception: BaseException | None) -> _Open | None:
        with self._lock:
            entry = self._open.pop(call_id, None)
        if entry is None:
            return None
        if exception is not None and entry.span.is_recording():
            self._failed(entry.span, exception)
        entry.span.end()
        if entry.token is not None:  # detach logs, never raises, a token of another context
            self._context.detach(entry.token)  # type: ignore[arg-type]
        return entry

    def _failed(self, span: Span, exception: BaseException) -> None:
        """Mark ``span`` as ended by ``exception``: an error, or a pause that is none."""
        if not isinstance(exception, ConfirmationRequired):
            span.set_attribute("error.type", type(exception).__name__)
            span.set_status(self._trace.Status(self._trace.StatusCode.ERROR))
            return
        # A pause waits for a person (docs/confirmations.md): the status stays unset (OK).
        event: dict[str, Any] = {"typedspy.confirmation_id": exception.confirmation_id}
        if isinstance(exception.tool_call.get("name"), str):
            event["gen_ai.tool.name"] = exception.tool_call["name"]
        if self.capture_content:
            event["typedspy.question"] = exception.question
        span.set_attribute("typedspy.paused", True)
        span.add_event("typedspy.paused", _encodable(event))

    # -- modules --

    def on_module_start(self, call_id: str, instance: Any, inputs: Mapping[str, Any]) -> None:
        """Open ``invoke_workflow``/``invoke_agent`` for a module call."""
        name = type(instance).__name__
        operation = "invoke_agent" if hasattr(instance, "tools") else "invoke_workflow"

        def attributes() -> dict[str, Any]:
            out: dict[str, Any] = {"gen_ai.operation.name": operation}
            if operation == "invoke_agent":
                out |= {"gen_ai.agent.name": name, "gen_ai.provider.name": PROVIDER}
            else:
                out["gen_ai.workflow.name"] = name
            resumed = inputs.get("resume_state")
            if resumed is not None:  # a run resumed after a pause, under its own agent span
                out["typedspy.resumed"] = True
                if isinstance(getattr(resumed, "confirmation_id", None), str):
                    out["typedspy.confirmation_id"] = resumed.confirmation_id
            if self.capture_content:
                out["typedspy.inputs"] = _json(inputs)
            return out

        self._start(call_id, f"{operation} {name}", attributes)

    def on_module_end(self, call_id: str, outputs: Any, exception: BaseException | None) -> None:
        """Close the module's span (its error class as ``error.type``; a pause is no error)."""
        self._end(call_id, exception)

    # -- attempts and requests --

    def on_attempt_start(self, call_id: str, instance: BaseLM, number: int) -> None:
        """Open ``chat {model}`` for one attempt; its request fills in the rest."""
        span = self._chat(call_id, instance, {"typedspy.attempt": number})
        if span.is_recording():
            with self._lock:
                self._attempts[id(span)] = span

    def on_attempt_end(
        self, call_id: str, attempt: Attempt | None, exception: BaseException | None
    ) -> None:
        """Record the attempt's failure kind and close its span."""
        with self._lock:
            entry = self._open.get(call_id)
        if entry is not None and entry.span.is_recording():
            kind: str | None = attempt.kind if attempt is not None else None
            if kind is None and exception is not None:
                kind = type(exception).__name__
            if kind is not None:
                entry.span.set_attribute("typedspy.failure_kind", kind)
        ended = self._end(call_id, exception)
        if ended is not None:
            with self._lock:
                self._attempts.pop(id(ended.span), None)

    def on_lm_start(self, call_id: str, instance: BaseLM, request: LMRequest) -> None:
        """Describe the request on the attempt's span, or open a ``chat`` span of its own.

        The attempt's span is the current span (`_start` made it so) while the attempt runs.
        """
        span = self._trace.get_current_span()
        with self._lock:
            attempt = self._attempts.get(id(span)) is span
            if attempt:
                self._open[call_id] = _Open(span, None, owned=False)
        if not attempt:
            span = self._chat(call_id, instance, {})
        if span.is_recording():
            span.set_attributes(_encodable(self._request_attributes(instance, request)))

    def _request_attributes(self, lm: BaseLM, request: LMRequest) -> dict[str, Any]:
        sent = {**lm.defaults, **request.params}  # the LM's defaults, under the call's
        out: dict[str, Any] = {}
        for name, keys, kinds in _REQUEST_ATTRIBUTES:
            value = next((sent[k] for k in keys if _is(sent.get(k), kinds)), None)
            if value is not None:
                out[f"gen_ai.request.{name}"] = value
        stops = _stop_sequences(sent.get("stop"))
        if stops is not None:
            out["gen_ai.request.stop_sequences"] = stops
        if _is(sent.get("n"), (int,)) and sent["n"] != 1:
            out["gen_ai.request.choice.count"] = sent["n"]
        if request.response_format is not None:
            out["gen_ai.output.type"] = "json"
        if self.capture_content:
            out["gen_ai.input.messages"] = _json(request.messages, input_messages)
        return out

    def on_lm_end(
        self, call_id: str, response: LMResponse | None, exception: BaseException | None
    ) -> None:
        """Record model, usage and finish reason; close the span if the request owned it."""
        with self._lock:
            entry = self._open.get(call_id)
        if entry is None:
            return
        span = entry.span
        if response is not None and span.is_recording():
            span.set_attributes(_encodable(self._response_attributes(response)))
        if entry.owned:
            self._end(call_id, exception)
        else:
            with self._lock:
                self._open.pop(call_id, None)
            if exception is not None and span.is_recording():
                span.set_attribute("error.type", type(exception).__name__)

    def _response_attributes(self, response: LMResponse) -> dict[str, Any]:
        out: dict[str, Any] = {
            "gen_ai.response.model": response.model,
            "gen_ai.usage.input_tokens": response.usage.prompt_tokens,
            "gen_ai.usage.output_tokens": response.usage.completion_tokens,
        }
        if isinstance(response.raw.get("id"), str):
            out["gen_ai.response.id"] = response.raw["id"]
        if response.finish_reason is not None:
            out["gen_ai.response.finish_reasons"] = [response.finish_reason]
        if self.capture_content:
            out["gen_ai.output.messages"] = _json(response.raw.get("choices"), output_messages)
        return out

    # -- tools --

    def on_tool_start(self, call_id: str, instance: Tool, arguments: object) -> None:
        """Open ``execute_tool {name}``."""

        def attributes() -> dict[str, Any]:
            out: dict[str, Any] = {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": instance.name,
                "gen_ai.tool.type": "function",
            }
            if instance.description:
                out["gen_ai.tool.description"] = instance.description
            if self.capture_content:  # the model's JSON text as it wrote it, not re-quoted
                text = arguments if isinstance(arguments, str) else None
                out["gen_ai.tool.call.arguments"] = text or _json(arguments)
            return out

        self._start(call_id, f"execute_tool {instance.name}", attributes, tool=instance)

    def on_tool_end(self, call_id: str, outputs: object, exception: BaseException | None) -> None:
        """Close the tool's span (with its result, as the model reads it, when captured)."""
        if self.capture_content and exception is None:
            with self._lock:
                entry = self._open.get(call_id)
            if entry is not None and entry.span.is_recording():
                tool = entry.tool
                result = _json(outputs, lambda v: observation(v, tool), text=True)
                entry.span.set_attribute("gen_ai.tool.call.result", encodable(result))
        self._end(call_id, exception)


PROVIDER = "openai"
"""``gen_ai.provider.name``: the wire protocol (Chat Completions), whatever server answers."""

_NUMBER = (int, float)

_REQUEST_ATTRIBUTES: tuple[tuple[str, tuple[str, ...], tuple[type, ...]], ...] = (
    ("max_tokens", ("max_tokens", "max_completion_tokens"), _NUMBER),  # either caps it
    ("temperature", ("temperature",), _NUMBER),
    ("top_p", ("top_p",), _NUMBER),
    ("frequency_penalty", ("frequency_penalty",), _NUMBER),
    ("presence_penalty", ("presence_penalty",), _NUMBER),
    ("seed", ("seed",), (int,)),
)


def _is(value: object, kinds: tuple[type, ...]) -> bool:
    return isinstance(value, kinds) and not isinstance(value, bool)


def _stop_sequences(stop: object) -> list[str] | None:
    if isinstance(stop, str):
        return [stop]
    items = list(cast("list[object]", stop)) if isinstance(stop, (list, tuple)) else None
    if items is not None and all(isinstance(v, str) for v in items):
        return [str(v) for v in items]
    return None


_LM_ATTRIBUTES: weakref.WeakKeyDictionary[BaseLM, dict[str, Any]] = weakref.WeakKeyDictionary()


def _lm_attributes(lm: BaseLM) -> dict[str, Any]:
    """The attributes of requests to ``lm``, worked out once per LM.

    An LM that cannot be weakly referenced or hashed (a user's class) is described each time.
    """
    try:
        cached = _LM_ATTRIBUTES.get(lm)
    except TypeError:
        return _describe_lm(lm)
    if cached is None:
        cached = _LM_ATTRIBUTES[lm] = _describe_lm(lm)
    return cached


def _describe_lm(lm: BaseLM) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": PROVIDER,
        "gen_ai.request.model": lm.model,
        "typedspy.profile": lm.profile.name,
    }
    try:
        endpoint = lm.endpoint  # redacted by LM: no credentials in URLs
    except ConfigurationError:
        endpoint = None
    if endpoint:
        attributes.update(_server(endpoint.split(" | ")[0]))  # a chain: its first endpoint
    return attributes


_DEFAULT_PORTS = {"http": 80, "https": 443}


def _server(url: str) -> dict[str, Any]:
    """``server.address`` and ``server.port`` of ``url``, those it can read; never raises.

    Only the host and port are read: whatever stands before an ``@`` is dropped unread (a
    redacted ``user:[redacted]@`` is no valid URL part), and an unreadable host or port is left
    out. The port is the scheme's when the URL names none (the conventions want one with
    ``server.address``).
    """
    scheme, _, rest = url.partition("://")
    host_port = re.split(r"[/?#]", rest, maxsplit=1)[0].rpartition("@")[2]
    try:
        parts = urlsplit(f"//{host_port}")
        host = parts.hostname
    except ValueError:  # a broken IPv6 literal
        return {}
    try:
        port = parts.port or _DEFAULT_PORTS.get(scheme.lower())
    except ValueError:  # a port out of range, or not a number
        port = None
    if not host:
        return {}
    return {"server.address": host} | ({"server.port": port} if port else {})


def _encodable(attributes: Mapping[str, Any]) -> dict[str, Any]:
    """``attributes`` with lone surrogates in their text replaced (`encodable`).

    A server's or a model's text may hold one (an escaped half emoji in its JSON); exporters
    encode attributes as UTF-8, and one that cannot be encoded failed the export of its batch.
    """
    out: dict[str, Any] = {}
    for key, value in attributes.items():
        if isinstance(value, str):
            value = encodable(value)
        elif isinstance(value, (list, tuple)):
            items = cast("list[object]", value)
            value = [encodable(v) if isinstance(v, str) else v for v in items]
        out[key] = value
    return out


def _json(
    value: object, convert: Callable[[Any], object] | None = None, *, text: bool = False
) -> str:
    """``value``, through ``convert``, as JSON text for an attribute; never raises.

    A ``convert`` that fails leaves ``value`` as it is; with ``text``, a string it returns is
    recorded as it is (text the model read, not re-quoted). Types nothing serialises are
    rendered as their ``str``; a value that still cannot be rendered (circular, a failing
    ``__str__``) is named by its type, so the span keeps its other attributes.
    """
    from pydantic_core import to_jsonable_python

    from typedspy.signature import to_jsonable

    if convert is not None:
        with contextlib.suppress(Exception):
            value = convert(value)
            if text and isinstance(value, str):
                return value
    with contextlib.suppress(Exception):
        return json.dumps(to_jsonable(value), ensure_ascii=False, default=str)
    with contextlib.suppress(Exception):  # an unknown type somewhere inside
        return json.dumps(to_jsonable_python(value, fallback=str), ensure_ascii=False)
    return json.dumps(f"<{type(value).__name__}: not serialisable>")
