"""Demos: what of an example is a demo, the classes of outputs, demos spread over them (ADR-082).

An output whose type has a finite set of values (a ``Literal``, an ``Enum``, a ``bool``, a
union's model members by ``_type``, and these nested inside models) gives each labelled value a
class, found by `demo_class` from the signature's own field types. The optimizers choose each
predictor's demos (`pick_demos`; the part of an example that is one: `demo_for`) spread over the
classes the training set has (`spread`: round-robin over the classes, seeded), and report how
the demos cover them (`coverage`).
"""

from __future__ import annotations

import enum
import functools
import json
import random
import types
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic_core import to_jsonable_python

from typedspy.parse import field_value
from typedspy.signature import Signature, is_model, wire_names

__all__ = ["Coverage", "class_step", "coverage", "demo_class", "demo_for", "pick_demos", "spread"]

T = TypeVar("T")

_DEPTH = 4  # model levels looked into for nested classes; deeper parts do not split classes


def demo_class(signature: type[Signature], values: Mapping[str, Any]) -> str | None:
    """The class ``values`` (a demo, an example) shows for ``signature``'s outputs, or None.

    Each output field it labels whose type has finite classes adds ``name=class``:
    ``route=Billing(kind=refund)`` (a union member by its ``_type``, then its own finite
    fields). A value is first read by the signature's rule for labels (`parse.field_value`), so
    instances, tagged dicts and saved JSON give the same class. None: no such output labelled.
    """
    parts: list[str] = []
    for name, info in signature.output_fields.items():
        if name not in values:
            continue
        value, problems = field_value(signature.output_model, name, values[name], info.annotation)
        shown = None if problems else _class(info.annotation, value, 0)
        if shown is not None:
            parts.append(f"{name}={shown}")
    return ", ".join(parts) or None


def _class(annotation: Any, value: Any, depth: int) -> str | None:
    origin = get_origin(annotation)
    if origin is Annotated:
        return _class(get_args(annotation)[0], value, depth)
    if origin is Literal or annotation is bool:
        return _scalar(value)
    if origin in (Union, types.UnionType):
        return _member_class(annotation, value, depth)
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return _scalar(value)
    if isinstance(annotation, type) and is_model(annotation) and isinstance(value, BaseModel):
        return _fields_class(value, depth)
    return None  # open types (str, numbers, lists, dicts) have no classes


def _member_class(annotation: Any, value: Any, depth: int) -> str | None:
    args = get_args(annotation)
    if value is None:
        return "null" if type(None) in args else None
    models = [a for a in args if is_model(a)]
    if isinstance(value, BaseModel) and type(value) in models:
        tag = wire_names(models)[models.index(type(value))] if len(models) > 1 else ""
        inner = _fields_class(value, depth)
        if not tag:
            return inner
        return f"{tag}({inner})" if inner else tag
    for arg in args:  # a non-model member: the first whose classes hold the value
        if arg is not type(None) and _holds(arg, value):
            return _class(arg, value, depth)
    return None


def _holds(annotation: Any, value: Any) -> bool:
    inner = get_args(annotation)[0] if get_origin(annotation) is Annotated else annotation
    if get_origin(inner) is Literal:
        return value in get_args(inner)
    if inner is bool:
        return isinstance(value, bool)
    return isinstance(inner, type) and isinstance(value, inner)


def _fields_class(value: BaseModel, depth: int) -> str | None:
    if depth >= _DEPTH:
        return None
    parts: list[str] = []
    for name, info in type(value).model_fields.items():
        shown = _class(info.annotation, getattr(value, name), depth + 1)
        if shown is not None:
            parts.append(f"{name}={shown}")
    return ", ".join(parts) or None


def _scalar(value: Any) -> str:
    plain = to_jsonable_python(value.value if isinstance(value, enum.Enum) else value)
    return plain if isinstance(plain, str) else json.dumps(plain)


def spread(
    items: Sequence[T],
    k: int,
    key: Callable[[T], str | None],
    rng: random.Random | None = None,
    *,
    have: Iterable[str | None] = (),
) -> list[T]:
    """Up to ``k`` of ``items``, taken round-robin over their classes (``key``).

    The next item always comes from the class shown least so far (``have`` counts classes
    already shown), ties broken by class order: the order classes first appear in ``items``, or
    a shuffle of it by ``rng``. Within a class, items keep their order (shuffled by ``rng``).
    Items whose key is None form one class of their own. Each step takes one item: at most
    ``min(k, len(items))`` steps.
    """
    groups: dict[str | None, list[T]] = {}
    for item in items:
        groups.setdefault(key(item), []).append(item)
    order = list(groups)
    if rng is not None:
        rng.shuffle(order)
        for group in groups.values():
            rng.shuffle(group)
    shown = Counter(have)
    rank = {c: i for i, c in enumerate(order)}
    chosen: list[T] = []
    while len(chosen) < k:
        open_ = [c for c in order if groups[c]]
        if not open_:
            break
        cls = min(open_, key=lambda c: (shown[c], rank[c]))
        chosen.append(groups[cls].pop(0))
        shown[cls] += 1
    return chosen


def demo_for(signature: type[Signature], values: Mapping[str, Any]) -> dict[str, Any] | None:
    """The part of ``values`` that is a demo for ``signature``, or None if it shows no output.

    A demo keeps the signature's fields only, and needs every required input and at least
    one output.
    """
    inputs, outputs = signature.input_fields, signature.output_fields
    demo = {k: v for k, v in values.items() if k in inputs or k in outputs}
    if not any(k in outputs for k in demo):
        return None
    if any(f.is_required() and n not in demo for n, f in inputs.items()):
        return None
    return demo


def pick_demos(
    signature: type[Signature],
    examples: Sequence[Mapping[str, Any]],
    k: int,
    *,
    stratify: bool,
    rng: random.Random | None = None,
    after: Sequence[Mapping[str, Any]] = (),
) -> list[dict[str, Any]]:
    """Up to ``k`` demos for ``signature`` from ``examples``: the first, or a sample by ``rng``.

    With ``stratify`` (ADR-082) they are spread over the output classes of the examples that
    make demos, counting the classes ``after`` (demos already chosen) shows. An example that
    makes no demo (`demo_for`) is dropped after the choice without ``stratify``.
    """
    if stratify:
        key = functools.partial(demo_class, signature)
        fits = [ex for ex in examples if demo_for(signature, ex) is not None]
        chosen = spread(fits, k, key, rng, have=map(key, after))
    else:
        k = min(k, len(examples))
        chosen = rng.sample(examples, k) if rng is not None else list(examples[:k])
    return [d for d in (demo_for(signature, ex) for ex in chosen) if d is not None]


@dataclass
class Coverage:
    """How one predictor's demos cover the classes of the training set.

    Attributes:
        train: Each class in the training set and how many examples show it.
        demos: Each class the demos show and how many show it.
    """

    train: dict[str, int] = field(default_factory=dict)
    demos: dict[str, int] = field(default_factory=dict)

    @property
    def missing(self) -> list[str]:
        """Classes of the training set that no demo shows."""
        return [c for c in self.train if c not in self.demos]

    def __str__(self) -> str:
        covered = sum(1 for c in self.train if c in self.demos)
        line = f"demos cover {covered} of {len(self.train)} classes ({_listed(self.demos)})"
        return line + (f"; missing: {', '.join(self.missing)}" if self.missing else "")


def coverage(
    predictors: Iterable[tuple[str, Any]], examples: Sequence[Mapping[str, Any]]
) -> dict[str, Coverage]:
    """Each predictor's `Coverage` of the classes in ``examples`` (those with none left out)."""
    out: dict[str, Coverage] = {}
    for path, predictor in predictors:
        sig = predictor.signature
        train = _counts(demo_class(sig, ex) for ex in examples)
        if train:
            out[path] = Coverage(train, _counts(demo_class(sig, d) for d in predictor.demos))
    return out


def class_step(
    predictors: Iterable[tuple[str, Any]], examples: Sequence[Mapping[str, Any]], stratify: bool
) -> str:
    """The plan's line on classes: those of the training set per predictor, and what is done."""
    shown = "; ".join(
        f"{path}: {len(c.train)} classes ({_listed(c.train)})"
        for path, c in coverage(predictors, examples).items()
    )
    if not shown:
        return "no output with a finite set of classes: demos are not spread by class"
    if stratify:
        return (
            f"spread each predictor's demos over its classes, round-robin (stratify=True): {shown}"
        )
    return f"demos are not spread by class (stratify=False); the training set has {shown}"


def _counts(classes: Iterable[str | None]) -> dict[str, int]:
    return dict(Counter(c for c in classes if c is not None))


def _listed(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{c} x{n}" for c, n in counts.items()) or "none"
