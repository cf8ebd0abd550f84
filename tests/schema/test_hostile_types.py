"""Output types at the edges of OpenAI's strict subset, sent to the stand-in (which checks
requests as api.openai.com does) and read back: each is sent and validates, or is refused by
name before anything is sent."""

from __future__ import annotations

import datetime
import enum
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, Field, create_model

import typedspy as ts
from typedspy.testing import StandIn


class Mixed(enum.Enum):
    ONE = 1
    A = "a"


def _call(output: object, profile: str) -> tuple[object, list[dict[str, Any]]]:
    sig = ts.make_signature("q -> a: T", types={"T": output})
    with StandIn() as server:
        lm = ts.LM("standin-1", base_url=server.base_url, api_key="sk-x", profile=profile)
        try:
            outcome = ts.Predict(sig, lm=lm, mode="json_schema", max_retries=0).try_call(q="x")
        finally:
            lm.close()
        return outcome, server.requests


@pytest.mark.parametrize(
    "output",
    [Literal[1, "a", True, None], Literal[1, "a"], Literal[1.5, 2], Literal[True, 1], Mixed],
    ids=["int-str-bool-null", "int-str", "float-int", "bool-int", "enum-int-str"],
)
def test_values_of_mixed_json_types_are_sent_and_read_back(output: object) -> None:
    # Pydantic gives such an enum no "type", which strict mode requires: typed per value.
    outcome, requests = _call(output, "openai")
    assert isinstance(outcome, ts.Prediction), outcome
    assert len(requests) == 1


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


@pytest.mark.parametrize(
    "output",
    [
        dict[Color, int],
        dict[Level, str],
        dict[Mixed, int],
        dict[Annotated[str, Field(pattern=r"^[a-z]+$")], int],
    ],
    ids=["enum-key", "int-enum-key", "mixed-enum-key", "pattern-key"],
)
def test_dicts_with_constrained_keys_are_sent_as_pairs_and_read_back(output: object) -> None:
    # On main: "field a constrains a reference: ['type']", or "an open object" for a typed dict.
    outcome, requests = _call(output, "openai")
    assert isinstance(outcome, ts.Prediction), outcome
    pairs = requests[0]["response_format"]["json_schema"]["schema"]["properties"]["a"]
    assert pairs["type"] == "array"
    assert isinstance(outcome.a, dict) and outcome.a


@pytest.mark.parametrize("profile", ["openai", "vllm"])
def test_integer_keys_are_asked_for_as_integer_text_and_read_back_as_integers(
    profile: str,
) -> None:
    # On main the strict target's pairs asked for any string key; the stand-in (schema-valid,
    # as a model under a grammar) wrote "example-2", which no int reads, and the call failed.
    outcome, requests = _call(dict[int, str], profile)
    assert isinstance(outcome, ts.Prediction), outcome
    assert all(type(k) is int for k in outcome.a)
    assert outcome.a or profile == "vllm"  # the stand-in fills an open object with no keys
    sent = requests[0]["response_format"]["json_schema"]["schema"]["properties"]["a"]
    keys = sent["items"]["properties"]["key"] if profile == "openai" else sent["propertyNames"]
    assert keys == {"type": "string", "pattern": "^-?[0-9]+$"}
    parsed = ts.parse.parse_outputs(
        ts.make_signature("q -> a: dict[int, str]"), '{"a": {"7": "x"}}'
    )
    assert parsed.value == {"a": {7: "x"}}


class Reading(BaseModel):
    value: float = Field(lt=float("nan"))


@pytest.mark.parametrize(
    ("output", "field"),
    [
        (Annotated[float, Field(ge=float("nan"))], "field a: minimum is nan"),
        (Annotated[float, Field(le=float("nan"))], "field a: maximum is nan"),
        (list[Annotated[float, Field(gt=float("nan"))]], "field a: exclusiveMinimum is nan"),
        (Reading, "field Reading.value: exclusiveMaximum is nan"),
    ],
    ids=["ge", "le", "list-item-gt", "model-field-lt"],
)
def test_a_nan_bound_is_refused_naming_the_field_before_anything_is_sent(
    output: object, field: str
) -> None:
    # On main: the schema went to the openai client, whose json.dumps raised a bare ValueError.
    sig = ts.make_signature("q -> a: T", types={"T": output})
    with StandIn() as server:
        lm = ts.LM("standin-1", base_url=server.base_url, api_key="sk-x", profile="vllm")
        try:
            with pytest.raises(ts.SchemaError, match=field):
                ts.Predict(sig, lm=lm)
        finally:
            lm.close()
        assert server.requests == []


class WithNanDefault(ts.Signature):
    q: str = ts.InputField()
    a: float = ts.OutputField(default=float("nan"))


def test_a_nan_default_is_restated_in_the_description() -> None:
    # On main, under a json-schema profile: `"default": NaN` made the request a bare ValueError
    # (the strict target restated every default already: both now say the same).
    with StandIn() as server:
        lm = ts.LM("standin-1", base_url=server.base_url, api_key="sk-x", profile="vllm")
        try:
            outcome = ts.Predict(WithNanDefault, lm=lm, mode="json_schema").try_call(q="x")
        finally:
            lm.close()
        sent = server.requests[0]["response_format"]["json_schema"]["schema"]
    assert isinstance(outcome, ts.Prediction), outcome
    assert sent["properties"]["a"]["description"] == "Default: NaN"


def _nested(levels: int) -> Any:
    model: Any = create_model("Level0", value=(int, ...))
    for i in range(1, levels):
        model = create_model(f"Level{i}", inner=(model, ...))
    return model


OVER_LIMITS = {
    "nesting": (_nested(11), "levels of nesting exceeds limit of 10. (field Level0.value)"),
    "properties": (
        create_model("Wide", **{f"p{i}": (int, ...) for i in range(5001)}),  # type: ignore[call-overload]
        "5002 parameters exceeds limit of 5000. (the output)",
    ),
    "enum values": (
        Literal[tuple(f"v{i}" for i in range(1001))],
        "received 1001. Consider reducing the number of enums",
    ),
}


@pytest.mark.parametrize("case", sorted(OVER_LIMITS))
def test_a_schema_over_a_limit_names_the_limit_and_the_way_to_send_it(case: str) -> None:
    # On main the message named no field and no typedspy way round (only OpenAI's own words).
    output, said = OVER_LIMITS[case]
    sig = ts.make_signature("q -> a: T", types={"T": output})
    with StandIn() as server:
        strict = ts.LM("standin-1", base_url=server.base_url, api_key="sk-x", profile="openai")
        loose = ts.LM(
            "standin-1",
            base_url=server.base_url,
            api_key="sk-x",
            profile=ts.Profile.named("openai").derive(target="json-schema"),
        )
        try:
            with pytest.raises(ts.SchemaError) as refused:
                ts.Predict(sig, lm=strict)(q="x")
            assert server.requests == []
            outcome = ts.Predict(sig, lm=loose, max_retries=0).try_call(q="x")
        finally:
            strict.close()
            loose.close()
        sent = server.requests[0]["response_format"]["json_schema"]
    assert said in str(refused.value)
    assert "profile=ts.Profile.named('openai').derive(target='json-schema')" in str(refused.value)
    assert isinstance(outcome, ts.Prediction), outcome
    assert sent["strict"] is False


@pytest.mark.parametrize(
    "output",
    [datetime.datetime, datetime.datetime | None, list[datetime.datetime]],
    ids=["datetime", "optional", "list"],
)
def test_the_standin_answers_a_date_time_under_the_json_schema_target(output: object) -> None:
    # The target sends date-times as a pattern (engines do not enforce `format`); on main the
    # stand-in's data met no such pattern: HTTP 500 "typedspy stand-in bug".
    outcome, _ = _call(output, "vllm")
    assert isinstance(outcome, ts.Prediction), outcome
