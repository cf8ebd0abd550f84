"""The `llama-cpp-python` profile against a route that answers as its server does (respx).

llama-cpp-python's server (``python -m llama_cpp.server``) takes ``response_format.type``
``text`` or ``json_object`` only (with an optional ``schema``) and answers 500 to any other
type (its error handler wraps the failed request validation); a ``tool_choice`` naming a
function constrains and returns that function's call. Facts: ``_builtin.py`` and ADR-088.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest
import respx

import typedspy as ts
from typedspy.testing import chat_completion, error_body
from wire import BASE_URL, make_lm, sent


class Rate(ts.Signature):
    """Rate the ticket."""

    ticket: str = ts.InputField()
    score: int = ts.OutputField(ge=1, le=5)


RATED = json.dumps({"score": 4})
# What its error handler sent for a json_schema request (llama-cpp-python 0.3.36, one real run:
# llama_cpp/server/errors.py wraps the FastAPI validation error as an internal_server_error).
REFUSED = error_body(
    "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', "
    "'type'), 'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema', "
    "'ctx': {'expected': \"'text' or 'json_object'\"}}\n\n  File \"llama_cpp/server/app.py\", "
    "line 376, in create_chat_completion\n    POST /v1/chat/completions",
    type="internal_server_error",
)


def _llama_cpp_python(request: httpx.Request) -> httpx.Response:
    body = json.loads(request.content)
    if body.get("response_format", {}).get("type", "text") not in ("text", "json_object"):
        return httpx.Response(500, json=REFUSED)
    choice = body.get("tool_choice")
    if isinstance(choice, dict):
        call = {"name": choice["function"]["name"], "arguments": RATED}
        return httpx.Response(200, json=chat_completion(tool_calls=[call]))
    return httpx.Response(200, json=chat_completion(RATED))


@pytest.fixture
def route() -> Iterator[respx.Route]:
    with respx.mock(base_url=BASE_URL) as router:
        yield router.post("/chat/completions").mock(side_effect=_llama_cpp_python)


def test_auto_sends_json_object_with_the_schema_and_never_json_schema(route: respx.Route) -> None:
    lm = make_lm(profile="llama-cpp-python")

    pred = ts.Predict(Rate, lm=lm)(ticket="The printer jams")

    assert pred.score == 4
    (body,) = sent(route)
    schema = ts.schema.compile_schema(Rate, "json-schema").schema
    assert body["response_format"] == {"type": "json_object", "schema": schema}
    assert body["max_tokens"] == 512
    assert '"score"' in body["messages"][0]["content"]  # the server shows no schema: hinted


def test_tools_mode_names_the_function_the_server_constrains(route: respx.Route) -> None:
    lm = make_lm(profile="llama-cpp-python")

    pred = ts.Predict(Rate, lm=lm, mode="tools")(ticket="The printer jams")

    assert pred.score == 4
    (body,) = sent(route)
    assert body["tool_choice"] == {"type": "function", "function": {"name": "Rate"}}
    assert "response_format" not in body


def test_under_generic_auto_steps_down_from_the_refused_json_schema(route: respx.Route) -> None:
    # An unknown server gets `generic`; the 500 names the refused type, so auto steps down
    # once to json_object and remembers it (it was a plain LMStatusError, every call).
    lm = make_lm(profile="generic")

    first = ts.Predict(Rate, lm=lm)(ticket="x")
    second = ts.Predict(Rate, lm=lm)(ticket="y")

    assert (first.score, second.score) == (4, 4)
    formats = [b.get("response_format", {}).get("type") for b in sent(route)]
    assert formats == ["json_schema", "json_object", "json_object"]
    assert lm.profile.rejected == {"json_schema"}
