"""What a signature's field types must be, checked when the class is defined.

Pydantic accepts, at class definition, types a signature cannot use: a forward reference it
cannot resolve (the class is left "not fully defined" and fails at first use with an error that
names neither the signature nor the field), and, as outputs, types no JSON can hold (a
``Callable``, a ``type[...]``: Pydantic fails on them only when the schema is built). It also
misreads malformed generics (``list[int, str]`` is read as ``list[int]``) or fails on them and on
a misplaced discriminator with a raw ``TypeError`` naming no field. Each is a `SchemaError` here,
naming the field, when the class statement runs.
"""

from __future__ import annotations

import collections
import collections.abc
import types
import typing
from collections.abc import Callable, Iterator, Mapping
from typing import Annotated, Any, ForwardRef, Literal, get_args, get_origin

from pydantic import (
    AliasChoices,
    AliasPath,
    BaseModel,
    Field,
    PydanticInvalidForJsonSchema,
    PydanticSchemaGenerationError,
    PydanticUndefinedAnnotation,
    PydanticUserError,
    TypeAdapter,
)
from pydantic.fields import FieldInfo

from typedspy.errors import SchemaError
from typedspy.signature._dispatch import is_model, user_discriminated

__all__ = [
    "check_forms",
    "check_output_types",
    "check_resolved",
    "field_type_error",
    "type_parts",
    "walk_types",
]

_Path = tuple[str, ...]


def type_parts(tp: Any) -> Iterator[Any]:
    """``tp`` and every type named inside it (not inside models; Literal values skipped)."""
    stack = [tp]
    while stack:
        current = stack.pop()
        origin = get_origin(current)
        if origin is Annotated:
            stack.append(get_args(current)[0])
            continue
        yield current
        if origin is not Literal:
            stack.extend(reversed(get_args(current)))


def walk_types(tp: Any, path: _Path, seen: set[type[BaseModel]]) -> Iterator[tuple[Any, _Path]]:
    """Every type in ``tp`` and in the fields of the models it names, with the path to it."""
    for part in type_parts(tp):
        yield part, path
        if is_model(part) and part not in seen:
            seen.add(part)
            for name, info in part.model_fields.items():
                yield from walk_types(info.annotation, (*path, name), seen)


def _unresolved(tp: Any) -> bool:
    return any(
        isinstance(part, ForwardRef) or (is_model(part) and not part.__pydantic_complete__)
        for part in type_parts(tp)
    )


def check_resolved(cls: type[BaseModel], fields: Mapping[str, FieldInfo]) -> None:
    """Refuse a signature whose field types name something undefined where it is defined.

    A forward reference is resolved when the class statement runs (a signature's fields are
    read then, once): a name defined later, or not at all, is an error naming the field.

    Raises:
        SchemaError: The first field that names an undefined type; ``path`` is the field.
    """
    if cls.__pydantic_complete__:
        return
    try:  # the same namespaces Pydantic just read; it raises the name it could not find
        cls.model_rebuild(raise_errors=True, _parent_namespace_depth=0)
    except PydanticUndefinedAnnotation as exc:
        missing = exc.name
    else:
        return  # deferred on purpose (defer_build), and resolvable
    field = next((name for name, info in fields.items() if _unresolved(info.annotation)), None)
    where = f"{cls.__name__}.{field}" if field else cls.__name__
    raise SchemaError(
        f"{where}: its type refers to {missing!r}, which is not defined; define or import "
        f"{missing!r} before the signature (a signature's types are read when its class "
        "statement runs)",
        path=(field,) if field else (),
    )


def _not_json(tp: Any) -> str | None:
    """What ``tp`` is when no JSON value can be one: a callable, or a class."""
    if tp is typing.Callable or tp is collections.abc.Callable:
        return "a Callable"
    if get_origin(tp) is collections.abc.Callable:
        return "a Callable"
    if tp is type or get_origin(tp) is type:
        return "a type[...] (a class)"
    return None


def check_output_types(name: str, outputs: Mapping[str, FieldInfo], *, replied: bool) -> None:
    """Refuse output fields holding a type the model cannot write as JSON.

    With ``replied`` (the outputs are read from a reply) also a type no reply is read as.

    Raises:
        SchemaError: Naming the field (and the path inside its models) and the type.
    """
    seen: set[type[BaseModel]] = set()
    for field, info in outputs.items():
        for part, path in walk_types(info.annotation, (field,), seen):
            what = _not_json(part)
            if what is not None:
                raise SchemaError(
                    f"{name}.{'.'.join(path)}: {what} cannot be an output: the model writes "
                    "JSON, which holds no functions or classes; output data instead (a "
                    "Literal of names, a model, a str, ...)",
                    path=path,
                )
            never = _never_read(part) if replied else None
            if never is not None:
                raise SchemaError(f"{name}.{'.'.join(path)}: {never}", path=path)


def _bare(tp: Any) -> Any:
    while get_origin(tp) is Annotated:
        tp = get_args(tp)[0]
    return tp


def _unhashable(tp: Any) -> bool:
    tp = _bare(tp)
    if get_origin(tp) in (typing.Union, types.UnionType):
        return any(_unhashable(arg) for arg in get_args(tp))
    origin = get_origin(tp) or tp
    return isinstance(origin, type) and origin.__hash__ is None


def _never_read(tp: Any) -> str | None:
    """Why no JSON reply can be read as ``tp`` (so every one would be refused), if so."""
    origin, args = get_origin(tp), get_args(tp)
    if origin in (set, frozenset, collections.abc.Set, collections.abc.MutableSet) and args:
        if _unhashable(args[0]):
            frozen = ", or make the model frozen" if is_model(_bare(args[0])) else ""
            return (
                f"{_shown(tp)}: a set holds hashable items and {_shown(_bare(args[0]))} is not, "
                f"so every reply would be refused; output a list instead{frozen}"
            )
    if origin in _TWO and len(args) == 2:
        problem = _key_problem(args[0])
        if problem is not None:
            return f"{_shown(tp)}: {problem}"
    if is_model(tp) and not tp.__pydantic_root_model__:
        return _read_through_path(tp)
    return None


def _read_through_path(model: type[BaseModel]) -> str | None:
    """Why ``model`` is never read from a reply: a field read only through a nested path.

    Its JSON schema can name one key per field, which Pydantic takes from the first alias that
    is one key (else the field's name); a field read only from a path (``AliasPath("meta",
    "note")``) is then asked for where it is never read, unless the model validates by name.
    """
    if model.model_config.get("validate_by_name") or model.model_config.get("populate_by_name"):
        return None
    for name, info in model.model_fields.items():
        alias = info.validation_alias
        if not isinstance(alias, (AliasPath, AliasChoices)):
            continue
        paths = alias.choices if isinstance(alias, AliasChoices) else [alias]
        if not any(
            isinstance(p, str) or (len(p.path) == 1 and isinstance(p.path[0], str)) for p in paths
        ):
            return (
                f"{model.__name__}.{name} is read only from a nested path "
                f"({_shown(alias)}), which a JSON schema cannot ask for, so every reply would "
                "be refused; read it from one key (alias=... or AliasChoices with a key), or "
                "let the model validate by name"
            )
    return None


def _key_problem(key: Any) -> str | None:
    """Why no JSON object key (text) is read as a dict key of type ``key``, if so."""
    seen: set[object] = set()
    key = _bare(key)
    # A RootModel is read from what its root is read from (`RootModel[str]` from text).
    while is_model(key) and key.__pydantic_root_model__ and key not in seen:
        seen.add(key)
        if _unhashable(key):
            return (
                f"a dict key is hashable and {_shown(key)} is not, so every reply would be "
                "refused; make the model frozen"
            )
        key = _bare(key.model_fields["root"].annotation)
    if is_model(key) or (get_origin(key) or key) in (list, tuple, dict, set, frozenset):
        return (
            f"JSON object keys are text, which no {_shown(key)} is read from, so every reply "
            "would be refused; key by str, int, an enum or a Literal (or a frozen RootModel of "
            "one), or output a list of models"
        )
    return None


def field_type_error(
    name: str,
    fields: Mapping[str, FieldInfo],
    exc: PydanticSchemaGenerationError | PydanticInvalidForJsonSchema,
) -> SchemaError:
    """``exc`` as a `SchemaError` naming the first field it concerns.

    A type Pydantic cannot validate (an arbitrary class), or an output it has no JSON schema for.
    """
    probe: Callable[[Any], object]
    error: type[Exception]
    if isinstance(exc, PydanticInvalidForJsonSchema):
        reason = str(exc).split("\n", 1)[0]
        message = (
            f"no JSON schema for this output ({reason}); outputs must be JSON data: models, "
            "lists, dicts, str, numbers, bool, Literal, enums"
        )
        probe, error = (lambda tp: TypeAdapter(tp).json_schema()), PydanticInvalidForJsonSchema
    else:
        message = (
            f"{str(exc).split('. ', 1)[0]}; a field's type must be one Pydantic validates (a "
            "model, a dataclass, str, numbers, ...) or define __get_pydantic_core_schema__"
        )
        probe, error = TypeAdapter, PydanticSchemaGenerationError
    for field, info in fields.items():
        annotation: Any = info.annotation
        try:
            probe(annotation)
        except error:
            return SchemaError(f"{name}.{field}: {message}", path=(field,))
    return SchemaError(f"{name}: {message}")


# How many type arguments each generic takes (``tuple`` has its own rule, below).
_ONE = (list, set, frozenset, collections.deque, collections.Counter, collections.abc.Sequence)
_ONE_ABC = (
    collections.abc.MutableSequence,
    collections.abc.Set,
    collections.abc.MutableSet,
    collections.abc.Collection,
    collections.abc.Iterable,
)
_TWO = (dict, collections.OrderedDict, collections.defaultdict, collections.abc.Mapping)
_ARITY: dict[Any, tuple[int, str]] = {
    **dict.fromkeys((*_ONE, *_ONE_ABC), (1, "the item type")),
    **dict.fromkeys(
        (*_TWO, collections.abc.MutableMapping), (2, "the key type and the value type")
    ),
}


def _form_problem(tp: Any) -> str | None:
    """What is malformed in the generic ``tp`` itself (not its arguments), if anything."""
    origin, args = get_origin(tp), get_args(tp)
    if origin in _ARITY and args:
        count, what = _ARITY[origin]
        if len(args) != count:
            name = getattr(origin, "__name__", str(origin))
            hint = f"; for items of either type write {name}[{' | '.join(map(_shown, args))}]"
            return (
                f"{_shown(tp)} gives {len(args)} type argument{'s' * (len(args) > 1)}; {name} "
                f"takes {count} ({what}){hint if count == 1 else ''}"
            )
    if origin is tuple and Ellipsis in args and (len(args) != 2 or args[0] is Ellipsis):
        return (
            f"{_shown(tp)}: '...' goes only second, after one type: tuple[int, ...] is a tuple "
            "of any length; tuple[int, str] is a pair"
        )
    if origin is Literal:
        bad = next((a for a in args if isinstance(a, type) or get_origin(a) is not None), None)
        if bad is not None:
            return (
                f"{_shown(tp)}: Literal takes values (strings, numbers, True/False, None, enum "
                f"members), not {_shown(bad)}; for any {_shown(bad)} write the type alone"
            )
    return None


def _shown(tp: Any) -> str:
    """``tp`` as written in code: ``set[Cat]``, not ``set[__main__.Cat]``."""
    origin, args = get_origin(tp), get_args(tp)
    if tp is Ellipsis:
        return "..."
    if isinstance(tp, type) and not args:
        return tp.__name__
    if isinstance(origin, type) and args:
        return f"{origin.__name__}[{', '.join(map(_shown, args))}]"
    return repr(tp).replace("typing.", "")


def _discriminated(tp: Any) -> bool:
    """Whether a discriminator is declared anywhere inside ``tp``."""
    stack = [tp]
    while stack:
        current = stack.pop()
        if get_origin(current) is Annotated and user_discriminated(current.__metadata__):
            return True
        if get_origin(current) is not Literal:
            stack.extend(get_args(current))
    return False


def check_forms(name: str, fields: Mapping[str, tuple[Any, FieldInfo | None]]) -> None:
    """Refuse malformed type forms in ``fields`` (name to annotation and its `FieldInfo`).

    Run before Pydantic builds the class: a generic with the wrong number of arguments
    (Pydantic reads ``list[int, str]`` as ``list[int]``, fails on ``dict[str]`` with a bare
    ``TypeError``), ``...`` anywhere but ``tuple[T, ...]``, a type given as a ``Literal`` value,
    and a discriminator on something that is not a union of models (a bare ``TypeError``).

    Raises:
        SchemaError: Naming the field (and the path inside its models) and the form.
    """
    seen: set[type[BaseModel]] = set()
    for field, (annotation, info) in fields.items():
        for part, path in walk_types(annotation, (field,), seen):
            problem = _form_problem(part)
            if problem is not None:
                raise SchemaError(f"{name}.{'.'.join(path)}: {problem}", path=path)
        if info is not None and info.discriminator is not None:
            annotation = Annotated[annotation, Field(discriminator=info.discriminator)]
        if _discriminated(annotation):
            _check_discriminator(name, field, annotation)


def _check_discriminator(name: str, field: str, annotation: Any) -> None:
    try:
        TypeAdapter(annotation)
    except (TypeError, PydanticUserError) as exc:
        reason = str(exc).split("\n", 1)[0].split(". If you are", 1)[0].rstrip(".")
        raise SchemaError(
            f"{name}.{field}: {reason}; a discriminator picks a member of a union of models by "
            "a Literal field each declares: Annotated[A | B, Field(discriminator='kind')] "
            "(or leave it out: typedspy tags the members of a union itself)",
            path=(field,),
        ) from None
    except PydanticUndefinedAnnotation:
        return  # a forward reference: check_resolved names it
