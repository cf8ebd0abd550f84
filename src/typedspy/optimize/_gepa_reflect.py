"""What GEPA reflects on, and the reflection call: typed failures in, a predictor's texts out.

A candidate program's run on an example becomes an `Evaluated`: its score, the metric's
feedback, and what went wrong in typedspy's terms (the failure kind, each field path with its
validation message, each labelled field expected against got). `records` turns the runs into
gepa's reflective dataset for one predictor, and `propose` asks the reflection model, through
a typed `Predict`, for that predictor's new texts (ADR-081).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field, create_model

from typedspy._text import bounded
from typedspy._types import format_path
from typedspy.errors import OutputError
from typedspy.evaluation import (
    Example,
    Metric,
    Outcome,
    TraceStep,
    failure_kind,
    run_scored,
)
from typedspy.lm import BaseLM
from typedspy.modules import Module, Predict
from typedspy.signature import (
    InputField,
    OutputField,
    Signature,
    SignatureTexts,
    build_signature,
    to_jsonable,
)

__all__ = ["Evaluated", "evaluate_candidate", "propose", "records"]

INSTRUCTIONS = """\
You improve the wording of one step of a typed LLM program. The step must answer with typed \
outputs. `current` holds its texts: the instruction, the description of each input and output \
field, and the docstring of each class an output can be (the members of its unions). \
`examples` shows how the step did on training examples: its inputs, what it answered, what was \
expected, its score, and why it failed: the failure kind (decode: no JSON could be read; \
validation: a value did not fit its type, with the field path and the validation message; \
mismatch: a valid value that differs from the label, expected against got) and the metric's \
feedback. Write texts that make the step answer these and similar inputs correctly: state the \
rules the failures reveal in general terms, never the answers to these examples. Return every \
text, rewritten or kept as it is."""


class FieldProblem(BaseModel):
    """One thing wrong with an answer, at a field path."""

    path: str = Field(description="where in the answer, e.g. `route.kind`")
    problem: str = Field(description="the validation message, or expected against got")


class ReflectionRecord(BaseModel):
    """How the step did on one training example."""

    inputs: dict[str, Any]
    answer: dict[str, Any] | None = Field(description="what the step answered (None: no output)")
    expected: dict[str, Any] = Field(description="the example's labels")
    score: float
    failure: str | None = Field(description="decode, validation, mismatch, ... (None: passed)")
    problems: list[FieldProblem]
    feedback: str = Field(description="the metric's own feedback")


@dataclass
class Evaluated:
    """One example run by one candidate program: gepa's trajectory for reflection."""

    example: Example
    score: float
    outputs: dict[str, Any] | None
    failure: str | None = None
    problems: list[FieldProblem] = field(default_factory=list)
    feedback: str = ""
    trace: list[TraceStep] = field(default_factory=list)
    error: BaseException | None = None


async def evaluate_candidate(
    program: Module, batch: Sequence[Example], metric: Metric, **options: Any
) -> list[Evaluated]:
    """Run ``program`` on ``batch`` through the batch machinery; score and explain each run."""
    outcomes = await run_scored(program, batch, metric, trace=True, **options)
    return [_explained(ex, out) for ex, out in zip(batch, outcomes, strict=True)]


def _explained(example: Example, outcome: Outcome) -> Evaluated:
    if outcome.error is not None:
        exc = outcome.error
        kind = failure_kind(exc)
        problems = [
            FieldProblem(path=format_path(e.path), problem=e.message)
            for e in (exc.errors if isinstance(exc, OutputError) else ())
        ] or [FieldProblem(path="<root>", problem=f"{type(exc).__name__}: {exc}")]
        return Evaluated(example, 0.0, None, kind, problems, trace=outcome.trace, error=exc)
    outputs = outcome.outputs()
    scored = outcome.scored
    if isinstance(scored, Exception):  # a metric that fails on one prediction scores it 0
        problem = FieldProblem(path="<root>", problem=f"the metric raised {scored!r}")
        return Evaluated(example, 0.0, outputs, "metric", [problem], trace=outcome.trace)
    value, _, feedback = scored if scored is not None else (0.0, {}, "")
    mismatches = _mismatches(example, outputs)
    failure = "mismatch" if mismatches else None
    return Evaluated(example, value, outputs, failure, mismatches, feedback, outcome.trace)


def _mismatches(example: Example, outputs: Mapping[str, Any]) -> list[FieldProblem]:
    """Each labelled output field whose value differs from the label: expected against got."""
    data = example.to_dict()
    return [
        FieldProblem(path=name, problem=f"expected {data[name]!r}, got {outputs.get(name)!r}")
        for name in example.labels()
        if name in data and outputs.get(name) != data[name]
    ]


def records(path: str, runs: Sequence[Evaluated]) -> list[dict[str, Any]]:
    """The reflective dataset gepa gets for the predictor at ``path``: one record per run."""
    out: list[dict[str, Any]] = []
    for run in runs:
        step = next((s for s in run.trace if s.path == path), None)
        inputs = run.example.to_dict()
        expected = {k: inputs.pop(k) for k in run.example.labels() if k in inputs}
        record = ReflectionRecord(
            inputs=to_jsonable(dict(step.inputs)) if step else inputs,
            answer=to_jsonable(dict(step.outputs)) if step else run.outputs,
            expected=expected,
            score=run.score,
            failure=run.failure,
            # What the metric or a mismatch says is cut: a metric's 1 MB feedback went into the
            # reflection prompt whole, past what the plan's token estimate counts.
            problems=[FieldProblem(path=p.path, problem=bounded(p.problem)) for p in run.problems],
            feedback=bounded(run.feedback),
        )
        out.append(record.model_dump(mode="json"))
    return out


async def propose(
    signature: type[Signature],
    current: SignatureTexts,
    dataset: Sequence[Mapping[str, Any]],
    lm: BaseLM | None,
) -> SignatureTexts:
    """The reflection model's new texts for a predictor of ``signature``, from its runs.

    Raises:
        OutputError: The reflection model gave no valid texts (after retries).
    """
    model, names = _texts_model(current)
    reflect = build_signature(
        f"Improve{signature.__name__}Texts",
        {
            "current": (model, InputField(description="the step's texts now")),
            "examples": (list[ReflectionRecord], InputField(description="its runs")),
        },
        {"improved": (model, OutputField(description="every text, rewritten or kept"))},
        INSTRUCTIONS,
    )
    # Plain JSON values: the input model validates them (and checks the records' shape).
    runs = [dict(r) for r in dataset]
    pred = await Predict(reflect, lm=lm).acall(current=_grouped(current, names), examples=runs)
    improved: Any = pred.improved
    groups = {
        group: {name: getattr(getattr(improved, group), ident) for ident, name in idents.items()}
        for group, idents in names.items()
    }
    return SignatureTexts(instructions=improved.instructions, **groups)


_GROUPS = {
    "inputs": "the description of input field {!r}",
    "outputs": "the description of output field {!r}",
    "members": "the docstring of class {!r}",
}


def _texts_model(texts: SignatureTexts) -> tuple[type[BaseModel], dict[str, dict[str, str]]]:
    """A model with one string field per text of ``texts``, and each field's text name."""
    names: dict[str, dict[str, str]] = {}
    groups: dict[str, Any] = {}
    for group, what in _GROUPS.items():
        idents = _identifiers(list(getattr(texts, group)))
        if not idents:  # strict schemas refuse an object without properties
            continue
        names[group] = idents
        fields: dict[str, Any] = {
            ident: (str, Field(description=what.format(name))) for ident, name in idents.items()
        }
        groups[group] = (create_model(f"{group.title()}Texts", **fields), ...)
    model = create_model(
        "StepTexts",
        instructions=(str, Field(description="the step's instruction")),
        **groups,
    )
    return model, names


def _identifiers(names: list[str]) -> dict[str, str]:
    """A field name for each text name (class names may hold dots), mapped to the text name."""
    out: dict[str, str] = {}
    for i, name in enumerate(names):
        ident = re.sub(r"\W", "_", name)
        if not ident.isidentifier() or ident.startswith("_") or hasattr(BaseModel, ident):
            ident = f"text_{i}"
        while ident in out:
            ident = f"{ident}_{i}"
        out[ident] = name
    return out


def _grouped(texts: SignatureTexts, names: dict[str, dict[str, str]]) -> dict[str, Any]:
    grouped: dict[str, Any] = {"instructions": texts.instructions}
    for group, idents in names.items():
        values = getattr(texts, group)
        grouped[group] = {ident: values[name] for ident, name in idents.items()}
    return grouped
