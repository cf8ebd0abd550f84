"""`KNNFewShot`: per input, the most similar training examples become the demos.

Embeddings come from the endpoint's ``/v1/embeddings`` through the request pipeline (so the
response cache, a `ts.limits.Budget` and a `ts.limits.RateLimit` apply to them as to
completions); the vector math is numpy's (the ``typedspy[knn]`` extra, ADR-020). A
`KNNProgram` saves its training examples and their vectors with its predictors' state
(ADR-039), so a reloaded one picks the same demos without embedding the training set again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, Self, cast

from pydantic import Field, FiniteFloat, JsonValue, model_validator
from pydantic_core import PydanticCustomError

from typedspy import pipeline
from typedspy._types import FieldError
from typedspy.adapter import render_value
from typedspy.errors import ConfigurationError, LMResponseError, check_int
from typedspy.evaluation import Example, FieldMetric, Metric
from typedspy.limits import Budget
from typedspy.lm import BaseLM
from typedspy.modules import Module, demo_errors, typed_demo
from typedspy.optimize._base import Optimizer, Plan, fresh_copy, predictors
from typedspy.optimize._stratify import class_step, demo_for, pick_demos
from typedspy.program import ProgramState, StateModel, listed, state_error, too_deep, under
from typedspy.settings import resolve_lm

__all__ = ["KNNFewShot", "KNNProgram"]


def _numpy() -> Any:
    try:
        import numpy
    except ImportError as exc:
        raise ConfigurationError("KNNFewShot needs numpy: pip install 'typedspy[knn]'") from exc
    return numpy


def matrix(vectors: object) -> tuple[Any, str | None]:
    """``vectors`` as a float matrix, one row each, and what is wrong with them (None: nothing).

    Rows must be lists of finite numbers, all of one width of at least one value: numpy would
    refuse rows of different widths with a ValueError, and rank by a NaN at random.
    """
    np_ = _numpy()
    try:
        rows = np_.asarray(vectors, dtype=float)
    except (TypeError, ValueError):
        return None, "they are not lists of numbers all of one width"
    if rows.ndim != 2 or rows.shape[1] == 0:
        return rows, f"they are not lists of one or more numbers (shape {rows.shape})"
    if not np_.isfinite(rows).all():
        return rows, "a value is not a finite number"
    return rows, None


async def embedded(lm: BaseLM, model: str | None, texts: list[str], what: str) -> Any:
    """``texts`` embedded through the request pipeline: unit rows, one per text (0 stays 0).

    Raises:
        LMResponseError: Vectors that are not finite, of different widths, or not one per text.
    """
    _numpy()  # before the request: without numpy nothing is sent
    rows, problem = matrix(await pipeline.embed(lm, texts, model=model))
    if problem is None and len(rows) != len(texts):
        problem = f"{len(rows)} vectors for {len(texts)} texts"
    if problem is not None:
        raise LMResponseError(f"{model or lm.model}: the embeddings of {what}: {problem}")
    return unit(rows)


def unit(rows: Any) -> Any:
    """``rows`` (a float matrix) scaled to unit length, so a dot product is cosine (0 stays 0).

    Each row is first divided by its largest magnitude: the sum of squares of a row of 1e200s
    overflows (a warning, then a zero row) and of 1e-200s underflows (the row left as it was).
    """
    np_ = _numpy()
    peaks = np_.abs(rows).max(axis=1, keepdims=True, initial=0.0)
    rows = rows / np_.where(peaks == 0, 1.0, peaks)
    norms = np_.linalg.norm(rows, axis=1, keepdims=True)
    return rows / np_.where(norms == 0, 1.0, norms)


def embedding_text(inputs: Mapping[str, Any]) -> str:
    """The text embedded for a set of inputs: ``name: value`` lines, in field order."""
    return "\n".join(f"{name}: {render_value(value)}" for name, value in inputs.items())


class KNNExample(StateModel):
    """A saved training example: the names of its inputs, and its values as JSON."""

    inputs: list[str]
    values: dict[str, JsonValue]

    @model_validator(mode="after")
    def _inputs_are_values(self) -> Self:
        unknown = [name for name in self.inputs if name not in self.values]
        if unknown:
            raise PydanticCustomError(
                "knn_inputs", "inputs {unknown} are not among the values", {"unknown": unknown}
            )
        return self


class KNNState(StateModel):
    """A saved `KNNProgram`'s own part: k, stratify, the training examples, a unit vector each."""

    k: int = Field(ge=1)
    stratify: bool
    embedding_model: str | None
    examples: list[KNNExample]
    vectors: list[list[FiniteFloat]]

    @model_validator(mode="after")
    def _one_vector_per_example(self) -> Self:
        widths = {len(row) for row in self.vectors}
        if len(self.vectors) != len(self.examples) or len(widths) > 1 or 0 in widths:
            raise PydanticCustomError(
                "knn_vectors",
                "{vectors} vectors of {widths} values for {examples} examples: expected one "
                "vector per example, all of one width",
                {
                    "vectors": len(self.vectors),
                    "widths": "/".join(map(str, sorted(widths))) or "no",
                    "examples": len(self.examples),
                },
            )
        return self


class KNNProgramState(ProgramState):
    """A saved `KNNProgram`: its predictors' state and ``knn`` (ADR-039, ADR-054)."""

    knn: KNNState


class KNNProgram(Module):
    """A program that picks its demos per call: the ``k`` training examples nearest the input.

    Built by `KNNFewShot.compile`, or from code and `load`-ed from a saved one. Each call
    embeds the inputs (one ``/v1/embeddings`` request), ranks the training examples by cosine
    similarity (ties: training-set order), and runs a copy of ``program`` with the ``k``
    nearest, most similar first, as every predictor's demos. With ``stratify`` (ADR-082) each
    predictor's ``k`` are spread over its output classes: the nearest example of each class
    in turn, classes in the order of their nearest example.

    Example:
        ```python
        program = ts.optimize.KNNProgram(ts.Predict(RouteTicket), lm=embedder)
        program.load("knn.json")  # the training examples and their vectors come with it
        ```

    Args:
        program: The program run with the chosen demos.
        examples: The training examples (empty until compiled or loaded).
        vectors: Their embeddings, one row per example (scaled to unit length here).
        k: Demos per call.
        lm: The `LM` whose endpoint embeds (default: the configured LM at call time).
        embedding_model: The embedding model name (default: the LM's model).
        stratify: Spread each call's demos over the output classes.

    Attributes:
        program: The program run with the chosen demos (its own demos are replaced per call).
        examples: The training examples.
        k: Demos per call.
    """

    _state_model: ClassVar[type[ProgramState]] = KNNProgramState

    def __init__(
        self,
        program: Module,
        examples: Sequence[Example[Any]] = (),
        vectors: Sequence[Sequence[float]] | None = None,
        *,
        k: int = 3,
        lm: BaseLM | None = None,
        embedding_model: str | None = None,
        stratify: bool = True,
    ) -> None:
        check_int("KNNProgram", "k", k, optional=False)
        self.program = program
        self.examples = list(examples)
        self.k = k
        self.stratify = stratify
        rows, problem = matrix(vectors if vectors is not None else [])
        if problem is not None and len(self.examples):
            raise ConfigurationError(f"KNNProgram: vectors: {problem}")
        self._vectors = unit(rows) if problem is None else rows
        if len(self._vectors) != len(self.examples):
            raise ConfigurationError(
                f"KNNProgram: {len(self._vectors)} vectors for {len(self.examples)} examples"
            )
        self._lm = lm
        self._embedding_model = embedding_model

    async def neighbours(self, inputs: Mapping[str, Any]) -> list[Example]:
        """The ``k`` training examples nearest ``inputs``, most similar first.

        Raises:
            ConfigurationError: No training examples (neither compiled nor loaded).
        """
        return (await self._ranked(inputs))[: self.k]

    async def _ranked(self, inputs: Mapping[str, Any]) -> list[Example]:
        """Every training example, the nearest ``inputs`` first (ties: training-set order)."""
        if not self.examples:
            raise ConfigurationError(
                "KNNProgram has no training examples: compile it with ts.optimize.KNNFewShot, "
                "or load a saved KNN program"
            )
        lm = resolve_lm(self._lm)
        [q] = await embedded(lm, self._embedding_model, [embedding_text(inputs)], "the inputs")
        if len(q) != self._vectors.shape[1]:
            raise ConfigurationError(
                f"KNNProgram: {self._embedding_model or lm.model} embeds the inputs in {len(q)} "
                f"values, the training examples were embedded in {self._vectors.shape[1]}: "
                "embed with the model that embedded them (embedding_model=)"
            )
        sims = self._vectors @ q
        order = _numpy().argsort(-sims, kind="stable")
        return [self.examples[int(i)] for i in order]

    async def aforward(self, **inputs: Any) -> Any:
        """Run ``program`` with the nearest examples as demos."""
        ranked = await self._ranked(inputs)
        compiled = fresh_copy(self.program)
        for _, predictor in predictors(compiled):
            sig = predictor.signature
            demos = pick_demos(sig, ranked, self.k, stratify=self.stratify)
            predictor.demos = [typed_demo(sig, d) for d in demos]
        return await compiled.acall(**inputs)

    def _dump(self) -> KNNProgramState:
        """The program's predictors' state, plus ``knn``: k, the examples and their vectors.

        Examples are written as `Example.to_dict` values (union members carry ``_type``) with
        their input names; the vectors as lists of floats (exact in JSON).
        """
        problem: FieldError | None
        try:
            values = [ex.to_dict() for ex in self.examples]
            problem = too_deep(values, level=3)  # in the file: {"knn": {"examples": [{"values"...
        except ValueError as exc:  # to_dict refuses past max_json_depth and what JSON cannot hold
            values, problem = [], FieldError((), str(exc))
        if problem:
            error = FieldError(("knn", "examples"), problem.message)
            raise state_error("<state>", [error], about="cannot be written")
        knn = {
            "k": self.k,
            "stratify": self.stratify,
            "embedding_model": self._embedding_model,
            "examples": [
                {"inputs": sorted(ex.inputs()), "values": v}
                for ex, v in zip(self.examples, values, strict=True)
            ],
            "vectors": self._vectors.tolist(),
        }  # validated as one value, so an error's path starts at "knn"
        own = super()._dump()
        return KNNProgramState.model_validate(
            {"predictors": own.predictors, "scored": own.scored, "knn": knn}
        )

    def _load(self, state: ProgramState, source: str) -> None:
        """Check the examples against the program's signatures, then load it all (or nothing)."""
        knn = cast("KNNProgramState", state).knn
        rows = [row.values for row in knn.examples]
        if problems := _demo_problems(
            self.program, rows, lambda i: ("knn", "examples", i, "values")
        ):
            raise state_error(source, problems)
        examples = [Example(**row.values).with_inputs(*row.inputs) for row in knn.examples]
        vectors = unit(_numpy().asarray(knn.vectors, dtype=float))
        super()._load(state, source)
        self.k, self.examples, self._vectors = knn.k, examples, vectors
        self.stratify = knn.stratify
        self._embedding_model = knn.embedding_model


class KNNFewShot(Optimizer):
    """Demos chosen per input by similarity: the nearest training examples.

    Example:
        ```python
        knn = ts.optimize.KNNFewShot(k=3, lm=embedder, embedding_model="text-embedding-3-small")
        program = knn.compile(ts.Predict(RouteTicket), trainset)
        ```

    Args:
        k: Demos per call.
        lm: The `LM` whose endpoint embeds (default: the configured LM).
        embedding_model: The embedding model name (default: the LM's model).
        stratify: Spread each call's demos over the output classes (`KNNProgram`).
        metric: Scores the result on a ``valset`` given to `compile` (its score record).
        budget: A `ts.limits.Budget` for the training set's embedding request (default: the
            setting).
        verbose: Print the plan before compiling.
    """

    def __init__(
        self,
        k: int = 3,
        *,
        lm: BaseLM | None = None,
        embedding_model: str | None = None,
        stratify: bool = True,
        metric: Metric | None = None,
        budget: Budget | None = None,
        verbose: bool = True,
    ) -> None:
        check_int("KNNFewShot", "k", k, optional=False)
        self.k, self.lm, self.embedding_model, self.verbose = k, lm, embedding_model, verbose
        self.stratify = stratify
        self.metric = metric if metric is not None else FieldMetric()
        self.budget = budget

    def make_plan(
        self, program: Module, items: list[Example], valset: list[Example] | None = None
    ) -> Plan:
        """The plan: one embedding request for the training set; one more per call."""
        texts = [embedding_text(ex.inputs()) for ex in items]
        return Plan(
            f"KNNFewShot(k={self.k})",
            [
                f"embed the inputs of {len(items)} training examples in one request",
                f"at each call: embed the input (1 request) and use the {self.k} "
                "nearest examples as demos",
                class_step(predictors(program), items, self.stratify),
            ],
            max_calls=1 + (len(valset) if valset else 0),  # scoring embeds each input too
            est_tokens=sum(len(t) for t in texts) // 4,
        )

    async def _optimize(
        self, program: Module, items: list[Example], valset: list[Example] | None
    ) -> KNNProgram:
        """Embed the training inputs (one request) and return a `KNNProgram`."""
        if problems := _demo_problems(program, items, lambda i: ("trainset", i)):
            raise ConfigurationError(f"KNNFewShot: {listed(problems, 3)}")
        lm = resolve_lm(self.lm)
        texts = [embedding_text(ex.inputs()) for ex in items]
        vectors = await embedded(lm, self.embedding_model, texts, "the training inputs")
        return KNNProgram(
            fresh_copy(program),
            items,
            vectors,
            k=self.k,
            lm=self.lm,
            embedding_model=self.embedding_model,
            stratify=self.stratify,
        )


def _demo_problems(
    program: Module,
    rows: Sequence[Mapping[str, Any]],
    path: Callable[[int], tuple[str | int, ...]],
) -> list[FieldError]:
    """What is wrong with each row as a demo of each predictor, as `aforward` makes demos of it.

    Any row may be a call's nearest, so every one is checked (``path`` names row ``i``).
    """
    problems: list[FieldError] = []
    for _, predictor in predictors(program):
        sig = predictor.signature
        for i, row in enumerate(rows):
            if (demo := demo_for(sig, row)) is not None:
                problems += under(path(i), demo_errors(sig, demo))
    return problems
