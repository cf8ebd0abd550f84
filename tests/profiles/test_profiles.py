"""Endpoint profiles: chosen per LM, and what each one puts on the wire (respx, real client)."""

from __future__ import annotations

import json
import pickle
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import respx

import typedspy as ts
from typedspy.profiles import Mode
from typedspy.testing import chat_completion, error_body
from wire import BASE_URL, make_lm, sent


class Summarise(ts.Signature):
    """Summarise the ticket."""

    ticket: str = ts.InputField()
    summary: str = ts.OutputField(description="one sentence")
    tags: dict[str, Any] = ts.OutputField()


class Rate(ts.Signature):
    """Rate the ticket."""

    ticket: str = ts.InputField()
    score: int = ts.OutputField(ge=1, le=5)


RATED = json.dumps({"score": 4})
SUMMARY = json.dumps({"summary": "Printer jams.", "tags": {"team": "it", "urgent": True}})


def ok(content: str) -> httpx.Response:
    return httpx.Response(200, json=chat_completion(content))


@pytest.fixture
def llm() -> Iterator[respx.MockRouter]:
    with respx.mock(base_url=BASE_URL, assert_all_called=False) as router:
        yield router


@pytest.mark.parametrize(
    ("base_url", "name"),
    [
        (None, "openai"),
        ("https://api.openai.com/v1", "openai"),
        ("https://my-team.openai.azure.com/openai/deployments/x", "azure"),
        ("http://127.0.0.1:8080/v1", "generic"),  # a port says nothing: the server is asked
    ],
)
def test_the_default_profile_comes_from_the_base_url_where_reliable(
    base_url: str | None, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert ts.LM("m", base_url=base_url, api_key="k").profile.name == name


def test_each_lm_owns_its_profile_and_memory() -> None:
    mine = ts.Profile.named("vllm").derive(name="my-vllm", max_tokens=64)
    first = ts.LM("m", base_url="http://127.0.0.1:1/v1", api_key="k", profile=mine)
    second = ts.LM("m", base_url="http://127.0.0.1:1/v1", api_key="k", profile=mine)
    first.profile.reject("json_schema")

    assert first.profile.name == "my-vllm" and first.profile.max_tokens == 64
    assert first.profile.auto_mode() == "json_object"
    assert second.profile.auto_mode() == "json_schema"
    assert mine.rejected == frozenset()


def test_unknown_profiles_are_configuration_errors() -> None:
    with pytest.raises(ts.ConfigurationError, match=r"unknown profile 'llamacpp'.*'llama.cpp'"):
        ts.LM("m", api_key="k", profile="llamacpp")
    with pytest.raises(ts.ConfigurationError, match="not int"):
        ts.LM("m", api_key="k", profile=3)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"maxtokens": 100}, "no attribute 'maxtokens'"),
        ({"modes": ("json_schem",)}, "modes: ['json_schem'] are not modes"),
        ({"target": "openai"}, "target='openai'"),
        ({"max_tokens": 0}, "max_tokens=0"),
        # On main: taken, and sent past what a server reads (a JSON int beyond int64).
        ({"max_tokens": 10**30}, f"max_tokens={10**30}: a positive int up to 2_147_483_647"),
        ({"max_tokens": 2**31}, f"max_tokens={2**31}: a positive int up to 2_147_483_647"),
        ({"media": frozenset({"video"})}, "media: ['video']"),
        ({"reasoning_tags": ("<think>",)}, "reasoning_tags="),
        # On main: a str was read letter by letter, None a bare TypeError, and the rest taken
        # as given (a truthy "no" meant yes; a str remedy failed only at the first loop).
        ({"modes": "json_schema"}, "modes='json_schema': a tuple of modes"),
        ({"modes": ()}, "modes=(): a tuple of modes"),
        ({"media": "image"}, "media='image': a set of media kinds"),
        ({"media": None}, "media=None: a set of media kinds"),
        ({"schema_hint": "no"}, "schema_hint='no': True or False"),
        ({"dependable_tool_calling": 1}, "dependable_tool_calling=1: True or False"),
        ({"parallel_tool_calls": "yes"}, "parallel_tool_calls='yes': True, False, or None"),
        ({"on_whitespace_loop": "compact"}, "on_whitespace_loop='compact': a ts.profiles."),
        ({"on_repeated_reply": {"temperature": 1}}, "on_repeated_reply={'temperature': 1}: a"),
        ({"name": None}, "name=None: a non-empty str"),
    ],
)
def test_a_profile_that_cannot_work_is_refused_naming_the_attribute(
    change: dict[str, Any], named: str
) -> None:
    with pytest.raises(ts.ConfigurationError) as caught:
        ts.Profile.named("vllm").derive(**change)
    assert named in str(caught.value)


def test_a_new_profile_is_checked_alike() -> None:
    with pytest.raises(ts.ConfigurationError, match="max_tokens=-1"):
        ts.Profile(name="mine", max_tokens=-1)


def test_openai_sends_the_strict_schema_and_no_prose_repeating_it(llm: respx.MockRouter) -> None:
    route = llm.post("/chat/completions").mock(return_value=ok(RATED))

    ts.Predict(Rate, lm=make_lm())(ticket="Printer jams")

    (body,) = sent(route)
    assert (
        body["response_format"] == ts.schema.compile_schema(Rate, "openai-strict").response_format
    )
    assert body["messages"][0] == {"role": "system", "content": "Rate the ticket."}
    assert "max_tokens" not in body


def test_llama_cpp_sends_json_schema_with_a_hint_and_a_token_cap(llm: respx.MockRouter) -> None:
    route = llm.post("/chat/completions").mock(return_value=ok(SUMMARY))

    pred = ts.Predict(Summarise, lm=make_lm(profile="llama.cpp"))(ticket="Printer jams")

    (body,) = sent(route)
    schema = body["response_format"]["json_schema"]["schema"]
    assert schema == ts.schema.compile_schema(Summarise, "json-schema").schema
    assert schema["properties"]["tags"]["additionalProperties"] is True  # dict[str, Any] goes
    assert body["response_format"]["json_schema"]["strict"] is False
    assert body["max_tokens"] == 512
    system = body["messages"][0]["content"]
    assert "Reply with one JSON object of this shape" in system
    assert '"summary": string,  // one sentence' in system
    assert pred.tags == {"team": "it", "urgent": True}


def test_llama_cpp_json_object_mode_carries_the_schema(llm: respx.MockRouter) -> None:
    route = llm.post("/chat/completions").mock(return_value=ok(RATED))

    ts.Predict(Rate, lm=make_lm(profile="llama.cpp"), mode="json_object")(ticket="x")

    (body,) = sent(route)
    assert body["response_format"] == {
        "type": "json_object",
        "schema": ts.schema.compile_schema(Rate, "json-schema").schema,
    }


def test_an_explicit_max_tokens_wins_over_the_profile_cap(llm: respx.MockRouter) -> None:
    route = llm.post("/chat/completions").mock(return_value=ok(RATED))

    ts.Predict(Rate, lm=make_lm(profile="ollama"), max_tokens=40)(ticket="x")

    assert sent(route)[0]["max_tokens"] == 40


def test_strict_targets_refuse_open_dicts_only_when_they_are_sent(llm: respx.MockRouter) -> None:
    route = llm.post("/chat/completions").mock(return_value=ok(SUMMARY))
    predict = ts.Predict(Summarise, lm=make_lm())  # defining it is fine

    with pytest.raises(ts.SchemaError):
        predict(ticket="Printer jams")
    assert route.call_count == 0
    pred = ts.Predict(Summarise, lm=make_lm(), mode="json_object")(ticket="Printer jams")
    assert pred.summary == "Printer jams."
    assert sent(route)[0]["response_format"] == {"type": "json_object"}


def test_lmstudio_auto_skips_json_object_it_rejects(llm: respx.MockRouter) -> None:
    rejected = httpx.Response(
        400, json=error_body("response_format json_schema is not supported by this model")
    )
    route = llm.post("/chat/completions").mock(side_effect=[rejected, ok(RATED), ok(RATED)])
    lm = make_lm(profile="lmstudio")

    ts.Predict(Rate, lm=lm)(ticket="x")
    ts.Predict(Rate, lm=lm)(ticket="y")

    formats = [b.get("response_format", {}).get("type") for b in sent(route)]
    assert formats == ["json_schema", None, None]
    assert lm.profile.rejected == {"json_schema"}


def test_a_custom_profile_subclass_decides_the_wire_format(llm: respx.MockRouter) -> None:
    class NamedSchema(ts.Profile):
        def response_format(
            self, mode: Mode, name: str, schema: Any, strict: bool
        ) -> dict[str, Any] | None:
            return {"type": "json_schema", "json_schema": {"name": name, "schema": schema}}

    route = llm.post("/chat/completions").mock(return_value=ok(RATED))
    profile = NamedSchema(name="mine", target="json-schema", schema_hint=False, max_tokens=99)

    ts.Predict(Rate, lm=make_lm(profile=profile))(ticket="x")

    (body,) = sent(route)
    assert body["response_format"]["json_schema"] == {
        "name": "Rate",
        "schema": ts.schema.compile_schema(Rate, "json-schema").schema,
    }
    assert (body["max_tokens"], body["messages"][0]["content"]) == (99, "Rate the ticket.")


def test_a_pickled_lm_keeps_its_profile_and_memory() -> None:
    lm = ts.LM("m", base_url="http://127.0.0.1:1/v1", api_key="k", profile="lmstudio")
    lm.profile.reject("json_schema")

    back = pickle.loads(pickle.dumps(lm))

    assert back.profile.name == "lmstudio"
    assert back.profile.auto_mode() == "prompt"
