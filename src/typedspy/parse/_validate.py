"""Validation against a signature's outputs, reported as compact `FieldError`s; nothing raises.

`parse_outputs` turns completion text into typed outputs, as a result value. `field_value`
validates one value a user gave for a field (a demo, an example's label): a value may be anything
a prediction of that field can hold: the user's own model instances at any depth of unions,
tagged dicts, or what `to_jsonable` writes. A signature's output model validates union members
through tagged shadow classes, which take dicts, not the user's instances nested inside another
member (issue 20); so a value holding models that fails as given is validated again in its JSON
form, tagged as the prompt shows it. `field_errors` turns Pydantic's errors into `FieldError`s:
union choices out of the path, no URLs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from typedspy._json import active_depth, depth_limit
from typedspy._types import FailureKind, FieldError
from typedspy.parse._extract import extract_candidates
from typedspy.parse._sections import section_value, split_marker_sections
from typedspy.signature import TAG_PREFIX, Signature, decode_json_once, to_jsonable

__all__ = [
    "JITER_DEPTH",
    "ParseFailure",
    "ParseResult",
    "field_errors",
    "field_value",
    "finite_for_jiter",
    "parse_outputs",
    "validate_outputs",
]

# Pydantic's JSON reader (jiter) refuses nesting past about 200 levels by itself; a lower
# max_json_depth must be checked before its fast path can accept a value.
JITER_DEPTH = 200
# A number jiter (Pydantic's JSON reader) reads as inf: an exponent of three digits, or 200 digits
# in a row (a few harmless ones too). The lenient decoder reads it as `NonFinite`, which numeric
# fields refuse, as they refuse NaN and Infinity.
_HUGE_NUMBER = re.compile(r"[0-9][eE]\+?0*[1-9][0-9]{2}|[0-9]{200}")


@dataclass(frozen=True)
class ParseFailure:
    """Why a completion could not be used.

    Attributes:
        kind: ``"decode_failed"`` (no JSON value found) or ``"validation_failed"``.
        errors: Field errors; each path names the field (list indices as ints).
    """

    kind: FailureKind
    errors: tuple[FieldError, ...]


@dataclass(frozen=True)
class ParseResult:
    """The outcome of parsing one completion: ``value`` when ``ok``, else ``error``.

    Attributes:
        value: Output field name to typed value (union fields hold the right member class).
        error: The failure, when there is no value.
    """

    value: dict[str, Any] | None = None
    error: ParseFailure | None = None

    @property
    def ok(self) -> bool:
        """Whether the completion parsed and validated."""
        return self.error is None

    @property
    def kind(self) -> FailureKind | None:
        """The failure kind, or None when ``ok``."""
        return None if self.error is None else self.error.kind

    @property
    def errors(self) -> tuple[FieldError, ...]:
        """The failure's field errors (empty when ``ok``)."""
        return () if self.error is None else self.error.errors


def _failure(kind: FailureKind, errors: list[FieldError]) -> ParseResult:
    return ParseResult(error=ParseFailure(kind=kind, errors=tuple(errors)))


def _values(instance: BaseModel) -> dict[str, Any]:
    return {name: getattr(instance, name) for name in type(instance).model_fields}


def finite_for_jiter(text: str) -> bool:
    """Whether jiter reads ``text`` as the lenient decoder does: no NaN, Infinity or huge number.

    Where it may not, the text must reach the lenient decoder, which keeps numeric fields from
    accepting a value the model most likely did not mean.
    """
    return "NaN" not in text and "Infinity" not in text and _HUGE_NUMBER.search(text) is None


def _fast_path_ok(text: str) -> bool:
    if text[:1] != "{" or text[-1:] != "}" or not finite_for_jiter(text):
        return False
    max_depth = active_depth()
    # Nesting cannot pass the bracket count; past it the full path checks the depth itself.
    return max_depth >= JITER_DEPTH or text.count("{") + text.count("[") <= max_depth


def validate_outputs(model: type[BaseModel], value: object) -> ParseResult:
    """Validate one decoded JSON value against an output model, without raising."""
    value = decode_json_once(value)
    if not isinstance(value, Mapping):
        kind = type(value).__name__ if value is not None else "null"
        return _failure(
            "validation_failed", [FieldError((), f"expected a JSON object, got {kind}")]
        )
    try:
        instance = model.model_validate(value)
    except ValidationError as exc:
        return _failure("validation_failed", field_errors(exc))
    except RecursionError:
        return _too_deep_to_validate()
    except Exception as exc:  # a user validator may raise anything; this does not
        return _crashed(exc)
    return ParseResult(value=_values(instance))


def _too_deep_to_validate() -> ParseResult:
    message = (
        f"output nested too deeply to validate (within max_json_depth {active_depth()}, "
        "past Python's recursion limit)"
    )
    return _failure("decode_failed", [FieldError((), message)])


def _crashed(exc: Exception) -> ParseResult:
    message = f"{type(exc).__name__} while validating: {exc}"[:300]
    return _failure("validation_failed", [FieldError((), message)])


def _from_sections(sig: type[Signature], sections: dict[str, str]) -> ParseResult | None:
    outputs = sig.output_fields
    if not outputs.keys() & sections.keys():
        return None
    data: dict[str, Any] = {}
    errors: list[FieldError] = []
    for name, info in outputs.items():
        if name not in sections:
            continue
        ok, decoded, message = section_value(info.annotation, sections[name])
        if ok:
            data[name] = decoded
        else:
            errors.append(FieldError((name,), message or "could not decode the section as JSON"))
    if errors:
        return _failure("decode_failed", errors)
    return validate_outputs(sig.output_model, data)


def _parse(sig: type[Signature], text: str) -> ParseResult:
    model = sig.output_model
    stripped = text.strip()
    if _fast_path_ok(stripped):
        try:
            return ParseResult(value=_values(model.model_validate_json(stripped)))
        except ValidationError:
            pass  # not clean JSON, or a value that needs decoding first: take the full path
    sections = split_marker_sections(text)
    if sections is not None:
        from_sections = _from_sections(sig, sections)
        if from_sections is not None:
            return from_sections
    extraction = extract_candidates(text)
    if not extraction.candidates:
        reason = extraction.error or "no JSON found"
        return _failure("decode_failed", [FieldError(extraction.error_path, reason)])
    first_failure: ParseResult | None = None
    for candidate in reversed(extraction.candidates):  # the last one that validates wins
        result = validate_outputs(model, candidate.value)
        if result.ok:
            return result
        first_failure = first_failure or result
    assert first_failure is not None
    if extraction.limit is not None:  # the answer itself was past a limit: say that
        return _failure("decode_failed", [FieldError(extraction.limit_path, extraction.limit)])
    return first_failure


def parse_outputs(
    sig: type[Signature], text: str, *, max_json_depth: int | None = None
) -> ParseResult:
    """Parse a completion into the signature's typed outputs. Never raises.

    The text may be bare JSON, fenced (```json or untagged), wrapped in prose or tags, written
    in ``[[ ## field ## ]]`` sections, or slightly malformed (trailing commas, single quotes,
    comments, Python literals, ...). When several JSON values appear, the last that validates
    wins. Union fields dispatch on ``_type``, with a structural fallback.

    Example:
        ```python
        result = ts.parse.parse_outputs(Decide, completion_text)
        if result.ok:
            result.value["action"]
        else:
            result.error.kind, [str(e) for e in result.error.errors]
        ```

    Args:
        sig: The signature whose output fields to fill.
        text: The completion text.
        max_json_depth: Deepest nesting of objects and arrays read (default 256; `Predict`
            passes its LM's ``max_json_depth``). Deeper output is a ``decode_failed`` error
            naming the limit.

    Returns:
        A `ParseResult`: ``value`` (field name to typed value) or ``error`` (kind and errors).
    """
    with depth_limit(max_json_depth):
        try:
            return _parse(sig, text)
        except RecursionError:
            return _too_deep_to_validate()
        except Exception as exc:  # a user validator may raise anything; the pipeline does not
            return _crashed(exc)


# -- Pydantic errors as FieldErrors; a user's value for one field --

_SHOW_INPUT = {
    "literal_error",
    "enum",
    "int_parsing",
    "float_parsing",
    "bool_parsing",
    "int_from_float",
    "string_pattern_mismatch",
    "greater_than",
    "greater_than_equal",
    "less_than",
    "less_than_equal",
}


def _trim(value: object, limit: int = 40) -> str:
    """A short JSON rendering of a value, cut at ``limit`` characters."""
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def field_errors(exc: ValidationError) -> list[FieldError]:
    """One `FieldError` per Pydantic error, with paths as the model sees its output."""
    out = []
    for err in exc.errors(include_url=False):
        path = tuple(p for p in err["loc"] if not (isinstance(p, str) and p.startswith(TAG_PREFIX)))
        message = err["msg"]
        if err["type"] in _SHOW_INPUT:
            message = f"{message}, got {_trim(err.get('input'))}"
        out.append(FieldError(path, message))
    return out


def field_value(
    model: type[BaseModel], name: str, value: Any, annotation: Any
) -> tuple[Any, list[FieldError]]:
    """``value`` validated as field ``name`` of ``model``: the typed value, or the problems.

    ``annotation`` is the field's type as the user declared it (the signature's, not the
    tagged model's). Paths in the problems start at ``name``.
    """
    holder = model.model_construct()
    try:
        model.__pydantic_validator__.validate_assignment(holder, name, value)
    except ValidationError as exc:
        if not _holds_models(value):
            return value, field_errors(exc)
        try:
            tagged = to_jsonable(value, annotation)
            model.__pydantic_validator__.validate_assignment(holder, name, tagged)
        except ValidationError as again:  # its paths name the nested field at fault
            return value, field_errors(again)
        except (TypeError, ValueError) as unwritable:  # it says what, not "expected a Doc"
            return value, [FieldError((name,), str(unwritable))]
    return getattr(holder, name), []


def _holds_models(value: Any, depth: int = 0) -> bool:
    if isinstance(value, BaseModel):
        return True
    if depth > 8:
        return False
    if isinstance(value, dict):
        return any(_holds_models(v, depth + 1) for v in value.values())
    if isinstance(value, (list, tuple, set, frozenset)):
        return any(_holds_models(v, depth + 1) for v in value)
    return False
