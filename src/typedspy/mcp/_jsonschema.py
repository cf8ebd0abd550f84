"""Validation of remote values against schemas that have no Pydantic model (jsonschema).

A remote MCP tool's ``inputSchema`` and ``outputSchema`` are plain JSON Schema; `jsonschema`
checks instances against them and reports each violation's path (ADR-019). The schemas come
from the server, so checking with them must not do what the server asks (ADR-053):

- nothing is retrieved: a ``$ref`` resolves within the schema itself (an empty
  ``referencing.Registry``), and one that does not is a `SchemaError` when the tool is listed;
- checking is bounded: nesting past 100 objects and arrays is a `SchemaError` when the tool
  is listed, a ``$ref`` cycle that never moves into the value one when it is reached, so is
  applying more than 100,000 subschemas (plus 20 a value) to one value (references that
  multiply: each definition naming the next twice is 2^n for n of them), and ``uniqueItems``
  hashes the items (jsonschema compared every pair of objects);
- patterns run on RE2 (``google-re2``, in the ``mcp`` extra): ``pattern``,
  ``patternProperties`` and ``additionalProperties`` beside them are replaced with keywords
  that match in linear time, and a pattern RE2 cannot compile is a `SchemaError` when the tool
  is listed.

Python's ``re`` backtracks, so ``^(a+)+$`` takes about 2^n steps on ``"a" * n + "!"`` and
blocks the event loop; RE2 has no backtracking and answers in time linear in the text. What it
gives up (backreferences, lookaround) is refused: a pattern it cannot compile is a
`PatternError`, never a fallback to ``re`` (ADR-053).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator
from typing import Any, Protocol, cast

import re2  # type: ignore[import-untyped]
import referencing.jsonschema
from jsonschema import validators
from jsonschema.exceptions import (
    ValidationError as _Violation,
)
from referencing import Registry
from referencing.exceptions import Unresolvable

from typedspy._text import cut_middle
from typedspy._types import FieldError, Path, format_path
from typedspy.errors import SchemaError

__all__ = ["Checker", "violation_errors"]

_MAX_ERRORS = 20
_MAX_MESSAGE = 300
_MAX_MEMORY = 8 << 20  # bytes one compiled pattern may use (RE2's default): bounds compiling too
_MAX_NESTING = 100  # objects and arrays in a schema; checking recurses about 8 frames a level
# Subschemas applied in checking one value (jsonschema's evolve: descending, a $ref, anyOf...):
# a base, and more for each value in it. About 10 µs each: 2^20 took minutes.
_MAX_STEPS = 100_000
_STEPS_PER_VALUE = 20
# A check runs start to end on one thread (no await inside), so the count is the thread's.
_STEPS = threading.local()
# Where a schema holds subschemas (every draft's applicators): one, a map of, a list of.
_ONE = (
    "additionalItems",
    "additionalProperties",
    "contains",
    "else",
    "if",
    "items",
    "not",
    "propertyNames",
    "then",
    "unevaluatedItems",
    "unevaluatedProperties",
)
_MAP = (
    "$defs",
    "definitions",
    "dependencies",
    "dependentSchemas",
    "patternProperties",
    "properties",
)
_LIST = ("allOf", "anyOf", "items", "oneOf", "prefixItems")
_REFS = ("$ref", "$dynamicRef", "$recursiveRef")


class PatternError(ValueError):
    """A pattern RE2 cannot compile; the message says why (RE2's own words)."""


class Regex(Protocol):
    """A compiled RE2 pattern (the part typedspy uses)."""

    def search(self, text: str) -> object | None:
        """The first match anywhere in ``text``, or None."""


@functools.lru_cache(maxsize=512)
def compiled(pattern: str) -> Regex:
    """``pattern`` compiled by RE2 (cached).

    Raises:
        PatternError: RE2 cannot compile it: a backreference, lookaround, a repetition past
            1,000, a syntax error, or more than 8 MiB of automaton.
    """
    options = re2.Options()
    options.log_errors = False  # the error is raised, not printed to stderr
    options.max_mem = _MAX_MEMORY
    try:
        regex: Regex = re2.compile(pattern, options)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else exc
        text = reason.decode(errors="replace") if isinstance(reason, bytes) else str(reason)
        raise PatternError(text) from None
    return regex


class Checker:
    """A compiled validator for one schema (draft chosen by ``$schema``, 2020-12 by default)."""

    def __init__(self, schema: dict[str, Any], *, where: str) -> None:
        """Compile ``schema``; check that every reference resolves and every pattern compiles.

        Raises:
            SchemaError: It is not valid JSON Schema, a ``$ref`` points outside it, or a
                pattern cannot run on RE2; ``where`` and the schema path name it.
        """
        cls = validators.validator_for(schema, default=validators.Draft202012Validator)
        _check_nesting(schema, where)
        meta = validators.validator_for(cls.META_SCHEMA, default=cls)
        checker = _on_re2(meta)(cls.META_SCHEMA, format_checker=meta.FORMAT_CHECKER)
        invalid = next(checker.iter_errors(schema), None)
        if invalid is not None:
            raise SchemaError(f"{where} is not valid JSON Schema: {invalid.message}")
        _check_evaluable(schema, cls, where)
        self._where = where
        self._validator = _on_re2(cls)(schema, registry=Registry())

    def errors(self, instance: Any) -> list[FieldError]:
        """One `FieldError` per violation (at most 20), deepest paths first; empty when valid.

        Raises:
            SchemaError: The schema cannot be evaluated (a reference or pattern the listing
                check did not reach); nothing is retrieved and nothing backtracks.
        """
        steps = _MAX_STEPS + _STEPS_PER_VALUE * _values(instance)
        _STEPS.left = steps
        try:
            found = sorted(self._validator.iter_errors(instance), key=_depth, reverse=True)
        except _TooManySteps:
            raise SchemaError(
                f"{self._where}: checking a value applied more than {steps:,} subschemas "
                "(100,000 and 20 a value in it): references in the schema multiply (such as "
                "definitions that each name the next twice)"
            ) from None
        except Unresolvable as exc:
            raise SchemaError(f"{self._where}: {_unresolved(str(exc.ref), None)}") from None
        except PatternError as exc:
            raise SchemaError(f"{self._where}: a pattern {_cannot_run(exc)}") from None
        except RecursionError:
            raise SchemaError(
                f"{self._where}: checking a value recursed without end: a $ref cycle that never "
                "moves into the value (such as {'$ref': '#'})"
            ) from None
        finally:
            _STEPS.left = None
        return [_field_error(err) for err in found[:_MAX_ERRORS]]


class _TooManySteps(Exception):
    """Checking one value applied more subschemas than `_STEPS` allows."""


def _values(instance: Any) -> int:
    """How many JSON values ``instance`` holds, itself included."""
    count, pending = 0, [instance]
    while pending:
        value = pending.pop()
        count += 1
        if isinstance(value, dict):
            pending += value.values()
        elif isinstance(value, list):
            pending += value
    return count


def violation_errors(error: BaseException | None) -> list[FieldError]:
    """The violation a jsonschema exception describes, when ``error`` is one."""
    return [_field_error(error)] if isinstance(error, _Violation) else []


def _check_evaluable(schema: dict[str, Any], cls: Any, where: str) -> None:
    """Every reference resolves within ``schema`` and every pattern compiles on RE2."""
    specification = referencing.jsonschema.specification_with(cls.ID_OF(cls.META_SCHEMA))
    root = Registry().resolver_with_root(specification.create_resource(schema))
    for path, sub, resolver in _subschemas(schema, root, specification):
        _check_refs(sub, path, resolver, where)
        _check_patterns(sub, path, where)
    # Any object may be a subschema: a $ref points anywhere in the document (``#/x``).
    unevaluated: Path | None = None
    patterned: Path | None = None
    for at, value, _ in _depths(schema):
        keys = cast("dict[str, object]", value) if isinstance(value, dict) else {}
        if "unevaluatedProperties" in keys:
            unevaluated = unevaluated or at
        if isinstance(keys.get("patternProperties"), dict):
            patterned = patterned or at
    if unevaluated is not None and patterned is not None:
        # jsonschema matches patternProperties with `re` when it looks for unevaluated ones.
        raise SchemaError(
            f"{where}: unevaluatedProperties (at {format_path(unevaluated)}) in a schema with "
            f"patternProperties (at {format_path(patterned)}) is not supported: its patterns "
            "would run on Python's backtracking `re`"
        )


def _check_nesting(schema: dict[str, Any], where: str) -> None:
    """No object or array in ``schema`` lies within more than `_MAX_NESTING` others."""
    for path, _, depth in _depths(schema):
        if depth > _MAX_NESTING:
            raise SchemaError(
                f"{where}: {format_path(path)} is nested {depth} objects and arrays deep, "
                f"more than the limit of {_MAX_NESTING} (checking it would recurse too deeply)"
            )


def _check_refs(sub: dict[str, Any], path: Path, resolver: Any, where: str) -> None:
    for keyword in _REFS:
        ref = sub.get(keyword)
        if isinstance(ref, str):
            try:
                resolver.lookup(ref)
            except Unresolvable:
                located = format_path((*path, keyword))
                raise SchemaError(f"{where}: {_unresolved(ref, located)}") from None


def _check_patterns(sub: dict[str, Any], path: Path, where: str) -> None:
    located: list[tuple[Path, object]] = [((*path, "pattern"), sub.get("pattern"))]
    patterns = sub.get("patternProperties")
    if isinstance(patterns, dict):
        located += [((*path, "patternProperties", key), key) for key in patterns]
    for at, pattern in located:
        if isinstance(pattern, str):
            try:
                compiled(pattern)
            except PatternError as exc:
                raise SchemaError(
                    f"{where}: the pattern {pattern!r} at {format_path(at)} {_cannot_run(exc)}"
                ) from None


def _subschemas(
    schema: dict[str, Any], root: Any, specification: Any
) -> Iterator[tuple[Path, dict[str, Any], Any]]:
    """Each subschema (object) with its path and the resolver in its scope (``$id``)."""
    pending: list[tuple[Path, Any, Any]] = [((), schema, root)]
    while pending:  # a stack, not recursion: as deep as the schema, bounded by its size
        path, sub, parent = pending.pop()
        if not isinstance(sub, dict):
            continue
        resolver = parent.in_subresource(specification.create_resource(sub)) if path else parent
        yield path, sub, resolver
        for key in _ONE:
            pending.append(((*path, key), sub.get(key), resolver))
        for key in _MAP:
            children = sub.get(key)
            if isinstance(children, dict):
                pending += [((*path, key, k), v, resolver) for k, v in children.items()]
        for key in _LIST:
            children = sub.get(key)
            if isinstance(children, list):
                pending += [((*path, key, i), v, resolver) for i, v in enumerate(children)]


def _depths(schema: object) -> Iterator[tuple[Path, object, int]]:
    """Each object and array in ``schema`` with its path and how many enclose it."""
    pending: list[tuple[Path, object, int]] = [((), schema, 0)]
    while pending:  # a stack: the depth is what is being bounded
        path, value, depth = pending.pop()
        items = value.items() if isinstance(value, dict) else enumerate(value)  # type: ignore[arg-type]
        yield path, value, depth
        if depth <= _MAX_NESTING:
            pending += [
                ((*path, key), item, depth + 1)
                for key, item in items
                if isinstance(item, dict | list)
            ]


def _unresolved(ref: str, located: str | None) -> str:
    at = f" at {located}" if located else ""
    return (
        f"$ref {ref!r}{at} does not resolve within the schema (references to other "
        "documents are never retrieved)"
    )


def _cannot_run(exc: PatternError) -> str:
    return (
        f"cannot run on RE2 ({exc}): patterns from an MCP server must be RE2 patterns "
        "(no backreferences or lookaround), which match in linear time"
    )


@functools.cache
def _on_re2(cls: Any) -> Any:
    """``cls`` with the keywords that match patterns replaced by RE2 ones.

    jsonschema picks a subschema's validator class by its ``$schema`` (``evolve``): the stock
    class would run that subschema's patterns on ``re``, so the class chosen is put on RE2 too.
    Each subschema applied passes here, so here checking one value is counted (`_STEPS`).
    """
    extended = _extended(cls)

    def evolve(self: Any, **changes: Any) -> Any:
        left: int | None = getattr(_STEPS, "left", None)
        if left is not None:
            if left <= 0:
                raise _TooManySteps
            _STEPS.left = left - 1
        schema = changes.setdefault("schema", self.schema)
        chosen = _on_re2(validators.validator_for(schema, default=cls))
        for field in type(self).__attrs_attrs__:
            if field.init and field.alias not in changes:
                changes[field.alias] = getattr(self, field.name)
        return chosen(**changes)

    extended.evolve = evolve
    return extended


def _extended(cls: Any) -> Any:
    return validators.extend(
        cls,
        {
            "pattern": _pattern,
            "patternProperties": _pattern_properties,
            "additionalProperties": _additional_properties,
            "uniqueItems": _unique_items,
        },
    )


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[Any]:
    if validator.is_type(instance, "string") and not compiled(pattern).search(instance):
        yield _Violation(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(
    validator: Any, patterns: dict[str, Any], instance: Any, schema: Any
) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        regex = compiled(pattern)
        for key, value in instance.items():
            if regex.search(key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)


def _additional_properties(
    validator: Any, additional: Any, instance: Any, schema: Any
) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    properties = schema.get("properties", {})
    patterns = [compiled(p) for p in schema.get("patternProperties", {})]
    extras = sorted(
        (k for k in instance if k not in properties and not any(r.search(k) for r in patterns)),
        key=str,
    )
    if validator.is_type(additional, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], additional, path=extra)
    elif not additional and extras:
        shown = ", ".join(repr(extra) for extra in extras)
        if patterns:
            verb = "does" if len(extras) == 1 else "do"
            regexes = ", ".join(repr(p) for p in sorted(schema["patternProperties"]))
            yield _Violation(f"{shown} {verb} not match any of the regexes: {regexes}")
        else:
            verb = "was" if len(extras) == 1 else "were"
            yield _Violation(f"Additional properties are not allowed ({shown} {verb} unexpected)")


def _unique_items(validator: Any, unique: Any, instance: Any, schema: Any) -> Iterator[Any]:
    """Items compared by hashing: jsonschema compares every pair of unhashable ones."""
    if unique and validator.is_type(instance, "array"):
        keys = [_equality_key(item) for item in instance]
        if len(set(keys)) < len(keys):
            yield _Violation(f"{instance!r} has non-unique elements")


def _equality_key(value: Any) -> Any:
    """A hashable key equal for values JSON Schema calls equal (1 == 1.0, true != 1)."""
    if isinstance(value, dict):
        return ("object", frozenset((k, _equality_key(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return ("array", tuple(_equality_key(v) for v in value))
    return (type(value) is bool, value)


def _depth(err: Any) -> int:
    return len(err.absolute_path)


def _field_error(err: Any) -> FieldError:
    # The message quotes the value first: a long one is cut in the middle.
    return FieldError(tuple(err.absolute_path), cut_middle(str(err.message), _MAX_MESSAGE))
