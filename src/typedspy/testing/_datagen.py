"""Deterministic JSON values that validate against a JSON schema.

The stand-in server answers structured-output requests with these, and tests use them as
fixtures. The same ``(schema, seed)`` always gives the same value; changing the seed rotates
``anyOf`` branches and ``enum`` values so successive calls exercise different union variants.

Limits: ``pattern`` is met by trying a handful of simple candidate strings and falling back to
a fixed string that may not match; ``not``, ``if``/``then``/``else``, ``dependent*`` and
``patternProperties`` are ignored; ``allOf`` is handled by merging its branches shallowly.
"""

from __future__ import annotations

import math
import re
import uuid
from collections.abc import Mapping
from typing import NamedTuple, cast

from typedspy.errors import SchemaError

__all__ = ["generate_instance"]

# Once a $ref recursion is more than this many expansions deep, unions and nullable types take
# their null branch, arrays stay as short as allowed and optional fields are left out.
_RECURSION_SOFT_LIMIT = 3
# A schema nested this deep (through $refs or literally) has no finite instance we can reach.
_NESTING_HARD_LIMIT = 64

_FORMAT_VALUES: Mapping[str, str] = {
    "date-time": "2024-01-02T03:04:05Z",
    "date": "2024-01-02",
    "time": "03:04:05Z",
    "duration": "P1DT2H",
    "email": "user@example.com",
    "idn-email": "user@example.com",
    "hostname": "example.com",
    "idn-hostname": "example.com",
    "ipv4": "192.0.2.1",
    "ipv6": "2001:db8::1",
    "uri": "https://example.com/",
    "iri": "https://example.com/",
    "uri-reference": "/example",
}
_PATTERN_CANDIDATES = (
    "abc", "a", "A", "Abc", "ABC", "0", "1", "123", "a1", "abc123", "a_b", "a-b", "AB-123",
    "x", "test", "example", "2024-01-02", "2024-01-02T03:04:05Z", "03:04", "+1", "#000000",
    "user@example.com", "https://example.com", "", " ",
)  # fmt: skip
_PATTERN_FALLBACK = "standin"

Schema = Mapping[str, object]


def generate_instance(schema: dict[str, object], *, seed: int = 0) -> object:
    """Build a JSON value that validates against ``schema``.

    Local ``$ref``s (``#``, ``#/$defs/X``, any ``#/...`` pointer) are resolved. The first
    ``anyOf`` met takes branch ``seed % len(branches)``; the k-th one met takes
    ``(seed + k) % len(branches)``. ``enum`` values rotate with the seed, ``const`` is
    honoured, ``type`` lists prefer a non-null type, numbers respect their bounds and
    ``multipleOf``, supported string ``format``s get valid values, arrays get one item unless
    ``minItems``/``maxItems`` say otherwise, and object properties follow schema order.

    Args:
        schema: A JSON schema (a dict).
        seed: Chooses among union branches and enum values.

    Returns:
        A JSON-serialisable value.

    Raises:
        SchemaError: The schema has an unresolvable ``$ref`` or recursion that never ends
            (no finite instance exists).
    """
    return _Generator(schema, seed).value(schema, seed)


class _Generator:
    """Holds the root (for ``$ref``), the union counter and the current nesting."""

    def __init__(self, root: Schema, seed: int) -> None:
        self.root = root
        self.seed = seed
        self.unions = 0
        self.refs: list[str] = []  # $ref expansions on the current path
        self.nesting = 0

    def value(self, schema: object, seed: int) -> object:
        if not isinstance(schema, Mapping):
            # `true` or a malformed sub-schema: anything goes.
            return None
        self.nesting += 1
        try:
            if self.nesting > _NESTING_HARD_LIMIT:
                raise SchemaError("schema nests too deeply to build an instance (endless $ref?)")
            return self._value(cast(Schema, schema), seed)
        finally:
            self.nesting -= 1

    @property
    def deep(self) -> bool:
        # Only recursion counts: a chain of distinct models may nest as deep as it likes.
        recursing = len(set(self.refs)) < len(self.refs)
        return recursing and len(self.refs) > _RECURSION_SOFT_LIMIT

    def _value(self, schema: Schema, seed: int) -> object:
        if "$ref" in schema:
            return self._ref(schema, seed)
        if "const" in schema:
            return schema["const"]
        enum = schema.get("enum")
        if isinstance(enum, list) and enum:
            return enum[seed % len(enum)]
        for key in ("anyOf", "oneOf"):
            branches = schema.get(key)
            if isinstance(branches, list) and branches:
                return self.value(self._pick(branches), seed)
        all_of = schema.get("allOf")
        if isinstance(all_of, list) and all_of:
            return self.value(_merge(schema, all_of), seed)
        return self._typed(schema, _choose_type(schema, self.deep), seed)

    def _ref(self, schema: Schema, seed: int) -> object:
        ref = schema["$ref"]
        target = _resolve(self.root, ref)
        self.refs.append(str(ref))
        try:
            return self.value(target, seed)
        finally:
            self.refs.pop()

    def _pick(self, branches: list[object]) -> object:
        index = (self.seed + self.unions) % len(branches)
        self.unions += 1
        if self.deep:
            # Deep in a recursion, end it: a null branch, else one that recurses no further.
            for predicate in (_is_null, _is_leaf):
                chosen = next((b for b in branches if predicate(b)), None)
                if chosen is not None:
                    return chosen
        return branches[index]

    def _typed(self, schema: Schema, kind: str | None, seed: int) -> object:
        if kind == "object":
            return self._object(schema, seed)
        if kind == "array":
            return self._array(schema, seed)
        if kind == "string":
            return _string(schema, seed)
        if kind in ("integer", "number"):
            return _number(schema, seed, integer=kind == "integer")
        if kind == "boolean":
            return seed % 2 == 0
        return None

    def _object(self, schema: Schema, seed: int) -> dict[str, object]:
        props = schema.get("properties")
        required = schema.get("required")
        needed = set(required) if isinstance(required, list) else set()
        out: dict[str, object] = {}
        if isinstance(props, Mapping):
            for name, sub in props.items():
                if self.deep and name not in needed:
                    continue  # optional fields are where recursion can stop
                out[str(name)] = self.value(sub, seed)
        for name in needed - out.keys():
            out[str(name)] = None  # required but undeclared: any value will do
        return out

    def _array(self, schema: Schema, seed: int) -> list[object]:
        low = _int_bound(schema.get("minItems")) or 0
        high = _int_bound(schema.get("maxItems"))
        count = low if self.deep else max(low, 1)
        if high is not None:
            count = min(count, high)
        prefix = schema.get("prefixItems")
        prefix = prefix if isinstance(prefix, list) else []
        items = schema.get("items", {})
        out: list[object] = []
        for i in range(count):
            sub = prefix[i] if i < len(prefix) else items
            if isinstance(sub, list):  # draft-4 tuple form
                sub = sub[i] if i < len(sub) else {}
            # Each item gets its own seed so enum items differ (helps uniqueItems).
            out.append(self.value(sub, seed + i))
        return out


def _choose_type(schema: Schema, deep: bool) -> str | None:
    declared = schema.get("type")
    if isinstance(declared, str):
        return declared
    if isinstance(declared, list) and declared:
        kinds = [t for t in declared if isinstance(t, str)]
        non_null = [t for t in kinds if t != "null"]
        if deep and "null" in kinds:
            return "null"
        return non_null[0] if non_null else "null"
    if "properties" in schema or "required" in schema:
        return "object"
    if "items" in schema or "prefixItems" in schema:
        return "array"
    if "format" in schema or "pattern" in schema:
        return "string"
    return None


def _is_null(branch: object) -> bool:
    return isinstance(branch, Mapping) and (
        branch.get("type") == "null" or branch.get("const", 0) is None
    )


def _is_leaf(branch: object) -> bool:
    return isinstance(branch, Mapping) and "$ref" not in branch and "properties" not in branch


def _resolve(root: Schema, ref: object) -> object:
    if not isinstance(ref, str) or not ref.startswith("#"):
        raise SchemaError(f"only local $refs can be resolved, got {ref!r}")
    node: object = root
    for raw in ref[1:].split("/")[1:]:
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise SchemaError(f"$ref {ref!r} does not resolve")
    return node


def _merge(schema: Schema, parts: list[object]) -> dict[str, object]:
    merged: dict[str, object] = {k: v for k, v in schema.items() if k != "allOf"}
    for part in parts:
        if not isinstance(part, Mapping):
            continue
        for key, value in part.items():
            if key in ("properties", "$defs") and isinstance(value, Mapping):
                base = merged.get(key)
                merged[key] = {**(base if isinstance(base, Mapping) else {}), **value}
            elif key == "required" and isinstance(value, list):
                base = merged.get("required")
                merged["required"] = [*(base if isinstance(base, list) else []), *value]
            else:
                merged.setdefault(key, value)
    return merged


def _int_bound(value: object) -> int | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return max(0, math.ceil(value))
    return None


def _string(schema: Schema, seed: int) -> str:
    low = _int_bound(schema.get("minLength")) or 0
    high = _int_bound(schema.get("maxLength"))
    fmt = schema.get("format")
    if fmt == "uuid":
        text = str(uuid.UUID(int=(seed * 0x9E3779B97F4A7C15 + 1) % (1 << 128), version=4))
    elif isinstance(fmt, str) and fmt in _FORMAT_VALUES:
        text = _FORMAT_VALUES[fmt]
    elif "pattern" in schema:
        text = _matching(schema["pattern"], low, high)
    else:
        text = "example" if seed == 0 else f"example-{seed}"
    if len(text) < low:
        text += "x" * (low - len(text))
    if high is not None and len(text) > high and "pattern" not in schema and fmt is None:
        text = text[:high]
    return text


def _matching(pattern: object, low: int, high: int | None) -> str:
    """A simple string that ``re.search`` finds ``pattern`` in, or a fixed fallback."""
    try:
        compiled = re.compile(str(pattern))
    except re.error:
        return _PATTERN_FALLBACK
    for candidate in _PATTERN_CANDIDATES:
        if low <= len(candidate) <= (high if high is not None else len(candidate)):
            if compiled.search(candidate):
                return candidate
    return _PATTERN_FALLBACK


def _number(schema: Schema, seed: int, *, integer: bool) -> int | float:
    low, low_open = _limit(schema, "minimum", "exclusiveMinimum", lower=True)
    high, high_open = _limit(schema, "maximum", "exclusiveMaximum", lower=False)
    step = schema.get("multipleOf")
    target: float = 1 + seed % 9 if integer else 1.5 + seed % 9
    if isinstance(step, (int, float)) and not isinstance(step, bool) and step > 0:
        bounds = _Bounds(low, low_open, high, high_open)
        return _multiple(step, bounds, target, integer=integer)
    if integer:
        lo = None if low is None else (math.floor(low) + 1 if low_open else math.ceil(low))
        hi = None if high is None else (math.ceil(high) - 1 if high_open else math.floor(high))
        value = int(target)
        if lo is not None:
            value = max(value, lo)
        if hi is not None:
            value = min(value, hi)
        return value
    if low is not None and (target < low or (low_open and target == low)):
        target = low + 1 if high is None else (low + high) / 2
    if high is not None and (target > high or (high_open and target == high)):
        target = high - 1 if low is None else (low + high) / 2
    return target


def _limit(
    schema: Schema, inclusive: str, exclusive: str, *, lower: bool
) -> tuple[float | None, bool]:
    """The effective bound from an inclusive/exclusive keyword pair, and whether it is open."""
    found: list[tuple[float, bool]] = []
    for key, is_open in ((inclusive, False), (exclusive, True)):
        value = schema.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            found.append((float(value), is_open))
    if not found:
        return None, False
    values = [v for v, _ in found]
    best = max(values) if lower else min(values)
    return best, any(o for v, o in found if v == best)


class _Bounds(NamedTuple):
    low: float | None
    low_open: bool
    high: float | None
    high_open: bool

    def fit(self, v: float) -> bool:
        above = self.low is None or (v > self.low if self.low_open else v >= self.low)
        below = self.high is None or (v < self.high if self.high_open else v <= self.high)
        return above and below


def _multiple(step: float, bounds: _Bounds, target: float, *, integer: bool) -> int | float:
    """A multiple of ``step`` inside the bounds, checked the way validators check it."""
    low = bounds.low
    start = math.ceil(low / step) if low is not None else math.floor(target / step)
    for k in range(start, start + 1000):
        value: int | float = k * step
        if isinstance(step, int) or (integer and float(value).is_integer()):
            value = int(value)
        # Validators test float steps by the quotient, so a float product like 0.07 / 0.01
        # = 7.000000000000001 would fail; skip to a k whose product divides cleanly.
        quotient = value / step
        if (
            bounds.fit(value)
            and quotient == int(quotient)
            and not (integer and isinstance(value, float))
        ):
            return value
    return start * step
