"""`Signature`: a Pydantic class whose fields are a module's inputs and outputs."""

from __future__ import annotations

import copyreg
import inspect
import re
import sys
from dataclasses import dataclass
from types import UnionType
from typing import (
    TYPE_CHECKING,
    Annotated,
    Any,
    ClassVar,
    Literal,
    Union,
    cast,
    get_args,
    get_origin,
)

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    PydanticSchemaGenerationError,
    PydanticUserError,
    create_model,
)
from pydantic._internal._model_construction import (
    ModelMetaclass,
    build_lenient_weakvaluedict,
    unpack_lenient_weakvaluedict,
)
from pydantic._internal._typing_extra import parent_frame_namespace, try_eval_type
from pydantic.fields import FieldInfo
from pydantic_core import SchemaError as CoreSchemaError
from typing_extensions import dataclass_transform

from typedspy._text import encodable
from typedspy.errors import SchemaError
from typedspy.signature._declared import (
    check_forms,
    check_output_types,
    check_resolved,
    field_type_error,
)
from typedspy.signature._dispatch import (
    TYPE_KEY,
    decode_json_once,
    is_model,
    user_discriminated,
)
from typedspy.signature._fields import FieldRole, InputField, OutputField, role_of, without_role
from typedspy.signature._unions import TypeRewriter

__all__ = ["Signature", "SignatureSpec", "build_signature", "set_member_docs"]


@dataclass(frozen=True, slots=True, kw_only=True)
class SignatureSpec:
    """What a signature class declares, computed once when the class is defined."""

    instructions: str
    input_fields: dict[str, FieldInfo]
    output_fields: dict[str, FieldInfo]
    input_model: type[BaseModel]
    output_model: type[BaseModel]


# ADR-015: type checkers read a signature class like a dataclass whose __init__ takes the
# inputs as keywords (OutputField's ``init=False`` keeps outputs out); `Predict` captures that
# parameter list, so ``predict(task=...)`` is checked against the declared inputs.
@dataclass_transform(
    kw_only_default=True, field_specifiers=(InputField, OutputField, Field, PrivateAttr)
)
class _SignatureMeta(ModelMetaclass):
    """Gives signature classes read-only introspection properties (``Sig.output_fields``)."""

    def __new__(
        mcs, name: str, bases: tuple[type, ...], namespace: dict[str, Any], **kwargs: Any
    ) -> type:
        replied = kwargs.pop("replied", None)  # `build_signature(..., replied=False)`
        if replied is not None:
            namespace["__typedspy_replied__"] = replied
        if kwargs.get("__pydantic_reset_parent_namespace__", True):
            # Pydantic reads the defining frame's locals (forward references) two frames up
            # from its own __new__; this override adds one, so hand them over ourselves.
            parent = parent_frame_namespace()
            namespace["__pydantic_parent_namespace__"] = build_lenient_weakvaluedict(parent)
            kwargs["__pydantic_reset_parent_namespace__"] = False
        if any(isinstance(b, _SignatureMeta) for b in bases):
            _check_field_names(name, namespace.get("__annotations__", {}), namespace)
            check_forms(name, _own_fields(namespace))
        try:
            cls: type = super().__new__(mcs, name, bases, namespace, **kwargs)
        except CoreSchemaError as exc:  # a constraint Pydantic cannot build: pattern="(", 10**30
            raise _unbuildable(name, str(exc)) from None
        except PydanticUserError as exc:  # the class itself refused: a field with no annotation
            field = _FIELD_NAMED.search(exc.message)
            raise SchemaError(
                f"{name}.{field.group(1)}: {exc.message}" if field else f"{name}: {exc.message}",
                path=(field.group(1),) if field else (),
            ) from None
        return cls

    @property
    def instructions(cls) -> str:
        """The instruction shown to the model: the docstring, or a default built from fields."""
        return _spec(cls).instructions

    @property
    def input_fields(cls) -> dict[str, FieldInfo]:
        """Input fields in declaration order (name to `FieldInfo`)."""
        return dict(_spec(cls).input_fields)

    @property
    def output_fields(cls) -> dict[str, FieldInfo]:
        """Output fields in declaration order (name to `FieldInfo`)."""
        return dict(_spec(cls).output_fields)

    @property
    def input_model(cls) -> type[BaseModel]:
        """A Pydantic model of the inputs, used to check them before any request."""
        return _spec(cls).input_model

    @property
    def output_model(cls) -> type[BaseModel]:
        """The Pydantic model of the outputs: validation dispatches unions on ``_type``."""
        return _spec(cls).output_model


# Keywords every module call takes besides the inputs (Predict/ReAct ``aexecute``).
RESERVED_INPUTS = frozenset({"history", "stream", "resume_state"})


def _check_field_names(name: str, annotations: Any, namespace: dict[str, Any]) -> None:
    """Refuse, at class creation, field names Pydantic or typedspy use themselves."""
    for field in annotations if isinstance(annotations, dict) else ():
        if field.startswith("_") and isinstance(namespace.get(field), FieldInfo):
            tag = (
                f"; {TYPE_KEY!r} is also the tag typedspy adds to union members"
                if field == TYPE_KEY
                else ""
            )
            rename = "kind" if field == TYPE_KEY else field.lstrip("_") or "value"
            raise SchemaError(
                f"{name}.{field}: a field name cannot start with '_' (Pydantic keeps such "
                f"names as private attributes, not fields){tag}; rename it (e.g. {rename!r})",
                path=(field,),
            )
        if field in _OWN_NAMES:
            raise SchemaError(
                f"{name}.{field}: the name {field!r} is the signature's own "
                f"({name}.{field}); rename the field",
                path=(field,),
            )
        if field == "model_config" or (
            not field.startswith("_") and hasattr(BaseModel, field) and field != "__doc__"
        ):
            raise SchemaError(
                f"{name}.{field}: the name {field!r} is Pydantic's own "
                f"(BaseModel.{field}); rename the field",
                path=(field,),
            )


def _own_fields(namespace: dict[str, Any]) -> dict[str, tuple[Any, FieldInfo | None]]:
    """The class body's field annotations, evaluated where they can be (as Pydantic will)."""
    given: object = namespace.get("__annotations__")
    if not isinstance(given, dict):
        return {}
    annotations = cast("dict[str, Any]", given)
    module = sys.modules.get(str(namespace.get("__module__")))
    globalns = vars(module) if module is not None else {}
    localns = unpack_lenient_weakvaluedict(namespace.get("__pydantic_parent_namespace__"))
    fields: dict[str, tuple[Any, FieldInfo | None]] = {}
    for field, annotation in annotations.items():
        try:
            tp, evaluated = try_eval_type(annotation, globalns, localns)
        except Exception:  # Pydantic reports it below, naming the annotation
            continue
        if evaluated and not field.startswith("_") and get_origin(tp) is not ClassVar:
            value = namespace.get(field)
            fields[field] = (tp, value if isinstance(value, FieldInfo) else None)
    return fields


# What a signature class answers itself (``Sig.instructions``): a field of that name would be
# shadowed by it, and reading the class's fields while it is built fails.
_OWN_NAMES = frozenset(
    {n for n in vars(_SignatureMeta) if not n.startswith("_")} | {"with_instructions"}
)


_FIELD_NAMED = re.compile(r"Field [\"']([^\"']+)[\"']")  # how Pydantic's errors name a field


def _unbuildable(name: str, message: str) -> SchemaError:
    """The error for a field Pydantic cannot build a validator for, naming it where it says."""
    field = _FIELD_NAMED.search(message)
    cause = message.rsplit("\n", 1)[-1].strip()
    where = f"{name}.{field.group(1)}" if field else name
    return SchemaError(
        f"{where}: its type or constraints cannot be checked ({cause})",
        path=(field.group(1),) if field else (),
    )


def _spec(cls: type) -> SignatureSpec:
    spec: SignatureSpec | None = cls.__dict__.get("__typedspy_spec__")
    if spec is None:
        raise SchemaError(f"{cls.__name__} is the Signature base class, not a signature")
    return spec


class Signature(BaseModel, metaclass=_SignatureMeta):
    """Declare a module's contract: inputs, outputs, and the instruction (the docstring).

    Mark every field with `InputField` or `OutputField`. Output fields may use any Pydantic
    type, including unions of models, which typedspy tags with ``_type`` automatically.

    Example:
        ```python
        class Decide(ts.Signature):
            \"\"\"Decide the agent's next action.\"\"\"

            task: str = ts.InputField(description="what the user asked for")
            action: SpawnTask | CompleteTask | Continue = ts.OutputField()
            confidence: float = ts.OutputField(ge=0, le=1)
        ```

    Raises:
        SchemaError: At class definition, for a field without a marker, a field marked as both,
            a field name starting with ``_``, no output field, a type name not defined where
            the class is, an output no JSON can hold (a ``Callable``, a ``type[...]``), or a
            union member that declares its own ``_type``.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, protected_namespaces=())
    __typedspy_spec__: ClassVar[SignatureSpec | None] = None
    # Union members' docstrings replaced for this signature (`set_member_docs`).
    __typedspy_member_docs__: ClassVar[dict[type[BaseModel], str]] = {}
    # Made by `with_texts`: saved state carries its field descriptions and members' docstrings.
    __typedspy_worded__: ClassVar[bool] = False
    # False for a tool's signature: its outputs are what the function returns, never a reply.
    __typedspy_replied__: ClassVar[bool] = True

    if TYPE_CHECKING:
        # Static only: a signature held as `type[Signature]` (make_signature, strings) takes
        # any keywords; subclasses get their own inputs-only __init__ (dataclass_transform).
        def __init__(self, /, **data: Any) -> None: ...

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        cls.__typedspy_spec__ = _build_spec(cls)

    @classmethod
    def with_instructions(cls, instructions: str) -> type[Signature]:
        """A copy of this signature with another instruction (same name and fields).

        A lone surrogate in ``instructions`` (a model's rewrite) becomes U+FFFD, as on the wire:
        Python cannot make a class whose docstring UTF-8 cannot encode.
        """
        derived: type[Signature] = create_model(
            cls.__name__, __base__=cls, __doc__=encodable(instructions), __module__=cls.__module__
        )
        derived.__qualname__ = cls.__qualname__
        return derived


def _build_spec(cls: type[Signature]) -> SignatureSpec:
    inputs: dict[str, FieldInfo] = {}
    outputs: dict[str, FieldInfo] = {}
    for name, info in cls.model_fields.items():
        roles = role_of(info)
        if roles == {"input"}:
            inputs[name] = info
        elif roles == {"output"}:
            outputs[name] = info
        elif not roles:
            raise SchemaError(
                f"{cls.__name__}.{name} has no role: declare it with ts.InputField() or "
                f"ts.OutputField()",
                path=(name,),
            )
        else:
            raise SchemaError(
                f"{cls.__name__}.{name} is marked both as an input and as an output",
                path=(name,),
            )
    if not outputs:
        raise SchemaError(f"{cls.__name__} declares no output field: add one with ts.OutputField()")
    reserved = sorted(RESERVED_INPUTS & inputs.keys())
    if reserved:
        raise SchemaError(
            f"{cls.__name__}.{reserved[0]}: {reserved[0]!r} is a keyword every module call "
            f"takes itself ({', '.join(sorted(RESERVED_INPUTS))}); rename the input",
            path=(reserved[0],),
        )
    check_resolved(cls, {**inputs, **outputs})
    check_output_types(cls.__name__, outputs, replied=cls.__typedspy_replied__)
    rewriter = TypeRewriter(cls.__typedspy_member_docs__)
    try:
        input_model = _fields_model(f"{cls.__name__}Inputs", inputs, rewriter, decode_strings=False)
        output_model = _fields_model(
            f"{cls.__name__}Outputs", outputs, rewriter, decode_strings=True
        )
    except PydanticSchemaGenerationError as exc:  # an arbitrary class: no validator for it
        raise field_type_error(cls.__name__, {**inputs, **outputs}, exc) from None
    input_model.__typedspy_owner__ = (cls, "input_model")
    output_model.__typedspy_owner__ = (cls, "output_model")
    doc = inspect.cleandoc(cls.__doc__) if cls.__doc__ else ""
    if not doc or cls.__doc__ == Signature.__doc__ or _template(cls):
        parent = next(
            (
                b
                for b in cls.__mro__[1:]
                if b.__dict__.get("__typedspy_spec__") and not _template(b)
            ),
            None,
        )
        doc = _spec(parent).instructions if parent else _default_instructions(inputs, outputs)
    return SignatureSpec(
        instructions=doc,
        input_fields=inputs,
        output_fields=outputs,
        input_model=input_model,
        output_model=output_model,
    )


def set_member_docs(cls: type[Signature], docs: dict[type[BaseModel], str]) -> None:
    """Give models in ``cls``'s outputs other docstrings, for ``cls`` only (ADR-081).

    The models' classes are not changed: their description in this signature's schema is
    ``docs[model]``, and its predictions are still instances of them.
    """
    cls.__typedspy_member_docs__ = {**cls.__typedspy_member_docs__, **docs}
    cls.__typedspy_spec__ = _build_spec(cls)


def _template(cls: type) -> bool:
    """A generic signature (`Returns`) or one of its parametrizations: no instruction of its own."""
    generic: dict[str, Any] = getattr(cls, "__pydantic_generic_metadata__", None) or {}
    return bool(cls.__dict__.get("__typedspy_template__") or generic.get("origin"))


def _default_instructions(inputs: dict[str, FieldInfo], outputs: dict[str, FieldInfo]) -> str:
    given = ", ".join(f"`{n}`" for n in inputs) or "nothing"
    wanted = ", ".join(f"`{n}`" for n in outputs)
    return f"Given the fields {given}, produce the fields {wanted}."


def _wants_container(tp: Any) -> bool:
    while get_origin(tp) is Annotated:
        tp = get_args(tp)[0]
    if get_origin(tp) in (Union, UnionType):  # `A | B`, `list[int] | None`: any container member
        return any(_wants_container(arg) for arg in get_args(tp))
    return is_model(tp) or get_origin(tp) in (list, tuple, set, frozenset, dict)


def _fields_model(
    name: str, fields: dict[str, FieldInfo], rewriter: TypeRewriter, *, decode_strings: bool
) -> type[_FieldsModel]:
    definitions: dict[str, Any] = {}
    for field_name, info in fields.items():
        annotation = rewriter.rewrite(info.annotation, discriminated=user_discriminated([info]))
        if decode_strings and _wants_container(info.annotation):
            # A model that double-encodes a nested value sends it as a JSON string: decode once.
            annotation = Annotated[annotation, BeforeValidator(decode_json_once)]
        definitions[field_name] = (annotation, without_role(info.annotation, info))
    model: type[_FieldsModel] = create_model(name, __base__=_FieldsModel, **definitions)
    return model


class _FieldsModelMeta(ModelMetaclass):
    """The metaclass of signatures' input and output models, so that they pickle (below)."""


class _FieldsModel(BaseModel, metaclass=_FieldsModelMeta):
    """The base of a signature's input and output models."""

    model_config = ConfigDict(extra="ignore", protected_namespaces=())
    __typedspy_owner__: ClassVar[tuple[type[Signature], str] | None] = None


def build_signature(
    name: str,
    inputs: dict[str, tuple[Any, FieldInfo]],
    outputs: dict[str, tuple[Any, FieldInfo]],
    instructions: str | None = None,
    *,
    base: type[Signature] = Signature,
    replied: bool = True,
) -> type[Signature]:
    """Create a signature class from field definitions (used by `make_signature` and modules).

    Args:
        name: The class name (it names the response schema).
        inputs: Input field name to ``(annotation, FieldInfo)``; the FieldInfo gets the role.
        outputs: Output field name to ``(annotation, FieldInfo)``.
        instructions: The docstring; a default is derived from the fields when None.
        base: The class to derive from.
        replied: False when the outputs come from code (a tool's return), never from a reply:
            a type no reply is read as (``dict[tuple[int, int], str]``) is then accepted.

    Raises:
        SchemaError: A name among both the inputs and the outputs.
    """
    both = sorted(inputs.keys() & outputs.keys())
    if both:
        raise SchemaError(
            f"{name}.{both[0]}: a field cannot be both an input and an output; rename one",
            path=(both[0],),
        )
    definitions: dict[str, Any] = {}
    groups: tuple[tuple[Literal["input", "output"], dict[str, tuple[Any, FieldInfo]]], ...] = (
        ("input", inputs),
        ("output", outputs),
    )
    for role, group in groups:
        for field_name, (annotation, info) in group.items():
            marked = without_role(annotation, info)  # holds `annotation`'s own Field keywords
            marked.metadata.append(FieldRole(role))
            definitions[field_name] = (marked.annotation, marked)
    cls: type[Signature] = create_model(
        name,
        __base__=base,
        __doc__=instructions,
        __module__=base.__module__,
        __cls_kwargs__=None if replied else {"replied": False},
        **definitions,
    )
    return cls


def _importable(cls: type) -> bool:
    module = sys.modules.get(cls.__module__)
    target: Any = module
    for part in cls.__qualname__.split("."):
        target = getattr(target, part, None)
    return target is cls


def _rebuild(
    name: str,
    inputs: dict[str, tuple[Any, FieldInfo]],
    outputs: dict[str, tuple[Any, FieldInfo]],
    instructions: str,
    docs: dict[type[BaseModel], str] | None = None,
) -> type[Signature]:
    cls = build_signature(name, inputs, outputs, instructions)
    if docs:
        set_member_docs(cls, docs)
    return cls


def _reduce_signature(cls: type[Signature]) -> str | tuple[Any, ...]:
    """Pickle signature classes made at run time (make_signature, ChainOfThought) by value."""
    if _importable(cls):
        return cls.__qualname__
    spec = _spec(cls)
    return (
        _rebuild,
        (
            cls.__name__,
            {n: (f.annotation, f) for n, f in spec.input_fields.items()},
            {n: (f.annotation, f) for n, f in spec.output_fields.items()},
            spec.instructions,
            cls.__typedspy_member_docs__,
        ),
    )


def _reduce_fields_model(model: type[_FieldsModel]) -> str | tuple[Any, ...]:
    """Pickle ``Sig.input_model`` / ``Sig.output_model`` as that attribute of the signature."""
    owner = model.__dict__.get("__typedspy_owner__")
    return model.__qualname__ if owner is None else (getattr, owner)


copyreg.pickle(_SignatureMeta, _reduce_signature)  # type: ignore[arg-type]
copyreg.pickle(_FieldsModelMeta, _reduce_fields_model)  # type: ignore[arg-type]
