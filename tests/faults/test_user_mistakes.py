"""Issue 21 (left from issue 10's audit): user mistakes that raised untyped errors.

Each mistake is refused where it is made, when the class statement runs or the object is built,
with a `ts.TypedspyError` subclass that names what is wrong (the field, the parameter, the
value); before, each one raised a bare Pydantic, ``TypeError`` or ``AttributeError``, some only
at the first call.
"""

from __future__ import annotations

import math
import typing
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import BaseModel
from pydantic_core import core_schema

import typedspy as ts


class Plain:
    """A class Pydantic has no validator for."""


def callable_output() -> object:
    class Apply(ts.Signature):
        """Apply."""

        question: str = ts.InputField()
        function: Callable[[int], int] = ts.OutputField()

    return Apply


def callable_inside_an_output_model() -> object:
    class Step(BaseModel):
        name: str
        run: Callable[[], None]

    class Plan(ts.Signature):
        """Plan."""

        question: str = ts.InputField()
        steps: list[Step] = ts.OutputField()

    return Plan


def bare_callable_output() -> object:
    return ts.make_signature("question -> function: F", types={"F": typing.Callable}, name="Apply")


def type_output() -> object:
    class Pick(ts.Signature):
        """Pick."""

        question: str = ts.InputField()
        kind: type[int] = ts.OutputField()

    return Pick


def unresolved_forward_reference() -> object:
    class Answer(ts.Signature):
        """Answer."""

        question: str = ts.InputField()
        answer: list[Undefined] = ts.OutputField()  # type: ignore[name-defined]  # noqa: F821

    return Answer


def forward_reference_inside_a_model() -> object:
    class Item(BaseModel):
        detail: Undefined  # type: ignore[name-defined]  # noqa: F821

    class Answer(ts.Signature):
        """Answer."""

        question: str = ts.InputField()
        item: Item = ts.OutputField()

    return Answer


def signature_field_named_type() -> object:
    class Classify(ts.Signature):
        """Classify."""

        text: str = ts.InputField()
        _type: str = ts.OutputField()

    return Classify


def union_member_declaring_type() -> object:
    class Cat(BaseModel):
        _type: str = "cat"
        name: str

    class Dog(BaseModel):
        name: str

    class Adopt(ts.Signature):
        """Adopt."""

        request: str = ts.InputField()
        pet: Cat | Dog = ts.OutputField()

    return Adopt


def arbitrary_class_field() -> object:
    class Make(ts.Signature):
        """Make."""

        question: str = ts.InputField()
        thing: Plain = ts.OutputField()

    return Make


SCHEMA_MISTAKES: dict[str, tuple[Callable[[], object], tuple[str, ...], tuple[str, ...]]] = {
    # name: (mistake, error path, words the message holds)
    "callable_output": (callable_output, ("function",), ("Apply.function", "Callable")),
    "callable_inside_an_output_model": (
        callable_inside_an_output_model,
        ("steps", "run"),
        ("Plan.steps.run", "Callable"),
    ),
    "bare_callable_output": (bare_callable_output, ("function",), ("Apply.function", "Callable")),
    "type_output": (type_output, ("kind",), ("Pick.kind", "type[...]")),
    "unresolved_forward_reference": (
        unresolved_forward_reference,
        ("answer",),
        ("Answer.answer", "'Undefined'", "not defined"),
    ),
    "forward_reference_inside_a_model": (
        forward_reference_inside_a_model,
        ("item",),
        ("Answer.item", "'Undefined'"),
    ),
    "signature_field_named_type": (
        signature_field_named_type,
        ("_type",),
        ("Classify._type", "cannot start with '_'", "tag"),
    ),
    "union_member_declaring_type": (
        union_member_declaring_type,
        ("Cat", "_type"),
        ("Cat._type", "'_type'", "union"),
    ),
    "arbitrary_class_field": (arbitrary_class_field, ("thing",), ("Make.thing", "Plain")),
}


@pytest.mark.parametrize("name", sorted(SCHEMA_MISTAKES))
def test_a_signature_mistake_is_a_schema_error_at_class_definition(name: str) -> None:
    mistake, path, words = SCHEMA_MISTAKES[name]
    with pytest.raises(ts.SchemaError) as caught:
        mistake()
    assert caught.value.path[-len(path) :] == path
    for word in words:
        assert word in str(caught.value)


@pytest.mark.parametrize(
    "field", ["instructions", "input_fields", "output_fields", "input_model", "with_instructions"]
)
@pytest.mark.parametrize("role", ["input", "output"])
def test_a_field_named_as_the_signature_s_own_attribute_is_a_schema_error(
    field: str, role: str
) -> None:
    # It raised "S is the Signature base class, not a signature" (or, for with_instructions,
    # a Pydantic warning, then a class whose method the field shadowed).
    text = f"{field} -> answer" if role == "input" else f"question -> {field}"
    with pytest.raises(ts.SchemaError, match=rf"\.{field}: the name '{field}' is the signature's"):
        ts.make_signature(text)
    marker = ts.InputField() if role == "input" else ts.OutputField()
    namespace = {"__annotations__": {field: str, "other": str}, field: marker}
    namespace["other"] = ts.OutputField() if role == "input" else ts.InputField()
    with pytest.raises(ts.SchemaError) as caught:
        type("Own", (ts.Signature,), {"__doc__": "Own.", **namespace})
    assert caught.value.path == (field,)


@pytest.mark.parametrize(
    ("annotation", "constraint", "cause"),
    [
        (str, {"pattern": "(\\d+"}, "unclosed group"),
        (str, {"max_length": 10**30}, "int too big"),
        (int, {"le": math.inf}, "'le' must be coercible to an integer"),
    ],
)
@pytest.mark.parametrize("role", ["input", "output"])
def test_a_constraint_pydantic_cannot_build_is_a_schema_error_naming_the_field(
    annotation: type, constraint: dict[str, Any], cause: str, role: str
) -> None:
    # It raised pydantic_core's SchemaError, outside the ts.TypedspyError tree.
    marker = ts.InputField(**constraint) if role == "input" else ts.OutputField(**constraint)
    other = ts.OutputField() if role == "input" else ts.InputField()
    namespace = {"__annotations__": {"field": annotation, "other": str}, "field": marker}
    with pytest.raises(ts.SchemaError, match=r"Bad\.field: its type or constraints") as caught:
        type("Bad", (ts.Signature,), {"__doc__": "Bad.", **namespace, "other": other})
    assert caught.value.path == ("field",)
    assert cause in str(caught.value)


@pytest.mark.parametrize("role", ["input", "output"])
def test_a_field_without_a_type_annotation_is_a_schema_error_naming_it(role: str) -> None:
    # Pydantic's own PydanticUserError escaped, outside the ts.TypedspyError tree.
    marker = ts.InputField() if role == "input" else ts.OutputField()
    other = ts.OutputField() if role == "input" else ts.InputField()
    namespace = {"__annotations__": {"other": str}, "field": marker, "other": other}
    with pytest.raises(ts.SchemaError, match=r"Bad\.field: .*requires a type annotation") as caught:
        type("Bad", (ts.Signature,), {"__doc__": "Bad.", **namespace})
    assert caught.value.path == ("field",)


class Handle:
    """A type Pydantic validates (by ``isinstance``) but has no JSON schema for."""

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> core_schema.CoreSchema:
        return core_schema.is_instance_schema(cls)


def test_an_output_with_no_json_schema_is_a_schema_error_when_the_module_is_built() -> None:
    class Open(ts.Signature):
        """Open."""

        path: str = ts.InputField()
        title: str = ts.OutputField()
        handle: Handle = ts.OutputField()

    with pytest.raises(ts.SchemaError) as caught:
        ts.Predict(Open)
    assert caught.value.path == ("handle",)
    assert "Open.handle: no JSON schema" in str(caught.value)


OPTION_MISTAKES: dict[str, tuple[Callable[[], object], str]] = {
    # name: (mistake, words the message holds)
    "predict_max_retries_str": (
        lambda: ts.Predict("question -> answer", max_retries="2"),  # type: ignore[call-overload]
        "Predict(max_retries='2')",
    ),
    "predict_token_budget_str": (
        lambda: ts.Predict("question -> answer", token_budget="x"),  # type: ignore[call-overload]
        "Predict(token_budget='x')",
    ),
    "predict_lm_name": (
        lambda: ts.Predict("question -> answer", lm="gpt-4o-mini"),  # type: ignore[call-overload]
        "Predict(lm='gpt-4o-mini')",
    ),
    "chain_of_thought_max_retries_str": (
        lambda: ts.ChainOfThought("question -> answer", max_retries="2"),  # type: ignore[call-overload]
        "ChainOfThought(max_retries='2')",
    ),
    "react_lm_name": (
        lambda: ts.ReAct("question -> answer", lm="gpt-4o-mini"),  # type: ignore[arg-type]
        "ReAct(lm='gpt-4o-mini')",
    ),
    "lm_client_not_a_client_with_api_key": (
        lambda: ts.LM("m", client=object(), api_key="sk-x"),  # type: ignore[arg-type]
        "client= takes an openai.AsyncOpenAI",
    ),
    "lm_max_retries_str": (
        lambda: ts.LM("m", max_retries="2"),  # type: ignore[arg-type]
        "LM(max_retries='2')",
    ),
    "lm_timeout_str": (
        lambda: ts.LM("m", timeout="30"),  # type: ignore[arg-type]
        "LM(timeout='30')",
    ),
    "lm_timeout_negative": (lambda: ts.LM("m", timeout=-1), "LM(timeout=-1)"),
    # Infinite: the blocking client's first request raised a bare OverflowError (None is "no
    # timeout"); a NaN cost made every budget comparison raise mid-call.
    "lm_timeout_infinite": (lambda: ts.LM("m", timeout=math.inf), "LM(timeout=inf)"),
    "rate_limit_infinite_pause": (
        lambda: ts.limits.RateLimit(requests_per_minute=60, max_pause=math.inf),
        "RateLimit(max_pause=inf)",
    ),
    "budget_cost_nan": (lambda: ts.limits.Budget(cost=math.nan), "Budget(cost=nan)"),
    "budget_cost_infinite": (lambda: ts.limits.Budget(cost=math.inf), "Budget(cost=inf)"),
    "settings_retry_wait_nan": (lambda: ts.configure(retry_wait=math.nan), "retry_wait=nan"),
    # A NaN failure score or threshold was taken: the report's score NaN, no demo ever passing.
    "evaluate_failure_score_nan": (
        lambda: ts.evaluate(
            ts.Predict("q -> a"), [ts.Example(q="x", a="y")], failure_score=math.nan
        ),
        "evaluate(failure_score=nan)",
    ),
    "evaluate_failure_score_str": (
        lambda: ts.evaluate(ts.Predict("q -> a"), [ts.Example(q="x", a="y")], failure_score="0"),  # type: ignore[arg-type]
        "evaluate(failure_score='0')",
    ),
    "bootstrap_threshold_nan": (
        lambda: ts.optimize.BootstrapFewShot(metric_threshold=math.nan),
        "BootstrapFewShot(metric_threshold=nan)",
    ),
    "bootstrap_demos_str": (
        lambda: ts.optimize.BootstrapFewShot(max_bootstrapped_demos="4"),  # type: ignore[arg-type]
        "BootstrapFewShot(max_bootstrapped_demos='4')",
    ),
    # A concurrency of 1.5 or "2" was a TypeError mid-compile (a slice, a comparison).
    "bootstrap_concurrency_float": (
        lambda: ts.optimize.BootstrapFewShot(concurrency=1.5),  # type: ignore[arg-type]
        "BootstrapFewShot(concurrency=1.5)",
    ),
    "random_search_concurrency_str": (
        lambda: ts.optimize.BootstrapFewShotWithRandomSearch(concurrency="2"),  # type: ignore[arg-type]
        "BootstrapFewShotWithRandomSearch(concurrency='2')",
    ),
    # A text perfect_score was a TypeError in gepa's thread, a NaN one silently never reached;
    # an unknown candidate_selection was gepa's bare ValueError at compile.
    "gepa_perfect_score_str": (
        lambda: ts.optimize.GEPA(perfect_score="1"),  # type: ignore[arg-type]
        "GEPA(perfect_score='1')",
    ),
    "gepa_perfect_score_nan": (
        lambda: ts.optimize.GEPA(perfect_score=math.nan),
        "GEPA(perfect_score=nan)",
    ),
    "gepa_candidate_selection_unknown": (
        lambda: ts.optimize.GEPA(candidate_selection="best"),  # type: ignore[arg-type]
        "GEPA(candidate_selection='best')",
    ),
    "gepa_concurrency_zero": (
        lambda: ts.optimize.GEPA(concurrency=0),
        "GEPA(concurrency=0)",
    ),
    "random_search_threshold_nan": (
        lambda: ts.optimize.BootstrapFewShotWithRandomSearch(metric_threshold=math.nan),
        "BootstrapFewShotWithRandomSearch(metric_threshold=nan)",
    ),
    "random_search_candidates_str": (
        lambda: ts.optimize.BootstrapFewShotWithRandomSearch(num_candidate_programs="8"),  # type: ignore[arg-type]
        "BootstrapFewShotWithRandomSearch(num_candidate_programs='8')",
    ),
    "labeled_k_str": (
        lambda: ts.optimize.LabeledFewShot(k="2"),  # type: ignore[arg-type]
        "LabeledFewShot(k='2')",
    ),
    "memory_cache_entries_nan": (
        lambda: ts.cache.MemoryCache(max_entries=math.nan),  # type: ignore[arg-type]
        "MemoryCache(max_entries=nan)",
    ),
    "memory_cache_bytes_str": (
        lambda: ts.cache.MemoryCache(max_bytes="1"),  # type: ignore[arg-type]
        "MemoryCache(max_bytes='1')",
    ),
    # JSON has no NaN: the SDK raised a bare ValueError when it sent the request.
    "predict_temperature_nan": (
        lambda: ts.Predict("question -> answer", temperature=math.nan),
        "temperature=nan cannot be sent",
    ),
    "lm_extra_body_infinite": (
        lambda: ts.LM("m", extra_body={"options": {"top_k": [1, math.inf]}}),
        "extra_body.options.top_k[1]=inf cannot be sent",
    ),
    "lm_model_not_a_str": (
        lambda: ts.LM(3),  # type: ignore[arg-type]
        "LM(model=3): expected a model name",
    ),
    "knn_k_nan": (
        lambda: ts.optimize.KNNFewShot(k=math.nan),  # type: ignore[arg-type]
        "KNNFewShot(k=nan)",
    ),
    "load_dataset_signature_str": (
        lambda: ts.evaluation.load_dataset([{"q": "x"}], "q -> a"),  # type: ignore[arg-type]
        "not a Signature subclass",
    ),
    "memory_cache_ttl_str": (
        lambda: ts.cache.MemoryCache(ttl="60"),  # type: ignore[arg-type]
        "MemoryCache(ttl='60')",
    ),
    "rate_limit_str": (
        lambda: ts.limits.RateLimit(requests_per_minute="60"),  # type: ignore[arg-type]
        "RateLimit(requests_per_minute='60')",
    ),
    "batch_timeout_str": (
        lambda: ts.Predict("question -> answer").batch([], timeout="5"),
        "batch(timeout='5')",
    ),
    "batch_max_errors_str": (
        lambda: ts.Predict("question -> answer").batch([], max_errors="3"),
        "batch(max_errors='3')",
    ),
}


@pytest.mark.parametrize("name", sorted(OPTION_MISTAKES))
def test_an_option_of_the_wrong_type_is_a_configuration_error_at_construction(name: str) -> None:
    mistake, words = OPTION_MISTAKES[name]
    with pytest.raises(ts.ConfigurationError) as caught:
        mistake()
    assert words in str(caught.value)


def test_the_lm_client_check_says_what_to_pass_for_a_blocking_client() -> None:
    import openai

    blocking = openai.OpenAI(api_key="sk-x", base_url="http://127.0.0.1:9/v1")
    try:
        with pytest.raises(ts.ConfigurationError, match="blocking OpenAI client"):
            ts.LM("m", client=blocking)  # type: ignore[arg-type]
    finally:
        blocking.close()


def test_what_the_checks_accept_still_builds() -> None:
    import httpx

    ts.LM("m", timeout=httpx.Timeout(5.0), max_retries=0)
    ts.LM("m", timeout=2.5, max_response_bytes=1024, max_json_depth=8)
    ts.Predict("question -> answer", max_retries=0, token_budget=100)
    ts.limits.RateLimit(requests_per_minute=0.5)
