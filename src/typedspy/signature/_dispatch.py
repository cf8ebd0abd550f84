"""The `_type` tag of union members: names, resolution, dispatch, and values that carry it.

`UnionInfo` is what one rewritten union consults at validation time (ADR-002): a `_type` that
names a member is authoritative; without it, the member whose required fields are present;
otherwise one error at the union listing each member's complaint. `to_jsonable` goes the other
way: Python values as JSON-ready data, union members carrying their `_type`.
"""

from __future__ import annotations

import json
import types
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, Union, cast, get_args, get_origin

from pydantic import (
    BaseModel,
    BeforeValidator,
    Discriminator,
    PlainValidator,
    TypeAdapter,
    ValidationError,
    WithJsonSchema,
    WrapValidator,
)
from pydantic.fields import FieldInfo
from pydantic_core import PydanticCustomError, to_jsonable_python

from typedspy._json import MAX_JSON_DEPTH
from typedspy._json import loads as bounded_loads

__all__ = [
    "NOMATCH_TAG",
    "OTHER_TAG",
    "TAG_PREFIX",
    "TYPE_KEY",
    "UnionInfo",
    "decode_json_once",
    "is_model",
    "is_union",
    "member_model",
    "pairs_to_dict",
    "qualified_name",
    "resolve_name",
    "strip_type_key",
    "to_jsonable",
    "to_jsonable_fields",
    "union_models",
    "unsendable",
    "user_discriminated",
    "wire_names",
]

TYPE_KEY = "_type"
TAG_PREFIX = "\ue000"  # private-use char: error locations starting with it are union choices
OTHER_TAG = TAG_PREFIX + "other"
NOMATCH_TAG = TAG_PREFIX + "nomatch"
_MISSING = object()


def is_model(tp: object) -> bool:
    """Whether ``tp`` is a Pydantic model class."""
    return isinstance(tp, type) and issubclass(tp, BaseModel)


def member_model(tp: object) -> type[BaseModel] | None:
    """The model a union member is, also written ``Annotated[Model, ...]``; else None.

    A model written as something else (its ``WithJsonSchema`` no object, which a validator of
    its own reads, ``Annotated[Cat, BeforeValidator(from_name), WithJsonSchema(text)]``) is
    no model member: its replies carry no `_type`, and it is matched as the value it is.
    """
    while get_origin(tp) is Annotated:
        if _written_otherwise(getattr(tp, "__metadata__", ())):
            return None
        tp = get_args(tp)[0]
    return tp if is_model(tp) else None  # type: ignore[return-value]


def _written_otherwise(metadata: tuple[Any, ...]) -> bool:
    shown = [
        m.json_schema
        for m in metadata
        if isinstance(m, WithJsonSchema) and m.mode != "serialization"
    ]
    reads = any(isinstance(m, (BeforeValidator, PlainValidator, WrapValidator)) for m in metadata)
    return reads and any((schema or {}).get("type") != "object" for schema in shown)


def is_union(tp: object) -> bool:
    return get_origin(tp) in (Union, types.UnionType)


def qualified_name(cls: type) -> str:
    # Classes defined inside functions have "<locals>" in their qualname; users never write that.
    return cls.__qualname__.rsplit("<locals>.", 1)[-1]


def wire_names(models: list[type[BaseModel]]) -> list[str]:
    """The `_type` value of each model in one union.

    ``__name__`` where it is unique within the union, else the qualified name (``Tasks.Created``),
    else module and qualified name, else (classes made by a factory share all three) that name
    numbered in declaration order (``mod.X_1``, ``mod.X_2``).
    """
    simple = [m.__name__ for m in models]
    qualified = [qualified_name(m) for m in models]
    out = []
    for m, s, q in zip(models, simple, qualified, strict=True):
        if simple.count(s) == 1:
            out.append(s)
        elif qualified.count(q) == 1:
            out.append(q)
        else:
            out.append(f"{m.__module__}.{q}")
    for name in {n for n in out if out.count(n) > 1}:
        number = 0
        for i, given in enumerate(out):
            if given == name:
                number += 1
                while f"{name}_{number}" in out:
                    number += 1
                out[i] = f"{name}_{number}"
    return out


def _segments(name: str) -> list[str]:
    return [s for s in name.replace("::", ".").split(".") if s]


def _norm(name: str) -> str:
    return "".join(ch for ch in name.lower() if ch not in "_- ")


def resolve_name(given: str, names: list[str]) -> int | None:
    """Index of the member ``given`` names: exact, qualified tail, then case/separator-blind."""
    if given in names:
        return names.index(given)
    given_segs = _segments(given)
    for normalise in (lambda s: s, _norm):
        g = [normalise(s) for s in given_segs]
        hits = []
        for i, name in enumerate(names):
            n = [normalise(s) for s in _segments(name)]
            k = min(len(g), len(n))
            if k and g[-k:] == n[-k:]:
                hits.append(i)
        if len(hits) == 1:
            return hits[0]
        if len(hits) > 1:
            return None  # ambiguous: "Created" when both Tasks.Created and Events.Created exist
    return None


def strip_type_key(value: Any) -> Any:
    if isinstance(value, dict) and TYPE_KEY in value:
        return {k: v for k, v in value.items() if k != TYPE_KEY}
    return value


def decode_json_once(value: Any) -> Any:
    """Decode a string that holds a JSON object or array (double-encoded output), once."""
    if isinstance(value, str):
        text = value.strip()
        if text[:1] in ("{", "[") and text[-1:] in ("}", "]"):
            try:
                decoded = bounded_loads(text)  # a JSON string as deep as it likes: bounded
            except ValueError:
                return value
            if isinstance(decoded, (dict, list)):
                return decoded
    return value


def pairs_to_dict(value: Any) -> Any:
    """Accept a mapping sent as ``[{"key": k, "value": v}, ...]`` (ADR-003: dicts under strict)."""
    value = decode_json_once(value)
    if isinstance(value, list) and all(
        isinstance(p, dict) and set(p) == {"key", "value"} for p in value
    ):
        return {p["key"]: p["value"] for p in value}
    return value


def _short(exc: ValidationError, limit: int = 2) -> str:
    parts = []
    for err in exc.errors(include_url=False)[:limit]:
        loc = ".".join(str(p) for p in err["loc"] if not str(p).startswith(TAG_PREFIX))
        parts.append(f"{loc}: {err['msg']}" if loc else err["msg"])
    more = exc.error_count() - limit
    return "; ".join(parts) + (f" (+{more} more)" if more > 0 else "")


@dataclass
class UnionInfo:
    """What one tagged union needs at validation time."""

    names: list[str]
    classes: list[type[BaseModel]]
    choice_types: list[Any]
    has_other: bool
    other_takes_objects: bool = False
    _adapters: list[TypeAdapter[Any]] = field(default_factory=list)
    _required: list[set[str]] = field(default_factory=list)
    _declared: list[set[str]] = field(default_factory=list)
    _resolved: dict[str, int | None] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for cls in self.classes:
            keys = {f.alias or n for n, f in cls.model_fields.items()} | set(cls.model_fields)
            req = {f.alias or n for n, f in cls.model_fields.items() if f.is_required()}
            self._declared.append(keys)
            self._required.append(req)

    def adapters(self) -> list[TypeAdapter[Any]]:
        if not self._adapters:  # built lazily: only the structural fallback needs them
            self._adapters = [TypeAdapter(tp) for tp in self.choice_types]
        return self._adapters

    def resolve(self, given: object) -> int | None:
        if not isinstance(given, str):
            return None
        if given not in self._resolved:
            if len(self._resolved) > 256:
                self._resolved.clear()  # bounded: the model may invent many names
            self._resolved[given] = resolve_name(given, self.names)
        return self._resolved[given]

    def structural(self, value: dict[str, Any]) -> int | None:
        """The member a ``_type``-less object is meant to be (ADR-003 fallback order).

        Members whose required fields are all present are eligible; a single eligible member
        wins, else the one sharing the most keys with the value, else the first of the tied
        ones that validates. The chosen member reports its own errors at their own paths.
        """
        eligible = [i for i, req in enumerate(self._required) if req <= value.keys()]
        if len(eligible) <= 1:
            return eligible[0] if eligible else None
        scores = {i: sum(1 for k in value if k in self._declared[i]) for i in eligible}
        top = max(scores.values())
        best = [i for i in eligible if scores[i] == top]
        if len(best) == 1:
            return best[0]
        adapters = self.adapters()
        for i in best:
            try:
                adapters[i].validate_python(value)
            except ValidationError:
                continue
            return i
        return None

    def discriminate(self, value: Any) -> str:
        if isinstance(value, dict):
            given = value.get(TYPE_KEY, _MISSING)
            if given is not _MISSING:
                index = self.resolve(given)
                return NOMATCH_TAG if index is None else TAG_PREFIX + self.names[index]
            index = self.structural(value)
            if index is not None:
                return TAG_PREFIX + self.names[index]
            # An object no model fits: hand it to the other members only if one can take an
            # object; otherwise the error should list each model's complaint, not "not a str".
            return OTHER_TAG if self.other_takes_objects else NOMATCH_TAG
        for name, cls in zip(self.names, self.classes, strict=True):
            if isinstance(value, cls):
                return TAG_PREFIX + name
        return OTHER_TAG if self.has_other else NOMATCH_TAG

    def no_match(self, value: Any) -> Any:
        expected = ", ".join(self.names)
        if isinstance(value, dict) and TYPE_KEY in value:
            raise PydanticCustomError(
                "union_tag_invalid",
                "_type {given} names no member of this union (expected one of: {expected})",
                {"given": json.dumps(value[TYPE_KEY], default=str)[:60], "expected": expected},
            )
        if not isinstance(value, dict):
            raise PydanticCustomError(
                "union_no_match",
                "expected an object with _type one of: {expected}",
                {"expected": expected},
            )
        complaints = []
        for name, adapter in zip(self.names, self.adapters(), strict=True):
            try:
                adapter.validate_python(value)
            except ValidationError as exc:
                complaints.append(f"{name}: {_short(exc)}")
        raise PydanticCustomError(
            "union_no_match",
            "no member of the union matched ({detail})",
            {"detail": " | ".join(complaints)},
        )


def user_discriminated(metadata: list[Any] | tuple[Any, ...]) -> bool:
    """Whether metadata declares the user's own discriminator for a union.

    ``Field(discriminator=...)`` or ``Discriminator(...)``; pass a field as ``[info]``.
    """
    for m in metadata:
        if isinstance(m, Discriminator):
            return True
        if isinstance(m, FieldInfo) and (
            m.discriminator is not None or user_discriminated(m.metadata)
        ):
            return True
    return False


# -- values written with their `_type` --


def union_models(annotation: Any) -> list[type[BaseModel]]:
    """The models of union ``annotation`` when it has two or more non-null members (tagged)."""
    args = [a for a in get_args(annotation) if a is not type(None)]
    models = [member_model(a) for a in args] if len(args) >= 2 else []
    return [m for m in models if m is not None]


def _member_annotation(annotation: Any, value: Any) -> Any:
    """The member of a union annotation that ``value`` is an instance of (else Any)."""
    for arg in get_args(annotation):
        base = get_args(arg)[0] if get_origin(arg) is Annotated else arg
        origin = get_origin(base) or base
        if isinstance(origin, type) and isinstance(value, origin):
            return base
    return Any


def to_jsonable(value: Any, annotation: Any = None) -> Any:
    """Render ``value`` as JSON-ready data (dicts, lists, str, numbers, bool, None).

    Models become objects keyed by alias. Where ``annotation`` puts a model in a union of two or
    more members, the object starts with ``_type``, named as the schema names it; without an
    annotation every model gets ``_type`` with its class name, so the model can tell them apart.

    Example:
        ```python
        ts.signature.to_jsonable(SpawnTask(description="x", priority="high"))
        # {"_type": "SpawnTask", "description": "x", "priority": "high"}
        ```

    Raises:
        ValueError: ``value`` nests containers deeper than `MAX_JSON_DEPTH` levels (or contains
            itself), or holds a value Pydantic cannot serialise (an ``object()``, a function,
            bytes that are not UTF-8), or a model instance with a field left unset.
    """
    return _jsonable(value, annotation, MAX_JSON_DEPTH)


def unsendable(value: Any, annotation: Any = None) -> str | None:
    """Why ``value`` cannot be written as JSON for the model to read; None when it can."""
    try:
        json.dumps(to_jsonable(value, annotation), ensure_ascii=False)
    except UnicodeDecodeError as exc:
        return f"bytes that are not UTF-8 text ({exc.reason} at byte {exc.start})"
    except (TypeError, ValueError) as exc:  # an integer past sys.get_int_max_str_digits()
        return str(exc)
    return None


def _jsonable(value: Any, annotation: Any, room: int) -> Any:
    """`to_jsonable` with ``room`` levels of containers left (no recursion past it)."""
    if room < 0:
        raise ValueError(
            f"nested deeper than {MAX_JSON_DEPTH} levels (max_json_depth), or contains itself"
        )
    origin = get_origin(annotation)
    if origin is Annotated:
        inner = get_args(annotation)[0]
        if user_discriminated(annotation.__metadata__):
            # The user's own Literal tag tells the members apart: no `_type` (as in the schema).
            return _jsonable(value, _member_annotation(inner, value), room)
        return _jsonable(value, inner, room)
    if origin in (Union, types.UnionType):
        models = union_models(annotation)
        if isinstance(value, BaseModel) and type(value) in models:
            name = wire_names(models)[models.index(type(value))]
            return _model(value, name, room)
        return _jsonable(value, _member_annotation(annotation, value), room)
    if isinstance(value, BaseModel):
        tag = type(value).__name__ if annotation is None else None
        return _model(value, tag, room)
    if isinstance(value, Mapping):
        value_type = get_args(annotation)[1] if len(get_args(annotation)) == 2 else None
        return {str(k): _jsonable(v, value_type, room - 1) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        args = get_args(annotation)
        if origin is tuple and args and args[-1] is not Ellipsis:
            return [_jsonable(v, a, room - 1) for v, a in zip(value, args, strict=False)]
        item = args[0] if args else None
        return [_jsonable(v, item, room - 1) for v in value]
    if isinstance(value, Iterator):
        # Pydantic would read it into a list, leaving nothing for the next reading (the value
        # is checked, then sent), or read for ever (an endless generator).
        kind = type(cast("object", value)).__name__
        raise TypeError(f"a {kind} is an iterator, which reading uses up: make it a list")
    return to_jsonable_python(value)


def to_jsonable_fields(
    values: Mapping[str, Any], fields: Mapping[str, FieldInfo]
) -> dict[str, Any]:
    """``values`` by name as JSON-ready data, each rendered by its field's annotation.

    A name that is no field is rendered without one (its models get ``_type``, as `to_jsonable`).
    """
    return {
        name: to_jsonable(value, fields[name].annotation if name in fields else None)
        for name, value in values.items()
    }


def _model(value: BaseModel, tag: str | None, room: int) -> dict[str, Any]:
    out: dict[str, Any] = {TYPE_KEY: tag} if tag else {}
    for name, info in type(value).model_fields.items():
        if info.exclude:
            continue
        annotation: Any = info.annotation
        if user_discriminated([info]):
            annotation = Annotated[annotation, info]
        try:
            field = getattr(value, name)
        except AttributeError:  # `model_construct()` leaves a field it was not given unset
            raise ValueError(f"{type(value).__name__}.{name} is not set") from None
        if info.exclude_if is not None and info.exclude_if(field):  # as model_dump leaves it
            continue
        out[info.alias or name] = _jsonable(field, annotation, room - 1)
    return out
