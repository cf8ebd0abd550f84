"""Saved program state: versioned Pydantic models, read strictly from JSON (ADR-054).

`Module.save` writes a `ProgramState` (a KNN program a subclass of it) as UTF-8 JSON, and
`Module.load` reads one back through `read_state_file`: the bytes as UTF-8, the text with the
bounded JSON decoder (`typedspy._json`), the value with the model in strict mode (no value is
coerced, no key is unknown). Every failure is a `SavedStateError` naming the file and the field
path. Demo values stay JSON values here; the signature of the predictor loading them validates
them (`typedspy.modules`), so the envelope knows nothing about any signature.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    ValidationError,
)

from typedspy._json import MAX_JSON_DEPTH, JSONLimitError, depth_exceeded, loads
from typedspy._types import FieldError
from typedspy.errors import SavedStateError
from typedspy.parse import field_errors
from typedspy.signature import FieldTexts

__all__ = [
    "FORMAT_VERSION",
    "PredictorState",
    "ProgramState",
    "ScoreRecord",
    "StateModel",
    "listed",
    "read_state",
    "read_state_file",
    "state_error",
    "too_deep",
    "under",
]

FORMAT_VERSION = 2
"""The saved-state format this typedspy writes and reads (files carry it as ``version``).

2 (ADR-083): the program's `ScoreRecord` (``scored``). A file of another version is refused."""

_LISTED = 5  # problems spelled out in a message; `SavedStateError.errors` has them all

StateT = TypeVar("StateT", bound="ProgramState")


class StateModel(BaseModel):
    """Base of the saved-state models: strict types, unknown keys refused.

    The format is versioned (`FORMAT_VERSION`), so a key this version does not know is a typo
    or a file of another version, never something to skip.
    """

    # A demo's NaN or infinity is written as such: as null, load read it back as None.
    model_config = ConfigDict(strict=True, extra="forbid", ser_json_inf_nan="constants")


class PredictorState(StateModel):
    """One predictor's learnable state.

    Attributes:
        signature: The signature's class name.
        fingerprint: A digest of the signature's fields and types: state saved for another
            signature of the same name is refused.
        instructions: The instructions sent as the system message.
        demos: The demos, each a mapping of field names to JSON values as the prompt shows
            them (union members carry ``_type``); the signature validates them when loaded.
        texts: The field descriptions and union members' docstrings, when an optimizer
            rewrote them (`ts.optimize.GEPA`); absent from the file otherwise.
    """

    signature: str
    fingerprint: str
    instructions: str
    demos: list[dict[str, JsonValue]]
    texts: FieldTexts | None = Field(default=None, exclude_if=lambda texts: texts is None)


class ScoreRecord(StateModel):
    """The score a compiled program reached, and on what: saved with it so it can verify itself.

    Attributes:
        score: The mean metric score on the dev set, 0.0 to 1.0.
        metric: The metric's name as the evaluation report gives it.
        devset_sha256: A digest of the dev set's examples (order does not count).
        devset_size: How many examples it has.
        typedspy_version: The typedspy that scored it.
    """

    score: float = Field(ge=0.0, le=1.0, allow_inf_nan=False)
    metric: str
    devset_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    devset_size: int = Field(ge=1)
    typedspy_version: str


class ProgramState(StateModel):
    """A saved program: the format version, every predictor's state by its path, its score.

    Attributes:
        version: `FORMAT_VERSION`.
        predictors: Each predictor's attribute path (``"self"`` for a `Predict` saved on its
            own, ``"draft"``, ``"steps[0]"``, ``"experts['math']"``) to its state.
        scored: The score the program reached on a dev set when it was compiled (None: never
            scored), which `ts.optimize.verify` checks it still reaches.
    """

    version: int = FORMAT_VERSION
    predictors: dict[str, PredictorState]
    scored: ScoreRecord | None = None


def read_state_file(model: type[StateT], path: str | os.PathLike[str]) -> StateT:
    """Read a file written by `Module.save` as ``model``.

    Raises:
        SavedStateError: The file cannot be read, is not UTF-8 JSON, is nested deeper than
            `MAX_JSON_DEPTH`, is of another format version, or does not fit ``model``.
    """
    source = os.fspath(path)
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise state_error(
            source, [FieldError((), f"cannot be read: {exc.strerror or exc}")]
        ) from exc
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise state_error(
            source, [FieldError((), f"not UTF-8 text (byte {exc.start}: {exc.reason})")]
        ) from exc
    if not text.strip():
        raise state_error(source, [FieldError((), "the file is empty")])
    try:
        value = loads(text, max_depth=MAX_JSON_DEPTH, unique_keys=True)
    except JSONLimitError as exc:  # its message names the path
        raise state_error(source, [FieldError((), str(exc))]) from exc
    except ValueError as exc:
        raise state_error(source, [FieldError((), f"not JSON: {exc}")]) from exc
    return _validated(model, value, source)


def read_state(model: type[StateT], state: object) -> StateT:
    """``state`` (a dict from `Module.dump_state`) as ``model``, checked as a file is.

    Raises:
        SavedStateError: ``state`` is nested deeper than `MAX_JSON_DEPTH`, is of another
            format version, or does not fit ``model``.
    """
    if problem := too_deep(state, level=0):
        raise state_error("<state>", [problem])
    return _validated(model, state, "<state>")


def _validated(model: type[StateT], value: object, source: str) -> StateT:
    if not isinstance(value, Mapping):
        found = type(value).__name__
        raise state_error(source, [FieldError((), f"expected an object, got {found}")])
    version = value.get("version")
    if version != FORMAT_VERSION:  # True == 1, never 2
        found = (
            f"format version {version!r}"
            if "version" in value
            else "missing (not a saved program, or one saved before the format had versions)"
        )
        problem = f"{found}; this typedspy reads format version {FORMAT_VERSION} only"
        raise state_error(source, [FieldError(("version",), problem)])
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        raise state_error(source, field_errors(exc)) from exc


def state_error(
    source: str, errors: Sequence[FieldError], *, path: str = "", about: str = ""
) -> SavedStateError:
    """The `SavedStateError` for ``errors`` in ``source``, the first few in its message.

    Args:
        source: The file (``"<state>"`` for a dict).
        errors: The problems; their paths run from the top of the file.
        path: The predictor path the problems are at, when they are at one.
        about: Words after "saved state" in the message (``"for Pipeline"``).
    """
    where = "saved state" if source == "<state>" else f"saved state {source!r}"
    return SavedStateError(
        f"{where}{' ' + about if about else ''}: {listed(errors)}",
        source=source,
        path=path,
        errors=errors,
    )


def too_deep(value: object, level: int) -> FieldError | None:
    """The problem when ``value``, ``level`` containers deep in a saved file, nests it too deep.

    A file nested deeper than `MAX_JSON_DEPTH` does not load, so it is not written either.
    """
    if not depth_exceeded(value, MAX_JSON_DEPTH - level):
        return None
    return FieldError((), f"nested deeper than {MAX_JSON_DEPTH} levels (max_json_depth)")


def under(prefix: tuple[str | int, ...], errors: Sequence[FieldError]) -> list[FieldError]:
    """``errors`` with ``prefix`` before each path (a predictor's problems within the file)."""
    return [FieldError((*prefix, *e.path), e.message) for e in errors]


def listed(errors: Sequence[FieldError], limit: int = _LISTED) -> str:
    """The first ``limit`` of ``errors`` as ``path: message``, ``;``-separated, and how many more.

    A problem with the whole value (an empty path) is its message alone.
    """
    shown = "; ".join(str(e) if e.path else e.message for e in errors[:limit])
    return shown + (f"; ... and {len(errors) - limit} more" if len(errors) > limit else "")
