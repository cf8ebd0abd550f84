"""Issue 10, case 2: no credential in any traceback, repr, str or pickle of what typedspy raises."""

from __future__ import annotations

import base64
import json
import logging
import pickle
import traceback
from typing import Any

import httpx
import openai
import pytest

import typedspy as ts
from faults.server import FaultServer, Reply, Seen
from typedspy.errors import LMConnectionError

KEY = "sk-fault-0123456789abcdefSECRET"
PASSWORD = "hunter2-very-secret"


class Answer(ts.Signature):
    """Answer."""

    question: str = ts.InputField()
    answer: str = ts.OutputField()


def quoting_401(seen: Seen) -> Reply:
    # An endpoint quoting the key it was given (the way OpenAI words "Incorrect API key").
    key = seen.headers["authorization"].removeprefix("Bearer ")
    message = f"Incorrect API key provided: {key}. You can find your API key elsewhere."
    error = {"message": message, "type": "invalid_request_error", "code": "invalid_api_key"}
    return Reply.json({"error": error}, status=401)


def echoing_proxy(seen: Seen) -> Reply:
    # A proxy reflecting the request's headers in a 200 that is no completion.
    return Reply.json({"headers": dict(seen.headers)})


def echoing_gateway(seen: Seen) -> Reply:
    # A gateway failing with the headers in its error message.
    return Reply.json({"error": {"message": f"upstream failed for {seen.headers}"}}, status=502)


def everything_shown(exc: BaseException) -> str:
    """Every way an error is seen: tracebacks (chain included), str, repr, pickle, causes."""
    shown = ["".join(traceback.format_exception(exc)), str(exc), repr(exc)]
    shown.append(pickle.dumps(exc).decode("latin-1"))
    cause = exc.__cause__
    while cause is not None:
        shown += [str(cause), repr(cause), repr(getattr(cause, "body", None))]
        for name in ("request", "response"):
            part = getattr(cause, name, None)
            if part is not None:
                shown += [str(part.url), str(dict(part.headers))]
                shown.append(getattr(part, "text", ""))
        cause = cause.__cause__ or cause.__context__
    return "\n".join(shown)


@pytest.mark.parametrize("reply", [quoting_401, echoing_proxy, echoing_gateway])
def test_an_echoed_key_is_in_no_traceback(reply: object) -> None:
    with FaultServer(Reply(echo=reply)) as server:  # type: ignore[arg-type]
        lm = ts.LM("m", base_url=server.url, api_key=KEY, max_retries=0)
        with ts.context(lm=lm), pytest.raises(ts.LMError) as caught:
            ts.Predict(Answer)(question="q")
        lm.close()
    assert len(server.requests) == 1  # the endpoint is not blamed on the model: no retry
    assert KEY in server.requests[0].headers["authorization"]  # the server did see it
    shown = everything_shown(caught.value)
    assert KEY not in shown
    assert reply is echoing_proxy or "[redacted]" in shown  # the proxy's body is not shown
    assert caught.value.__cause__ is not None  # the SDK error is kept, without the secret


def test_a_password_in_the_base_url_is_in_no_traceback() -> None:
    with FaultServer(Reply(echo=echoing_gateway)) as server:
        url = server.url.replace("http://", f"http://admin:{PASSWORD}@")
        lm = ts.LM("m", base_url=url, api_key=KEY, max_retries=0)
        with ts.context(lm=lm), pytest.raises(ts.errors.LMStatusError) as caught:
            ts.Predict(Answer)(question="q")
        lm.close()
    assert "authorization" in server.requests[0].headers
    shown = everything_shown(caught.value) + repr(lm) + str(lm.endpoint)
    assert PASSWORD not in shown and KEY not in shown


def test_an_unreachable_endpoint_with_a_password_is_redacted() -> None:
    lm = ts.LM("m", base_url=f"http://u:{PASSWORD}@127.0.0.1:9/v1", api_key=KEY, max_retries=0)
    with ts.context(lm=lm), pytest.raises(ts.errors.LMConnectionError) as caught:
        ts.Predict(Answer)(question="q")
    lm.close()
    assert PASSWORD not in everything_shown(caught.value)


def deep_echo(depth: int, copies: int = 1) -> Any:
    """A 401 whose body holds the ``Authorization`` header ``depth`` objects deep."""

    def reply(seen: Seen) -> Reply:
        inner: Any = {"seen": [seen.headers["authorization"]] * copies}
        for _ in range(depth):
            inner = {"d": inner}
        return Reply.json({"error": {"message": "bad key", "detail": inner}}, status=401)

    return reply


def leaves(value: Any) -> list[Any]:
    """Every value in a nested body that is not a dict or a list, without recursion."""
    found, pending = [], [value]
    while pending:
        current = pending.pop()
        if isinstance(current, dict):
            pending.extend(current.values())
        elif isinstance(current, list):
            pending.extend(current)
        else:
            found.append(current)
    return found


def test_a_key_echoed_deep_in_an_error_body_is_redacted() -> None:
    # Was: the scrubber stopped 16 levels deep, leaving the key in exc.__cause__.body.
    with FaultServer(Reply(echo=deep_echo(40))) as server:
        lm = ts.LM("m", base_url=server.url, api_key=KEY, max_retries=0)
        with ts.context(lm=lm), pytest.raises(ts.errors.LMStatusError) as caught:
            ts.Predict(Answer)(question="q")
        lm.close()
    body = getattr(caught.value.__cause__, "body", None)
    assert sorted(leaves(body)) == ["Bearer [redacted]", "bad key"]
    assert KEY not in everything_shown(caught.value) + json.dumps(body)


def test_a_body_too_large_to_walk_is_redacted_not_kept() -> None:
    # Past the scrubber's bound on work (100,000 values), what is left is replaced unread.
    with FaultServer(Reply(echo=deep_echo(3, copies=150_000))) as server:
        lm = ts.LM("m", base_url=server.url, api_key=KEY, max_retries=0)
        with ts.context(lm=lm), pytest.raises(ts.errors.LMStatusError) as caught:
            ts.Predict(Answer)(question="q")
        lm.close()
    body = getattr(caught.value.__cause__, "body", None)
    seen = leaves(body)
    assert len(seen) == 150_001 and KEY not in json.dumps(body)
    assert set(seen) == {"Bearer [redacted]", "[redacted]", "bad key"}


class _Failing(httpx.AsyncBaseTransport):
    """A transport of the user's own that fails quoting the request's key."""

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        raise RuntimeError(f"transport broke on {request.headers['authorization']}")


def test_a_runtime_error_from_an_injected_clients_transport_is_raised_without_the_key() -> None:
    # Not typedspy's to translate: raised as it is, its text scrubbed (ADR-028). openai 1.40 (the
    # lowest supported) wraps it as a connection error itself, which is typed as one.
    http = httpx.AsyncClient(transport=_Failing())
    client = openai.AsyncOpenAI(base_url="http://127.0.0.1:9/v1", api_key=KEY, http_client=http)
    lm = ts.LM("m", client=client)
    with ts.context(lm=lm), pytest.raises((RuntimeError, LMConnectionError)) as caught:
        ts.Predict(Answer)(question="q")
    if not isinstance(caught.value, LMConnectionError):
        assert "transport broke" in str(caught.value)
    assert KEY not in everything_shown(caught.value)


def basic_credentials(seen: Seen) -> str:
    scheme, _, token = seen.headers["authorization"].partition(" ")
    assert scheme == "Basic"
    return base64.b64decode(token).decode()


def logged(records: list[logging.LogRecord]) -> str:
    formatter = logging.Formatter("%(name)s %(levelname)s %(message)s")
    return "\n".join(formatter.format(record) for record in records)


def test_a_password_in_the_base_url_reaches_no_log_record_and_still_authenticates(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Was: httpx logged "HTTP Request: POST http://admin:<password>@host/v1/..." at INFO on
    # every request (retries and the identification's GET /models too).
    replies = [Reply.json({"error": {"message": "busy"}}, status=500)]
    replies.append(Reply.completion('{"answer": "4"}'))  # after one retry
    with FaultServer(*replies) as server:
        url = server.url.replace("http://", f"http://ad%3Amin:{PASSWORD}@")
        lm = ts.LM("m", base_url=url, api_key=KEY, max_retries=1, profile="generic")
        with caplog.at_level(logging.DEBUG), ts.context(lm=lm):
            assert ts.Predict(Answer)(question="q").answer == "4"
            shown = [repr(lm), str(lm.endpoint), ts.inspect_history()]
        lm.close()
    # Basic auth still reaches the server, on every request (the user name percent-decoded).
    assert [basic_credentials(seen) for seen in server.requests] == [f"ad:min:{PASSWORD}"] * 2
    assert any("HTTP Request: POST" in r.getMessage() for r in caplog.records)  # httpx logged
    text = logged(caplog.records) + "\n".join(shown)
    assert PASSWORD not in text and KEY not in text
    assert "ad%3Amin" not in text  # nor the user name


def test_a_password_in_the_base_url_is_in_no_tracing_span() -> None:
    trace = pytest.importorskip("opentelemetry.sdk.trace", reason="opentelemetry-sdk (dev)")
    export = pytest.importorskip("opentelemetry.sdk.trace.export")
    memory = pytest.importorskip("opentelemetry.sdk.trace.export.in_memory_span_exporter")
    exporter = memory.InMemorySpanExporter()
    provider = trace.TracerProvider()
    provider.add_span_processor(export.SimpleSpanProcessor(exporter))
    tracing = ts.tracing.OpenTelemetry(tracer_provider=provider, capture_content=True)
    with FaultServer(Reply.json({"error": {"message": "no"}}, status=400)) as server:
        url = server.url.replace("http://", f"http://admin:{PASSWORD}@")
        lm = ts.LM("m", base_url=url, api_key=KEY, max_retries=0, profile="generic")
        with ts.context(lm=lm, callbacks=[tracing]), pytest.raises(ts.LMError):
            ts.Predict(Answer)(question="q")
        lm.close()
    spans = exporter.get_finished_spans()
    assert spans
    text = "\n".join(span.to_json() for span in spans)
    assert "127.0.0.1" in text
    assert PASSWORD not in text and KEY not in text


def authorization(seen: Seen) -> str:
    """The ``Authorization`` header the server saw, a basic one decoded."""
    value = seen.headers.get("authorization", "")
    return f"Basic {basic_credentials(seen)}" if value.startswith("Basic ") else value


@pytest.mark.parametrize(
    ("userinfo", "api_key", "expected"),
    [
        ("", KEY, f"Bearer {KEY}"),
        ("ad%3Amin:p%40ss%3Aword@", KEY, "Basic ad:min:p@ss:word"),  # basic replaces the key
        ("admin:p@ss@", None, "Basic admin:p@ss"),  # a raw @ in the password: the last one ends it
        ("admin:@", KEY, "Basic admin:"),
        ("admin@", KEY, "Basic admin:"),
        (":@", KEY, f"Bearer {KEY}"),  # no user, no password: no basic auth, the key goes
        ("@", KEY, f"Bearer {KEY}"),
    ],
)
def test_the_authorization_header_a_base_url_sends(
    userinfo: str, api_key: str | None, expected: str
) -> None:
    # Was: an empty userinfo (`http://:@host`, as `http://${USER}:${PASS}@host` with neither
    # set gives) was sent as `Basic Og==` in place of the API key (401); the HTTP library sends
    # basic auth only when there is a user or a password, and so does LM now.
    with FaultServer(Reply.completion('{"answer": "4"}')) as server:
        url = server.url.replace("http://", f"http://{userinfo}")
        lm = ts.LM("m", base_url=url, api_key=api_key, max_retries=0, profile="generic")
        with ts.context(lm=lm):
            assert ts.Predict(Answer)(question="q").answer == "4"
        lm.close()
    assert [authorization(seen) for seen in server.requests] == [expected]
    assert lm.endpoint == server.url  # the URL requests went to: no userinfo, no `@`


@pytest.mark.parametrize("userinfo", ["tok-0123456789SECRET@", ":pw123@", "u:pw1@", "u:p@ss1@"])
def test_a_base_url_userinfo_of_any_shape_is_shown_redacted(
    userinfo: str, caplog: pytest.LogCaptureFixture
) -> None:
    # Was: only `user:password@` with a user and a password of 6 characters or more was
    # redacted: a token given as the user name (`https://TOKEN@host`, sent as basic auth), or a
    # short password with no user, was shown in repr(lm), in errors and in the log.
    secret = userinfo.removesuffix("@").rpartition(":")[2] or userinfo.removesuffix("@")
    failing = Reply.json({"error": {"message": "down"}}, status=500)
    with FaultServer(failing) as server:
        url = server.url.replace("http://", f"http://{userinfo}")
        lm = ts.LM("m", base_url=url, api_key=KEY, max_retries=0)  # identified: a log line
        with caplog.at_level(logging.DEBUG), ts.context(lm=lm), pytest.raises(ts.LMError) as caught:
            ts.Predict(Answer)(question="q")
        lm.close()
    shown = everything_shown(caught.value) + repr(lm) + logged(caplog.records)
    assert f"[redacted]@127.0.0.1:{server.port}" in repr(lm)
    assert secret not in shown
