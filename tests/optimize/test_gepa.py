"""`ts.optimize.GEPA` end to end on the stand-in: a scripted task model and reflection model.

The task model answers from the request alone: while the schema it is sent does not tell it
to answer in lowercase, it answers "happy" as "HAPPY" (a validation failure) and "sad" as
"calm" (a valid, wrong value); once it does, it answers every text right. The reflection
model rewrites the output field's description to say so. So the only way up is a proposal
that evolves a field description, and every score is decided by the texts, never by wording.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import BaseModel

import typedspy as ts
from typedspy.testing import StandIn

pytest.importorskip("gepa")

MOODS = {
    "What a lovely sunny day": "happy",
    "I won the prize today": "happy",
    "My dog ran away": "sad",
    "The train left without me": "sad",
    "Reading by the quiet lake": "calm",
    "A slow walk in the park": "calm",
    "We all laughed at the party": "happy",
    "I lost my keys again": "sad",
    "Tea on the porch at dusk": "calm",
    "The concert was amazing": "happy",
    "Nobody came to my talk": "sad",
    "Listening to soft rain": "calm",
}
HINT = "Answer in lowercase: happy, sad or calm."


class Mood(ts.Signature):
    """Name the mood of the text."""

    text: str = ts.InputField()
    mood: Literal["happy", "sad", "calm"] = ts.OutputField()


def examples(texts: list[str]) -> list[ts.Example]:
    return [ts.Example(text=t, mood=MOODS[t]).with_inputs("text") for t in texts]


TEXTS = list(MOODS)
TRAIN, DEV = examples(TEXTS[:6]), examples(TEXTS[6:])


def reflection_request(body: dict[str, Any]) -> bool:
    name = body.get("response_format", {}).get("json_schema", {}).get("name", "")
    return str(name).startswith("Improve")


def improved_texts(body: dict[str, Any]) -> str:
    """The reflection model: the current texts, with the hint in the output's description."""
    user = body["messages"][-1]["content"]
    current = json.loads(user.split("<current>\n", 1)[1].split("\n</current>", 1)[0])
    current["outputs"]["mood"] = HINT
    return json.dumps({"improved": current})


def answer(body: dict[str, Any]) -> str:
    if reflection_request(body):
        return improved_texts(body)
    user = body["messages"][1]["content"]  # the inputs (a retry adds feedback turns)
    text = next(t for t in MOODS if t in user)
    right = MOODS[text]
    if "lowercase" in json.dumps(body.get("response_format")):
        return json.dumps({"mood": right})
    return json.dumps({"mood": {"happy": "HAPPY", "sad": "calm"}.get(right, right)})


@contextmanager
def served() -> Iterator[StandIn]:
    with StandIn(answer=answer) as server:
        lm = ts.LM("standin-1", base_url=server.base_url, api_key="sk-standin", max_retries=0)
        try:
            with ts.context(lm=lm, max_retries=1):
                yield server
        finally:
            lm.close()


def quiet(**options: Any) -> ts.optimize.GEPA:
    return ts.optimize.GEPA(verbose=False, **options)


def test_gepa_evolves_a_field_description_from_typed_failures(tmp_path: Path) -> None:
    program = ts.Predict(Mood)
    out = io.StringIO()
    optimizer = ts.optimize.GEPA(max_metric_calls=60, seed=1, minibatch_size=3)
    optimizer.out = out
    with served() as server:
        seed = ts.evaluate(program, DEV).score
        before = len(server.requests)
        compiled = optimizer.compile(program, TRAIN, valset=DEV)
        run = server.requests[before:]
        after = ts.evaluate(compiled, DEV).score
        path = tmp_path / "mood.json"
        compiled.save(path)
        reloaded = ts.Predict(Mood)
        reloaded.load(path)
        again = ts.evaluate(reloaded, DEV).score

    result = optimizer.result
    assert seed < 1.0 and after == again == 1.0
    assert result.seed_score == seed and result.best_score == 1.0
    assert result.proposals >= 1 and result.accepted >= 1
    assert result.stop_reason == "perfect_score"
    assert 1.0 in result.frontier.values()
    assert result.calls == len(run) <= optimizer.plan.max_calls  # type: ignore[union-attr]
    assert result.metric_calls <= optimizer.plan.metric_calls  # type: ignore[union-attr]
    assert result.best_candidate.predictors["self"].outputs["mood"] == HINT
    # The user's signature class is untouched; the compiled program says the new text.
    assert Mood.output_fields["mood"].description is None
    assert compiled.signature.output_fields["mood"].description == HINT  # type: ignore[attr-defined]
    saved = json.loads(path.read_text())["predictors"]["self"]
    assert saved["texts"]["outputs"] == {"mood": HINT}
    assert "metric calls" in out.getvalue() and "proposals" in out.getvalue()


def test_the_reflection_request_carries_the_typed_failures() -> None:
    optimizer = quiet(max_metric_calls=60, seed=1)
    with served() as server:
        optimizer.compile(ts.Predict(Mood), TRAIN, valset=DEV)
    reflections = [b for b in server.requests if reflection_request(b)]
    assert reflections
    user = reflections[0]["messages"][-1]["content"]
    shown = json.loads(user.split("<examples>\n", 1)[1].split("\n</examples>", 1)[0])
    failures = {r["failure"] for r in shown}
    assert failures <= {None, "validation", "mismatch"} and len(failures) > 1
    for record in shown:
        label = record["expected"]["mood"]
        if label == "happy":  # answered "HAPPY": a validation failure at the field's path
            assert record["failure"] == "validation" and record["answer"] is None
            assert record["problems"][0]["path"] == "mood"
            assert "'happy'" in record["problems"][0]["problem"]
        elif label == "sad":  # answered "calm": valid, and wrong against the label
            assert record["failure"] == "mismatch"
            assert record["problems"] == [{"path": "mood", "problem": "expected 'sad', got 'calm'"}]
        else:
            assert record["failure"] is None and record["score"] == 1.0


def test_a_metric_feedback_reaches_the_reflection_model() -> None:
    def metric(example: ts.Example, pred: Any) -> tuple[float, str]:
        ok = pred.mood == example.mood
        return float(ok), "right" if ok else f"the text {example.text!r} is {example.mood}"

    with served() as server:
        optimizer = quiet(metric=metric, max_metric_calls=60, minibatch_size=6)
        optimizer.compile(ts.Predict(Mood), TRAIN, valset=DEV)
    body = next(b for b in server.requests if reflection_request(b))
    user = body["messages"][-1]["content"]
    shown = json.loads(user.split("<examples>\n", 1)[1].split("\n</examples>", 1)[0])
    assert {(r["expected"]["mood"], r["feedback"]) for r in shown} == {
        ("happy", ""),  # its run failed validation: no prediction for the metric to score
        ("sad", f"the text {TEXTS[2]!r} is sad"),
        ("sad", f"the text {TEXTS[3]!r} is sad"),
        ("calm", "right"),
    }


def test_a_metrics_long_feedback_reaches_the_reflection_model_cut() -> None:
    # A metric's feedback went into the reflection prompt whole (1 MB here), past what the
    # plan's token estimate counts and what a provider takes.
    def metric(example: ts.Example, pred: Any) -> tuple[float, str]:
        return float(pred.mood == example.mood), "why " * 250_000

    with served() as server:
        optimizer = quiet(metric=metric, max_metric_calls=60, minibatch_size=6)
        optimizer.compile(ts.Predict(Mood), TRAIN, valset=DEV)
    body = next(b for b in server.requests if reflection_request(b))
    user = body["messages"][-1]["content"]
    shown = json.loads(user.split("<examples>\n", 1)[1].split("\n</examples>", 1)[0])
    feedback = {r["feedback"] for r in shown} - {""}
    assert feedback == {"why " * 250 + "... [999000 more characters cut]"}
    assert len(user) < 50_000


def test_a_too_small_budget_is_refused_before_any_request() -> None:
    with served() as server:
        with pytest.raises(ts.ConfigurationError) as refused:
            quiet(max_metric_calls=30).compile(ts.Predict(Mood), TRAIN, valset=DEV)
        with pytest.raises(ts.ConfigurationError, match="LM requests"):
            quiet(budget=ts.limits.Budget(requests=40)).compile(ts.Predict(Mood), TRAIN)
        with pytest.raises(ts.ConfigurationError, match="needs a budget"):
            quiet().compile(ts.Predict(Mood), TRAIN)
    # 6 valset runs for the seed, then 2 * 3 + 6 per proposal: 3 proposals need 42.
    assert "needs at least 42 metric calls" in str(refused.value)
    assert "make 3 proposals" in str(refused.value)
    assert server.requests == []


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("min_proposals", 0),
        ("minibatch_size", None),
        ("max_proposals", "3"),
        ("max_metric_calls", True),
    ],
)
def test_an_option_out_of_range_is_refused_naming_it(option: str, value: Any) -> None:
    with pytest.raises(ts.ConfigurationError, match=rf"GEPA\({option}=.*expected an int >= 1"):
        ts.optimize.GEPA(**{option: value})


def test_the_run_never_makes_more_calls_than_its_plan() -> None:
    budget = ts.limits.Budget(requests=200)

    def hopeless(example: ts.Example, pred: Any) -> float:
        return 0.0  # nothing is ever perfect: the run goes on until the plan is spent

    with served() as server:
        optimizer = quiet(metric=hopeless, budget=budget, seed=3)
        optimizer.compile(ts.Predict(Mood), TRAIN, valset=DEV)
    plan = optimizer.plan
    assert isinstance(plan, ts.optimize.GEPAPlan)
    assert len(server.requests) == budget.requests == optimizer.result.calls <= plan.max_calls
    assert plan.max_calls <= 200
    assert optimizer.result.stop_reason in ("proposals", "metric_calls")
    assert optimizer.result.metric_calls <= plan.metric_calls


def test_the_same_seed_gives_the_same_run() -> None:
    def run() -> tuple[list[float], int]:
        with served():
            optimizer = quiet(max_metric_calls=60, seed=7)
            optimizer.compile(ts.Predict(Mood), TRAIN, valset=DEV)
        return optimizer.result.scores, optimizer.result.metric_calls

    assert run() == run()


class Refund(BaseModel):
    """Money back."""

    amount: float


class Invoice(BaseModel):
    """A copy of an invoice."""

    month: str


class Route(ts.Signature):
    """Route the ticket."""

    ticket: str = ts.InputField()
    request: Refund | Invoice = ts.OutputField()


def test_a_candidate_rewrites_union_members_docstrings_for_the_compiled_program_only() -> None:
    candidate = ts.optimize.GEPACandidate.of(ts.Predict(Route))
    texts = candidate.predictors["self"]
    assert texts.members == {"Refund": "Money back.", "Invoice": "A copy of an invoice."}
    texts.members["Refund"] = "The customer wants their money returned."
    compiled = candidate.apply(ts.Predict(Route))
    with StandIn() as server:
        lm = ts.LM("standin-1", base_url=server.base_url, api_key="sk-standin")
        with ts.context(lm=lm):
            pred = compiled(ticket="Please refund me")
        lm.close()
    schema = json.dumps(server.requests[0]["response_format"])
    assert "The customer wants their money returned." in schema
    assert "Money back." not in schema
    assert isinstance(pred.request, (Refund, Invoice))  # the user's own classes
    assert Refund.__doc__ == "Money back."


def test_gepa_needs_its_extra_and_import_typedspy_does_not_load_it() -> None:
    child = (
        "import sys\n"
        "import typedspy as ts\n"
        "print('gepa' in sys.modules)\n"
        "sys.modules['gepa'] = None\n"
        "try:\n"
        "    ts.optimize.GEPA(max_metric_calls=10)\n"
        "except ts.ConfigurationError as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", child], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "False",
        'ts.optimize.GEPA needs the gepa package: pip install "typedspy[gepa]"',
    ]


def compile_with(
    optimizer: ts.optimize.GEPA, reply: Any, model: str = "standin-1"
) -> tuple[ts.Module, StandIn]:
    """``optimizer`` compiles ``Mood`` against a stand-in answering through ``reply``."""
    with StandIn(answer=reply) as server:
        lm = ts.LM(model, base_url=server.base_url, api_key="sk-standin", max_retries=0)
        try:
            with ts.context(lm=lm, max_retries=1):
                return optimizer.compile(ts.Predict(Mood), TRAIN, valset=DEV), server
        finally:
            lm.close()


def test_a_reflection_reply_without_usable_texts_skips_that_proposal(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def answer_badly(body: dict[str, Any]) -> str:
        return "no texts here" if reflection_request(body) else answer(body)

    optimizer = quiet(max_metric_calls=60, seed=1)
    compiled, server = compile_with(optimizer, answer_badly)
    result = optimizer.result
    # No proposal ever counted; the run still ends, on its metric calls, within its plan.
    assert result.proposals == 0 and result.stop_reason == "metric_calls"
    assert len(server.requests) == result.calls <= optimizer.plan.max_calls  # type: ignore[union-attr]
    assert compiled.signature.output_fields["mood"].description is None  # type: ignore[attr-defined]
    assert "the reflection model gave no usable texts for self" in caplog.text


def test_an_lm_error_during_the_run_is_raised_by_compile() -> None:
    from typedspy.testing import Reply

    def refuse_reflection(body: dict[str, Any]) -> Reply | str:
        return Reply(status=401) if reflection_request(body) else answer(body)

    with pytest.raises(ts.errors.LMStatusError, match="HTTP 401"):
        compile_with(quiet(max_metric_calls=60, seed=1), refuse_reflection)


@pytest.mark.parametrize("costly", ["reflection", "every"])
def test_a_token_budget_spent_mid_run_stops_it_with_the_best_so_far(costly: str) -> None:
    from typedspy.testing import Reply

    # The plan estimates a few hundred tokens a request; these replies report 100,000.
    def expensive(body: dict[str, Any]) -> Reply | str:
        if costly == "every" or reflection_request(body):
            return Reply(content=answer(body), usage={"prompt_tokens": 100_000})
        return answer(body)

    budget = ts.limits.Budget(total_tokens=40_000)
    optimizer = quiet(budget=budget)
    compiled, server = compile_with(optimizer, expensive)
    result = optimizer.result
    assert result.stop_reason == "budget"
    assert result.calls == len(server.requests) == budget.requests
    assert isinstance(compiled, ts.Predict)
    if costly == "every":  # refused during the seed's own evaluation: the seed, scored 0
        assert result.metric_calls == 0 and result.scores == [0.0]
        assert result.best_candidate == ts.optimize.GEPACandidate.of(ts.Predict(Mood))
    else:
        assert result.proposals == 1 and result.metric_calls > 0


def test_a_cost_budget_plans_by_the_models_price_and_needs_one() -> None:
    pytest.importorskip("genai_prices", reason="the prices extra is not installed")
    priced = quiet(budget=ts.limits.Budget(cost=1), max_proposals=3)
    compile_with(priced, answer, model="gpt-4o-mini")
    plan = priced.plan
    assert isinstance(plan, ts.optimize.GEPAPlan) and plan.proposals == 3  # max_proposals caps
    assert plan.est_cost is not None and "at the model's prices" in str(plan)
    assert priced.result.calls <= plan.max_calls
    with pytest.raises(ts.ConfigurationError, match="cannot evaluate the seed") as refused:
        compile_with(quiet(budget=ts.limits.Budget(cost=0.000001)), answer, model="gpt-4o-mini")
    assert "cost 0.000001 left" in str(refused.value)
    unpriced = quiet(budget=ts.limits.Budget(cost=1))
    with pytest.raises(ts.ConfigurationError, match="none is known for 'standin-1'"):
        compile_with(unpriced, answer)


def test_a_candidate_for_a_predictor_the_program_lacks_is_refused_naming_it() -> None:
    candidate = ts.optimize.GEPACandidate.of(ts.Predict(Mood))
    candidate.predictors["planner"] = candidate.predictors["self"]
    with pytest.raises(ts.ConfigurationError, match=r"no predictor at \['planner'\]"):
        candidate.apply(ts.Predict(Mood))


def test_a_metric_that_raises_scores_that_run_0_and_the_reflection_model_sees_why() -> None:
    def metric(example: ts.Example, pred: Any) -> float:
        if example.mood == "sad":
            raise KeyError("no score for sad texts")
        return float(pred.mood == example.mood)

    with served() as server:
        quiet(metric=metric, max_metric_calls=60, minibatch_size=6).compile(
            ts.Predict(Mood), TRAIN, valset=DEV
        )
    body = next(b for b in server.requests if reflection_request(b))
    user = body["messages"][-1]["content"]
    shown = json.loads(user.split("<examples>\n", 1)[1].split("\n</examples>", 1)[0])
    raised = [r for r in shown if r["expected"]["mood"] == "sad"]
    assert raised and all(r["failure"] == "metric" and r["score"] == 0.0 for r in raised)
    assert raised[0]["problems"] == [
        {"path": "<root>", "problem": "the metric raised KeyError('no score for sad texts')"}
    ]


class _Refund(BaseModel):
    """Money back."""

    amount: float


class Billing:
    class Invoice(BaseModel):
        """A copy of an invoice."""

        month: str


class Billing_Invoice(BaseModel):  # its text name collides with Billing.Invoice's
    """A corrected invoice."""

    number: int


class Triage(ts.Signature):
    """Route the ticket."""

    ticket: str = ts.InputField()
    request: _Refund | Billing.Invoice | Billing_Invoice = ts.OutputField()


TICKETS = {
    "Please refund me": _Refund(amount=5.0),
    "Send me March's invoice": Billing.Invoice(month="March"),
    "Invoice 7 has a typo": Billing_Invoice(number=7),
}


def test_every_union_members_docstring_evolves_even_with_awkward_class_names() -> None:
    # "_Refund" is no field name for the reflection model's schema, and "Billing.Invoice"
    # and "Billing_Invoice" would share one: each docstring must still go out and come back.
    docs = ts.optimize.GEPACandidate.of(ts.Predict(Triage)).predictors["self"].members
    assert set(docs) == {"_Refund", "Billing.Invoice", "Billing_Invoice"}

    def reply(body: dict[str, Any]) -> str:
        user = body["messages"][-1]["content"]
        if reflection_request(body):
            current = json.loads(user.split("<current>\n", 1)[1].split("\n</current>", 1)[0])
            current["members"] = {k: f"NEW {v}" for k, v in current["members"].items()}
            return json.dumps({"improved": current})
        schema = json.dumps(body["response_format"])
        ticket = next(t for t in TICKETS if t in body["messages"][1]["content"])
        # Only a schema with every rewritten docstring gets the right answer.
        right = all(f"NEW {doc}" in schema for doc in docs.values())
        value = TICKETS[ticket] if right else _Refund(amount=0.0)
        return json.dumps({"request": {"_type": type(value).__name__, **value.model_dump()}})

    train = [ts.Example(ticket=t, request=v).with_inputs("ticket") for t, v in TICKETS.items()]
    optimizer = quiet(max_metric_calls=40, minibatch_size=3)
    with StandIn(answer=reply) as server:
        lm = ts.LM("standin-1", base_url=server.base_url, api_key="sk-standin", max_retries=0)
        with ts.context(lm=lm):
            optimizer.compile(ts.Predict(Triage), train)
        lm.close()
    assert optimizer.result.best_score == 1.0
    evolved = optimizer.result.best_candidate.predictors["self"].members
    assert evolved == {name: f"NEW {doc}" for name, doc in docs.items()}
