"""`parse_outputs`: completion text to typed outputs, as a result value; it never raises."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from typedspy._json import active_depth, depth_limit
from typedspy._types import FailureKind, FieldError
from typedspy.parse._extract import decode_section, extract_candidates, split_marker_sections
from typedspy.parse._report import field_errors
from typedspy.signature import Signature, decode_json_once

__all__ = ["ParseFailure", "ParseResult", "parse_outputs", "validate_outputs"]

# Pydantic's JSON reader (jiter) refuses nesting past about 200 levels by itself; a lower
# max_json_depth must be checked before its fast path can accept a value.
_JITER_DEPTH = 200


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


def _fast_path_ok(text: str) -> bool:
    # NaN/Infinity must reach the lenient decoder, which keeps numeric fields from accepting them.
    if text[:1] != "{" or text[-1:] != "}" or "NaN" in text or "Infinity" in text:
        return False
    max_depth = active_depth()
    # Nesting cannot pass the bracket count; past it the full path checks the depth itself.
    return max_depth >= _JITER_DEPTH or text.count("{") + text.count("[") <= max_depth


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


def _section_value(annotation: Any, text: str) -> tuple[bool, object, str | None]:
    """A marker section's value: text for ``str`` (and ``Optional[str]``), else JSON.

    A ``Literal`` section that is not JSON is taken as the bare text (``high``, not
    ``"high"``), for validation to check.
    """
    members = get_args(annotation) if get_origin(annotation) in (Union, UnionType) else ()
    non_null = [a for a in members if a is not type(None)]
    if annotation is str:
        return True, text, None
    if non_null == [str]:
        return True, None if text in ("null", "None") else text, None
    ok, value, message = decode_section(text)
    literal = non_null[0] if len(non_null) == 1 else annotation
    if not ok and get_origin(literal) is Literal:
        return True, text, None
    return ok, value, message


def _from_sections(sig: type[Signature], sections: dict[str, str]) -> ParseResult | None:
    outputs = sig.output_fields
    if not outputs.keys() & sections.keys():
        return None
    data: dict[str, Any] = {}
    errors: list[FieldError] = []
    for name, info in outputs.items():
        if name not in sections:
            continue
        ok, decoded, message = _section_value(info.annotation, sections[name])
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
