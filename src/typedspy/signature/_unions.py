"""Automatic `_type` tags: rewrite annotations so unions of models dispatch on a `_type` key.

Users declare plain unions (`SpawnTask | CompleteTask | Continue`). For validation, every union
with two or more non-null members of which at least one is a Pydantic model becomes a Pydantic
tagged union with a callable discriminator (ADR-002):

* a `_type` key that names a member is authoritative (only that member is validated, so errors
  name one variant);
* without `_type`, a structural fallback picks the member whose required fields are present and
  that validates, preferring the most matched keys, then declaration order;
* otherwise a single error at the union lists each member's complaint.

Models that contain such unions (at any depth, recursion included) are validated through a
"shadow" subclass whose field annotations are rewritten, and converted back to the user's class
afterwards, so users always get instances of their own models. The JSON schema of every tagged
choice carries a marker (`TAG_MARKER`) that the schema compiler turns into a `_type` const.
"""

from __future__ import annotations

import json
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, Union, cast, get_args, get_origin

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    Discriminator,
    PlainValidator,
    Tag,
    TypeAdapter,
    ValidationError,
    create_model,
)
from pydantic.fields import FieldInfo
from pydantic.json_schema import SkipJsonSchema
from pydantic_core import PydanticCustomError

from typedspy.errors import SchemaError

__all__ = [
    "NOMATCH_TAG",
    "OTHER_TAG",
    "TAG_PREFIX",
    "TYPE_KEY",
    "TypeRewriter",
    "UnionInfo",
    "is_model",
    "user_discriminated",
    "wire_names",
]

TYPE_KEY = "_type"
TAG_PREFIX = "\ue000"  # private-use char: error locations starting with it are union choices
OTHER_TAG = TAG_PREFIX + "other"
NOMATCH_TAG = TAG_PREFIX + "nomatch"
_MISSING = object()
_NO_SCHEMA_ANY: Any = cast(Any, SkipJsonSchema)[Any]  # the no-match choice: not in schemas


def is_model(tp: object) -> bool:
    """Whether ``tp`` is a Pydantic model class."""
    return isinstance(tp, type) and issubclass(tp, BaseModel)


def _is_union(tp: object) -> bool:
    return get_origin(tp) in (Union, types.UnionType)


def _qualified(cls: type) -> str:
    # Classes defined inside functions have "<locals>" in their qualname; users never write that.
    return cls.__qualname__.rsplit("<locals>.", 1)[-1]


def wire_names(models: list[type[BaseModel]]) -> list[str]:
    """The `_type` value of each model in one union.

    ``__name__`` where it is unique within the union, else the qualified name (``Tasks.Created``),
    else module and qualified name, else (classes made by a factory share all three) that name
    numbered in declaration order (``mod.X_1``, ``mod.X_2``).
    """
    simple = [m.__name__ for m in models]
    qualified = [_qualified(m) for m in models]
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


def _resolve_name(given: str, names: list[str]) -> int | None:
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


def _strip_type_key(value: Any) -> Any:
    if isinstance(value, dict) and TYPE_KEY in value:
        return {k: v for k, v in value.items() if k != TYPE_KEY}
    return value


def decode_json_once(value: Any) -> Any:
    """Decode a string that holds a JSON object or array (double-encoded output), once."""
    if isinstance(value, str):
        text = value.strip()
        if text[:1] in ("{", "[") and text[-1:] in ("}", "]"):
            try:
                decoded = json.loads(text)
            except ValueError:
                return value
            if isinstance(decoded, (dict, list)):
                return decoded
    return value


def _pairs_to_dict(value: Any) -> Any:
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
            self._resolved[given] = _resolve_name(given, self.names)
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
            return OTHER_TAG if self.has_other else NOMATCH_TAG
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
    """Whether annotation metadata declares the user's own discriminator for a union."""
    for m in metadata:
        if isinstance(m, Discriminator):
            return True
        if isinstance(m, FieldInfo) and m.discriminator is not None:
            return True
    return False


class TypeRewriter:
    """Rewrites annotations for tagged-union validation; one instance per signature."""

    def __init__(self) -> None:
        self._shadows: dict[type[BaseModel], Any] = {}
        self._needs: dict[type[BaseModel], bool] = {}
        self.unions: list[UnionInfo] = []

    # -- analysis: which models contain something to rewrite (cycle-safe fixpoint) --

    def _direct_needs(self, tp: Any, found: set[type[BaseModel]]) -> bool:
        """Whether ``tp`` itself holds a taggable union or dict; collects the models it names."""
        if is_model(tp):
            found.add(tp)
            return False
        origin, args = get_origin(tp), get_args(tp)
        if origin is Annotated:
            return self._direct_needs(args[0], found)
        if origin is Literal or not args:
            return False
        needs = False
        if _is_union(tp):
            non_null = [a for a in args if a is not type(None)]
            if len(non_null) >= 2 and any(is_model(a) for a in non_null):
                needs = True
        if origin in (dict, Mapping):
            needs = True
        for arg in args:
            needs = self._direct_needs(arg, found) or needs
        return needs

    def _analyse(self, root: Any) -> None:
        found: set[type[BaseModel]] = set()
        self._direct_needs(root, found)
        seen: dict[type[BaseModel], tuple[bool, set[type[BaseModel]]]] = {}
        stack = list(found)
        while stack:
            model = stack.pop()
            if model in seen or model in self._needs:
                continue
            refs: set[type[BaseModel]] = set()
            direct = False
            for info in model.model_fields.values():
                direct = self._direct_needs(info.annotation, refs) or direct
            seen[model] = (direct, refs)
            stack.extend(refs)
        needs = {m: d for m, (d, _) in seen.items()}
        changed = True
        while changed:  # propagate "needs" to every model that refers to a needing model
            changed = False
            for model, (_, refs) in seen.items():
                if not needs[model] and any(needs.get(r) or self._needs.get(r) for r in refs):
                    needs[model] = changed = True
        self._needs.update(needs)
        self._build_shadows([m for m, n in needs.items() if n and m not in self._shadows])

    # -- rewriting --

    def rewrite(self, tp: Any, *, discriminated: bool = False) -> Any:
        """The validation annotation for ``tp``; ``discriminated`` when the user set one."""
        self._analyse(tp)
        return self._rewrite(tp, discriminated)

    def _rewrite(self, tp: Any, discriminated: bool = False) -> Any:
        if is_model(tp):
            return self._shadows.get(tp, tp)
        origin, args = get_origin(tp), get_args(tp)
        if origin is Annotated:
            meta = tp.__metadata__
            inner = self._rewrite(args[0], discriminated or user_discriminated(meta))
            return Annotated[(inner, *meta)] if inner is not args[0] else tp
        if origin is Literal or not args:
            return tp
        if _is_union(tp):
            return self._rewrite_union(tp, args, discriminated)
        new_args = tuple(self._rewrite(a) for a in args)
        if origin in (dict, Mapping):
            return Annotated[dict[new_args[0], new_args[1]], BeforeValidator(_pairs_to_dict)]  # type: ignore[valid-type]
        if all(n is o for n, o in zip(new_args, args, strict=True)):
            return tp
        return cast(Any, origin)[new_args] if isinstance(origin, type) else tp.copy_with(new_args)

    def _rewrite_union(self, tp: Any, args: tuple[Any, ...], discriminated: bool) -> Any:
        non_null = [a for a in args if a is not type(None)]
        nullable = len(non_null) != len(args)
        models = [a for a in non_null if is_model(a)]
        if discriminated or len(non_null) < 2 or not models:
            new_args = tuple(self._rewrite(a) for a in args)
            unchanged = all(n is o for n, o in zip(new_args, args, strict=True))
            return tp if unchanged else _union_of(new_args)
        for model in models:
            _check_no_type_field(model)
        names = wire_names(models)
        others = [self._rewrite(a) for a in non_null if not is_model(a)]
        choice_types = [self._rewrite(m) for m in models]
        info = UnionInfo(
            names=names, classes=models, choice_types=choice_types, has_other=bool(others)
        )
        self.unions.append(info)
        choices: list[Any] = [
            # Models that ignore extra keys ignore `_type` for free; forbid/allow need it stripped.
            Annotated[ct, BeforeValidator(_strip_type_key), Tag(TAG_PREFIX + name)]
            if model.model_config.get("extra") in ("forbid", "allow")
            else Annotated[ct, Tag(TAG_PREFIX + name)]
            for ct, name, model in zip(choice_types, names, models, strict=True)
        ]
        if others:
            other = others[0] if len(others) == 1 else _union_of(others)
            choices.append(Annotated[other, Tag(OTHER_TAG)])
        choices.append(Annotated[_NO_SCHEMA_ANY, PlainValidator(info.no_match), Tag(NOMATCH_TAG)])
        tagged: Any = Annotated[_union_of(choices), Discriminator(info.discriminate)]
        return _union_of([tagged, None]) if nullable else tagged

    def _build_shadows(self, models: list[type[BaseModel]]) -> None:
        """Create every shadow first (so cycles resolve), then give them their annotations."""
        namespace: dict[str, Any] = {}
        pending: list[tuple[type[BaseModel], type[BaseModel], dict[str, str]]] = []
        for model in models:
            placeholders = {name: f"__ts_{id(model)}_{name}" for name in model.model_fields}
            fields: dict[str, Any] = {
                name: (placeholders[name], _copy_info(info))
                for name, info in model.model_fields.items()
            }
            shadow: type[BaseModel] = create_model(
                model.__name__, __base__=model, __module__=model.__module__, **fields
            )
            shadow.__qualname__ = model.__qualname__
            self._shadows[model] = Annotated[shadow, AfterValidator(_to_user(model))]
            pending.append((model, shadow, placeholders))
        for model, _shadow, placeholders in pending:
            for name, info in model.model_fields.items():
                namespace[placeholders[name]] = self._rewrite(
                    info.annotation, info.discriminator is not None
                )
        for _model, built, _ in pending:
            built.model_rebuild(_types_namespace=namespace, force=True)


def _union_of(args: list[Any] | tuple[Any, ...]) -> Any:
    """``Union[args]`` built at run time (a computed type application mypy cannot check)."""
    return cast(Any, Union)[tuple(args)]


def _copy_info(info: FieldInfo) -> FieldInfo:
    return FieldInfo.merge_field_infos(info)


def _to_user(model: type[BaseModel]) -> Callable[[BaseModel], BaseModel]:
    names = list(model.model_fields)

    def convert(shadow: BaseModel) -> BaseModel:
        values = {n: getattr(shadow, n) for n in names}
        user = model.model_construct(_fields_set=set(shadow.model_fields_set), **values)
        if shadow.__pydantic_extra__:
            object.__setattr__(user, "__pydantic_extra__", dict(shadow.__pydantic_extra__))
        return user

    return convert


def _check_no_type_field(model: type[BaseModel]) -> None:
    for name, info in model.model_fields.items():
        aliases = {info.alias, info.validation_alias, info.serialization_alias}
        if TYPE_KEY in aliases:
            raise SchemaError(
                f"{model.__qualname__}.{name} uses the name {TYPE_KEY!r}, which typedspy adds to "
                f"every member of a union to tell them apart; rename it (e.g. 'kind') or declare "
                f"the union with Field(discriminator='{name}') to use your own tag",
                path=(model.__qualname__, name),
            )
