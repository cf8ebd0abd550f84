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

import collections
import collections.abc
import dataclasses
import enum
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal, Union, cast, get_args, get_origin, is_typeddict

from pydantic import (
    AfterValidator,
    AliasChoices,
    AliasPath,
    BaseModel,
    BeforeValidator,
    Discriminator,
    PlainValidator,
    Tag,
    create_model,
)
from pydantic.json_schema import SkipJsonSchema
from pydantic_core import PydanticCustomError

from typedspy.errors import SchemaError
from typedspy.signature._declared import type_parts
from typedspy.signature._dispatch import (
    NOMATCH_TAG,
    OTHER_TAG,
    TAG_PREFIX,
    TYPE_KEY,
    UnionInfo,
    is_model,
    is_union,
    member_model,
    pairs_to_dict,
    qualified_name,
    strip_type_key,
    union_models,
    user_discriminated,
    wire_names,
)
from typedspy.signature._fields import copy_field

_NO_SCHEMA_ANY: Any = cast(Any, SkipJsonSchema)[Any]  # the no-match choice: not in schemas

__all__ = ["TypeRewriter"]

# Mappings a JSON schema writes as an object, which the strict schema asks for as key/value pairs.
_MAPPINGS = (
    dict,
    Mapping,
    collections.abc.MutableMapping,
    collections.OrderedDict,
    collections.defaultdict,
    collections.Counter,
)


class TypeRewriter:
    """Rewrites annotations for tagged-union validation; one instance per signature.

    ``docs`` gives some models another docstring (their description in schemas): each is
    validated through a shadow carrying it, so values are still instances of the user's class.
    """

    def __init__(self, docs: Mapping[type[BaseModel], str] | None = None) -> None:
        self._shadows: dict[type[BaseModel], Any] = {}
        self._needs: dict[type[BaseModel], bool] = {}
        self._docs = dict(docs or {})
        self.unions: list[UnionInfo] = []

    # -- analysis: which models contain something to rewrite (cycle-safe fixpoint) --

    def _direct_needs(self, tp: Any, found: set[type[BaseModel]]) -> bool:
        """Whether ``tp`` itself holds a taggable union or dict; collects the models it names."""
        needs = False
        for part in type_parts(tp):
            if is_model(part):
                found.add(part)
            elif (
                (is_union(part) and union_models(part))
                or (get_origin(part) in _MAPPINGS and get_args(part))
                or _enum_members(part)
            ):
                needs = True
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
        needs = {m: d or m in self._docs for m, (d, _) in seen.items()}
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
        if origin is Literal:
            return _literal_of_values(tp)
        if not args:
            return tp
        if is_union(tp):
            return self._rewrite_union(tp, args, discriminated)
        new_args = tuple(self._rewrite(a) for a in args)
        if origin in _MAPPINGS:  # a strict schema asks for a mapping as key/value pairs
            rebuilt = cast(Any, dict if origin is Mapping else origin)[new_args]
            return Annotated[rebuilt, BeforeValidator(pairs_to_dict)]
        if all(n is o for n, o in zip(new_args, args, strict=True)):
            return tp
        return cast(Any, origin)[new_args] if isinstance(origin, type) else tp.copy_with(new_args)

    def _rewrite_union(self, tp: Any, args: tuple[Any, ...], discriminated: bool) -> Any:
        non_null = [a for a in args if a is not type(None)]
        nullable = len(non_null) != len(args)
        # A member written `Annotated[Model, ...]` (a description, a schema) is a model member.
        members = [a for a in non_null if member_model(a) is not None]
        models = [m for m in map(member_model, members) if m is not None]
        if discriminated or len(non_null) < 2 or not models:
            new_args = tuple(self._rewrite(a) for a in args)
            unchanged = all(n is o for n, o in zip(new_args, args, strict=True))
            return tp if unchanged else _union_of(new_args)
        for model in models:
            _check_no_type_field(model)
        names = wire_names(models)
        others = [self._rewrite(a) for a in non_null if member_model(a) is None]
        choice_types = [self._rewrite(m) for m in members]
        info = UnionInfo(
            names=names,
            classes=models,
            choice_types=choice_types,
            has_other=bool(others),
            other_takes_objects=any(takes_objects(o) for o in others),
        )
        self.unions.append(info)
        choices: list[Any] = [
            # The member's validators (the user's, before ones too) never see typedspy's `_type`.
            Annotated[ct, BeforeValidator(strip_type_key), Tag(TAG_PREFIX + name)]
            for ct, name in zip(choice_types, names, strict=True)
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
                name: (placeholders[name], copy_field(info.annotation, info))
                for name, info in model.model_fields.items()
            }
            shadow: type[BaseModel] = create_model(
                model.__name__,
                __base__=model,
                __module__=model.__module__,
                # the docstring is the model's description in schemas
                __doc__=self._docs.get(model, model.__doc__),
                **fields,
            )
            shadow.__qualname__ = model.__qualname__
            self._shadows[model] = Annotated[shadow, AfterValidator(_to_user(model))]
            pending.append((model, shadow, placeholders))
        for model, _shadow, placeholders in pending:
            for name, info in model.model_fields.items():
                namespace[placeholders[name]] = self._rewrite(
                    info.annotation, user_discriminated([info])
                )
        for _model, built, _ in pending:
            built.model_rebuild(_types_namespace=namespace, force=True)


def _enum_members(tp: Any) -> list[enum.Enum]:
    """The enum members ``tp`` names when it is a ``Literal`` (``Literal[Color.RED]``)."""
    if get_origin(tp) is not Literal:
        return []
    return [a for a in get_args(tp) if isinstance(a, enum.Enum)]


def _literal_of_values(tp: Any) -> Any:
    """``Literal[Color.RED]`` read from ``"red"``, the value its schema asks for.

    Pydantic reads such a Literal only from the member itself (in JSON mode too), so every reply
    was refused. A value of the same type as a member's value becomes that member; nothing else
    is converted (``"1"`` stays text for a member whose value is ``1``).
    """
    members = _enum_members(tp)
    if not members:
        return tp
    values = [a.value if isinstance(a, enum.Enum) else a for a in get_args(tp)]
    # Pydantic's own message shows the members (`<Color.RED: 'red'>`): the model, reading it as
    # feedback, is told the values it writes instead.
    expected = " or ".join(map(repr, values))

    def member(value: Any) -> Any:
        if isinstance(value, enum.Enum):
            return value
        for arg in get_args(tp):
            plain = arg.value if isinstance(arg, enum.Enum) else arg
            if type(plain) is type(value) and plain == value:
                return arg
        raise PydanticCustomError(
            "literal_error", "Input should be {expected}", {"expected": expected}
        )

    return Annotated[tp, BeforeValidator(member)]


def _union_of(args: list[Any] | tuple[Any, ...]) -> Any:
    """``Union[args]`` built at run time (a computed type application mypy cannot check)."""
    return cast(Any, Union)[tuple(args)]


def takes_objects(tp: Any) -> bool:
    """Whether a non-model union member could accept a JSON object (a dict, Any, a dataclass)."""
    origin = get_origin(tp)
    if origin is Annotated:
        return takes_objects(get_args(tp)[0])
    if is_union(tp):
        return any(takes_objects(a) for a in get_args(tp))
    if tp is Any or origin in (dict, Mapping) or tp in (dict, object):
        return True
    return dataclasses.is_dataclass(tp) or is_typeddict(tp)


def _to_user(model: type[BaseModel]) -> Callable[[BaseModel], BaseModel]:
    names = list(model.model_fields)

    def convert(shadow: BaseModel) -> BaseModel:
        values = {n: getattr(shadow, n) for n in names}
        user = model.model_construct(_fields_set=set(shadow.model_fields_set), **values)
        if shadow.__pydantic_extra__:
            object.__setattr__(user, "__pydantic_extra__", dict(shadow.__pydantic_extra__))
        return user

    return convert


def _read_keys(alias: str | AliasPath | AliasChoices | None) -> list[str | int | None]:
    """The top-level keys a validation alias reads (an `AliasPath` reads its first)."""
    if isinstance(alias, AliasChoices):
        return [path[0] for path in alias.convert_to_aliases()]
    return [alias.path[0]] if isinstance(alias, AliasPath) else [alias]


def _check_no_type_field(model: type[BaseModel]) -> None:
    owner = qualified_name(model)
    if TYPE_KEY in model.__private_attributes__:  # `_type: str = "A"`: Pydantic's private name
        raise SchemaError(
            f"{owner}.{TYPE_KEY} declares the name {TYPE_KEY!r}, which typedspy "
            "adds to every member of a union to tell them apart (the tag is typedspy's "
            "business: remove it), or tag the members yourself with a Literal field and "
            "Field(discriminator=...)",
            path=(owner, TYPE_KEY),
        )
    for name, info in model.model_fields.items():
        if TYPE_KEY in (info.alias, info.serialization_alias, *_read_keys(info.validation_alias)):
            raise SchemaError(
                f"{owner}.{name} uses the name {TYPE_KEY!r}, which typedspy adds to "
                f"every member of a union to tell them apart; rename it (e.g. 'kind') or declare "
                f"the union with Field(discriminator='{name}') to use your own tag",
                path=(owner, name),
            )
