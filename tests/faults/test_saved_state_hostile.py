"""Issue 21, D9: a damaged or tampered saved program is a typed error, never loaded as is.

`Module.load` reads real files: not JSON, nested 100,000 levels, bad UTF-8, truncated, empty, a
directory, another format version, a wrong type or an unknown key at any field, a missing or
foreign fingerprint. Each ends in a `ts.errors.SavedStateError` (a `ts.ConfigurationError`) naming
the file and the field path, with nothing loaded (ADR-054).
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

import typedspy as ts
from typedspy.testing import StandIn


class Pick(BaseModel):
    label: str


class Skip(BaseModel):
    reason: str


class Answer(ts.Signature):
    """Answer the question."""

    question: str = ts.InputField()
    answer: Pick | Skip = ts.OutputField()
    score: int = ts.OutputField()


class Program(ts.Module):
    def __init__(self) -> None:
        self.answer = ts.Predict(Answer)


DEMO = {"question": "Which one?", "answer": Pick(label="a"), "score": 3}


def trained() -> Program:
    program = Program()
    program.answer.instructions = "Answer briefly."
    program.answer.demos = [DEMO]
    return program


def knn_program() -> ts.optimize.KNNProgram:
    examples = [
        ts.Example(Answer, question="Which one?", answer=Pick(label="a"), score=3),
        ts.Example(Answer, question="Why not?", answer=Skip(reason="no"), score=1),
    ]
    return ts.optimize.KNNProgram(ts.Predict(Answer), examples, [[1.0, 0.0], [0.0, 1.0]], k=1)


def load_fails(program: ts.Module, path: Path) -> ts.errors.SavedStateError:
    """``program.load(path)`` raises a `SavedStateError` naming the file; nothing changes."""
    before = program.dump_state()
    started = time.monotonic()
    with pytest.raises(ts.errors.SavedStateError) as caught:
        program.load(path)
    assert time.monotonic() - started < 10  # the 100k-deep case recursed forever before
    assert isinstance(caught.value, ts.ConfigurationError)  # load's documented error
    assert caught.value.source == str(path)
    assert str(path) in str(caught.value)
    assert program.dump_state() == before  # nothing loaded
    return caught.value


def written(tmp_path: Path, data: bytes | str | Any) -> Path:
    path = tmp_path / "program.json"
    if isinstance(data, str):
        data = data.encode()
    elif not isinstance(data, bytes):
        data = json.dumps(data).encode()
    path.write_bytes(data)
    return path


# -- the file cannot be read as JSON ----------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (b"{nope", "not JSON"),
        (b"[" * 100_000 + b"]" * 100_000, "nested deeper than 256 levels"),
        (b'{"version": 1, "predictors": {"answer": {"instructions": "\xff"}}}', "not UTF-8"),
        (b"", "empty"),
        (b"  \n", "empty"),
        (b'{"version": 1, "predictors": {"answer": {"signature": "Ans', "not JSON"),
        (b'{"version": 1, "predictors": ' + b"[" * 300 + b"]" * 300 + b"}", "deeper than 256"),
        (b'{"version": 1, "n": 1' + b"0" * 5000 + b"}", "digits"),
        # Was: loaded, the second value kept unsaid (a hand edit, a merge that kept both).
        (b'{"version": 2, "predictors": {}, "predictors": {}}', "'predictors' appears twice"),
    ],
    ids=[
        "not-json",
        "100k-deep",
        "bad-utf8",
        "empty",
        "blank",
        "cut",
        "deep-inside",
        "digits",
        "key-twice",
    ],
)
def test_a_file_that_is_not_json_is_a_typed_error(tmp_path: Path, data: bytes, says: str) -> None:
    error = load_fails(trained(), written(tmp_path, data))
    assert says in str(error)


def test_a_truncated_save_is_a_typed_error(tmp_path: Path) -> None:
    path = tmp_path / "program.json"
    trained().save(path)
    whole = path.read_bytes()
    for cut in (1, len(whole) // 3, len(whole) // 2, len(whole) - 2):
        path.write_bytes(whole[:cut])
        assert "not JSON" in str(load_fails(Program(), path))


def test_a_directory_or_a_missing_file_is_a_typed_error(tmp_path: Path) -> None:
    assert "cannot be read" in str(load_fails(Program(), tmp_path))
    error = load_fails(Program(), tmp_path / "absent.json")
    assert isinstance(error.__cause__, FileNotFoundError)


# -- the format version -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("version", "found"),
    [
        (1, "format version 1"),
        (0, "format version 0"),
        ("1", "format version '1'"),
        (True, "format version True"),
        (None, "missing (not a saved program"),
    ],
)
def test_another_format_version_is_refused_naming_both(
    tmp_path: Path, version: object, found: str
) -> None:
    state = trained().dump_state()
    if version is None:
        del state["version"]
    else:
        state["version"] = version
    error = load_fails(Program(), written(tmp_path, state))
    assert f"version: {found}" in str(error)
    assert "this typedspy reads format version 2 only" in str(error)


# -- a value of the wrong type, an unknown key ------------------------------------------------


A = ("predictors", "answer")
DEMO0 = (*A, "demos", 0)
STR = "Input should be a valid string"

# (where in the state, the value put there, what the error says)
WRONG_TYPES: list[tuple[tuple[str | int, ...], object, str]] = [
    (("predictors",), [], "predictors: Input should be a valid dictionary"),
    (A, "x", "predictors.answer: Input should be a valid dictionary"),
    ((*A, "instructions"), 12345, f"predictors.answer.instructions: {STR}"),
    ((*A, "instructions"), ["a", {"b": 1}], f"predictors.answer.instructions: {STR}"),
    ((*A, "instructions"), None, f"predictors.answer.instructions: {STR}"),
    ((*A, "signature"), 7, f"predictors.answer.signature: {STR}"),
    ((*A, "fingerprint"), None, f"predictors.answer.fingerprint: {STR}"),
    ((*A, "demos"), {"question": "q"}, "predictors.answer.demos: Input should be a valid list"),
    ((*A, "demos"), ["q"], "predictors.answer.demos[0]: Input should be a valid dictionary"),
    ((*DEMO0, "score"), "many", "predictors.answer.demos[0].score: Input should be a valid int"),
    ((*DEMO0, "answer"), {"_type": "Nope"}, "predictors.answer.demos[0].answer"),
    ((*DEMO0, "qestion"), "typo", "predictors.answer.demos[0].qestion: unknown field of Answer"),
    ((*A, "demos"), [{"question": "q"}], "predictors.answer.demos[0]: shows no output"),
]


def put(state: dict[str, Any], where: tuple[str | int, ...], value: object) -> None:
    """Set the value at ``where`` in ``state`` (a dict or list at each step)."""
    *parents, last = where
    node: Any = state
    for part in parents:
        node = node[part]
    node[last] = value


def at(state: dict[str, Any]) -> dict[str, Any]:
    predictor: dict[str, Any] = state["predictors"]["answer"]
    return predictor


@pytest.mark.parametrize(("where", "value", "says"), WRONG_TYPES, ids=[s for *_, s in WRONG_TYPES])
def test_a_wrong_type_at_a_field_is_refused_naming_its_path(
    tmp_path: Path, where: tuple[str | int, ...], value: object, says: str
) -> None:
    state = trained().dump_state()
    put(state, where, value)
    error = load_fails(Program(), written(tmp_path, state))
    assert f"saved state {str(written(tmp_path, state))!r}: {says}" in str(error)
    assert any(str(e).startswith(says.split(":")[0]) for e in error.errors)
    with pytest.raises(ts.errors.SavedStateError, match="^saved state: " + re.escape(says)):
        Program().load_state(state)  # a dict is checked as a file is


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (lambda s: s.update(extra=1), "extra: Extra inputs are not permitted"),
        (lambda s: at(s).update(instrucions="x"), "predictors.answer.instrucions: Extra inputs"),
        (lambda s: s.update(instructions=12345), "instructions: Extra inputs are not permitted"),
    ],
    ids=["top", "predictor", "reproducer"],
)
def test_an_unknown_key_is_refused_not_skipped(
    tmp_path: Path, change: Callable[[dict[str, Any]], object], says: str
) -> None:
    state = trained().dump_state()
    change(state)
    assert says in str(load_fails(Program(), written(tmp_path, state)))


def test_a_non_object_state_or_a_non_json_value_in_a_dict_is_refused() -> None:
    with pytest.raises(ts.errors.SavedStateError, match="expected an object, got list"):
        Program().load_state([])  # type: ignore[arg-type]
    state = trained().dump_state()
    at(state)["demos"][0]["question"] = ("a", "tuple")
    with pytest.raises(
        ts.errors.SavedStateError, match=r"demos\[0\]\.question: input was not a valid JSON"
    ):
        Program().load_state(state)
    deep: list[Any] = []
    for _ in range(1_000):
        deep = [deep]
    at(state)["demos"][0]["question"] = deep
    with pytest.raises(ts.errors.SavedStateError, match="nested deeper than 256 levels"):
        Program().load_state(state)


# -- the signature check ----------------------------------------------------------------------


def test_a_missing_fingerprint_is_an_error_not_a_skipped_check(tmp_path: Path) -> None:
    state = trained().dump_state()
    del at(state)["fingerprint"]
    error = load_fails(Program(), written(tmp_path, state))
    assert "predictors.answer.fingerprint: Field required" in str(error)


def test_the_fingerprint_of_another_signature_is_refused(tmp_path: Path) -> None:
    class Other(ts.Signature):
        """Answer the question."""

        question: str = ts.InputField()
        answer: str = ts.OutputField()

    foreign = ts.Predict(Other).dump_state()["predictors"]["self"]["fingerprint"]
    state = trained().dump_state()
    at(state)["fingerprint"] = foreign
    error = load_fails(Program(), written(tmp_path, state))
    assert "predictors.answer.fingerprint: saved for another Answer" in str(error)
    assert foreign in str(error) and error.path == "answer"


def test_state_saved_for_another_program_names_the_paths(tmp_path: Path) -> None:
    path = tmp_path / "program.json"
    ts.Predict(Answer).save(path)
    error = load_fails(Program(), path)
    assert "paths ['self'] that Program does not have" in str(error)
    assert "no state for its paths ['answer']" in str(error)


# -- a KNN program's own part -----------------------------------------------------------------


K = ("knn",)
EX0 = ("knn", "examples", 0)
INT = "Input should be a valid integer"

KNN_CHANGES: list[tuple[tuple[str | int, ...], object, str]] = [
    ((*K, "k"), "1", f"knn.k: {INT}"),
    ((*K, "k"), True, f"knn.k: {INT}"),
    ((*K, "k"), 0, "knn.k: Input should be greater than or equal to 1"),
    ((*K, "embedding_model"), 5, f"knn.embedding_model: {STR}"),
    ((*K, "examples"), {}, "knn.examples: Input should be a valid list"),
    ((*EX0, "inputs"), "question", "knn.examples[0].inputs: Input should be a valid list"),
    ((*EX0, "inputs"), ["nope"], "knn.examples[0]: inputs ['nope'] are not among the values"),
    (("knn", "examples", 1, "values", "score"), "x", f"knn.examples[1].values.score: {INT}"),
    ((*K, "vectors"), [[1.0]], "knn: 1 vectors of 1 values for 2 examples"),
    ((*K, "vectors"), [[1.0, 0.0], [1.0]], "knn: 2 vectors of 1/2 values for 2 examples"),
    (
        (*K, "vectors"),
        [[1.0, "0"], [0.0, 1.0]],
        "knn.vectors[0][1]: Input should be a valid number",
    ),
    ((*K, "vectors"), [[1.0, 1e999], [0.0, 1.0]], "knn.vectors[0][1]: Input should be a finite"),
    ((*K, "extra"), 1, "knn.extra: Extra inputs are not permitted"),
]


@pytest.mark.parametrize(("where", "value", "says"), KNN_CHANGES, ids=[s for *_, s in KNN_CHANGES])
def test_a_knn_programs_examples_and_vectors_are_checked(
    tmp_path: Path, where: tuple[str | int, ...], value: object, says: str
) -> None:
    state = knn_program().dump_state()
    put(state, where, value)
    fresh = ts.optimize.KNNProgram(ts.Predict(Answer))
    error = load_fails(fresh, written(tmp_path, state))
    assert says in str(error)
    assert fresh.examples == []


def test_a_plain_programs_file_is_refused_by_a_knn_program_and_the_reverse(
    tmp_path: Path,
) -> None:
    path = tmp_path / "program.json"
    ts.Predict(Answer).save(path)
    assert "knn: Field required" in str(
        load_fails(ts.optimize.KNNProgram(ts.Predict(Answer)), path)
    )
    knn_program().save(path)
    again = ts.optimize.KNNProgram(ts.Predict(Answer))
    again.load(path)  # the round trip holds
    assert again.dump_state() == knn_program().dump_state()
    error = load_fails(ts.Predict(Answer), path)
    assert "knn: Extra inputs are not permitted" in str(error)


# -- saving -----------------------------------------------------------------------------------


class Free(ts.Signature):
    """Read anything."""

    payload: dict[str, Any] = ts.InputField()
    answer: str = ts.OutputField()


def test_state_nested_deeper_than_load_reads_is_not_saved(tmp_path: Path) -> None:
    # Within what a demo may hold (256 levels, checked when the module is made), past what load
    # reads once the saved envelope is around it.
    deep: dict[str, Any] = {}
    for _ in range(254):
        deep = {"a": deep}
    predict = ts.Predict(Free, demos=[{"payload": deep, "answer": "a"}])
    path = tmp_path / "program.json"
    with pytest.raises(ts.errors.SavedStateError, match="nested deeper than 256 levels"):
        predict.save(path)
    assert not path.exists()


def test_a_vector_that_is_not_finite_is_not_saved(tmp_path: Path) -> None:
    program = knn_program()
    program._vectors[0][0] = float("nan")  # an endpoint that sent NaN in an embedding
    path = tmp_path / "program.json"
    with pytest.raises(
        ts.errors.SavedStateError, match=r"knn\.vectors\[0\]\[0\]: Input should be a finite"
    ):
        program.save(path)
    assert not path.exists()


def test_a_demo_holding_nan_or_infinity_is_saved_and_loaded_as_it_was(tmp_path: Path) -> None:
    # Written as null before, which load read back as None (and the demo check then refused).
    class Measure(ts.Signature):
        """Round the reading."""

        reading: float = ts.InputField()
        rounded: int = ts.OutputField()

    demos = [{"reading": math.nan, "rounded": 0}, {"reading": -math.inf, "rounded": 0}]
    path = tmp_path / "program.json"
    ts.Predict(Measure, demos=demos).save(path)
    loaded = ts.Predict(Measure)
    loaded.load(path)
    assert math.isnan(loaded.demos[0]["reading"])
    assert loaded.demos[1]["reading"] == -math.inf


def test_instructions_or_texts_with_a_lone_surrogate_are_set_saved_and_loaded(
    tmp_path: Path,
) -> None:
    # Half an emoji a model wrote (an optimizer's rewrite, a hand-edited file's escape): Python
    # could not make a class with that docstring, so setting or loading it raised a bare
    # UnicodeEncodeError. It becomes U+FFFD, as the wire already made it.
    class Ask(ts.Signature):
        """Answer."""

        question: str = ts.InputField(desc="the question")
        answer: str = ts.OutputField()

    predict = ts.Predict(Ask)
    predict.instructions = "Answer \ud83d briefly"
    assert predict.instructions == "Answer \ufffd briefly"
    worded = ts.signature.with_texts(
        Ask, ts.signature.SignatureTexts(instructions="Do \udc00", inputs={"question": "a \ud83d"})
    )
    assert (worded.instructions, worded.input_fields["question"].description) == (
        "Do \ufffd",
        "a \ufffd",
    )
    path = tmp_path / "program.json"
    predict.save(path)
    state = json.loads(path.read_text())
    state["predictors"]["self"]["instructions"] = "Escaped \udc00 half"
    path.write_text(json.dumps(state))  # ensure_ascii: the escape Python reads back as is
    loaded = ts.Predict(Ask)
    loaded.load(path)
    assert loaded.instructions == "Escaped \ufffd half"


def test_a_demo_with_a_lone_surrogate_is_saved_as_the_request_carries_it(
    tmp_path: Path, standin: tuple[StandIn, ts.LM]
) -> None:
    # Half an emoji in a demo a model wrote: the request carries U+FFFD for it, but save raised
    # a bare UnicodeEncodeError ("surrogates not allowed") and wrote nothing.
    server, lm = standin

    class Ask(ts.Signature):
        """Answer."""

        question: str = ts.InputField()
        answer: str = ts.OutputField()

    predict = ts.Predict(Ask, lm=lm, demos=[{"question": "smile \ud83d", "answer": "yes"}])
    path = tmp_path / "program.json"
    predict.save(path)
    loaded = ts.Predict(Ask, lm=lm)
    loaded.load(path)
    assert loaded.demos[0]["question"] == "smile \ufffd"
    predict(question="Hi?")
    loaded(question="Hi?")
    first, second = server.requests[-2:]
    assert first["messages"] == second["messages"]
