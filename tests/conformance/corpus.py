"""Every signature the test suite defines at module level, and its compiled schemas."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, get_args

from pydantic import AfterValidator, BaseModel, BeforeValidator, PlainValidator, WrapValidator

import typedspy as ts
from typedspy.errors import SchemaError

TESTS = Path(__file__).resolve().parent.parent
TARGETS = ("openai-strict", "json-schema")


def _import_test_modules() -> None:
    # pytest (prepend import mode, no __init__.py) imports each test file by its stem with its
    # folder on sys.path; doing the same returns the module pytest already imported, if any.
    for path in sorted(TESTS.rglob("test_*.py")):
        if path.parent.name == "typing":
            continue
        folder = str(path.parent)
        if folder not in sys.path:
            sys.path.insert(0, folder)
        importlib.import_module(path.stem)
    importlib.import_module("shapes")


def _subclasses(cls: type[ts.Signature]) -> Iterator[type[ts.Signature]]:
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


_VALIDATORS = (AfterValidator, BeforeValidator, PlainValidator, WrapValidator)


def _models(annotation: Any, seen: set[type]) -> Iterator[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        if annotation in seen:
            return
        seen.add(annotation)
        yield annotation
        for field in annotation.model_fields.values():
            yield from _models(field.annotation, seen)
    for arg in get_args(annotation):
        yield from _models(arg, seen)


def has_code_constraints(sig: type[ts.Signature]) -> bool:
    """Whether the declared outputs carry validators written in code, which no schema expresses."""
    seen: set[type] = set()
    for field in sig.output_fields.values():
        if any(isinstance(m, _VALIDATORS) for m in field.metadata):
            return True
        for model in _models(field.annotation, seen):
            decorators = model.__pydantic_decorators__
            if decorators.field_validators or decorators.model_validators:
                return True
            if any(
                isinstance(m, _VALIDATORS) for f in model.model_fields.values() for m in f.metadata
            ):
                return True
    return False


def signatures() -> list[type[ts.Signature]]:
    """Module-level signatures of the test suite, deduplicated, in a stable order."""
    _import_test_modules()
    seen: dict[str, type[ts.Signature]] = {}
    for sig in _subclasses(ts.Signature):
        if sig.__module__.startswith("typedspy") or "<locals>" in sig.__qualname__:
            continue
        seen.setdefault(f"{sig.__module__}.{sig.__qualname__}", sig)
    return [seen[key] for key in sorted(seen)]


def compiled_schemas() -> list[tuple[str, type[ts.Signature], ts.CompiledSchema]]:
    """``(id, signature, compiled)`` for every signature and target that compiles.

    Left out: signatures a target refuses on purpose (the suite tests those refusals) and
    signatures whose outputs are checked by code (validators), which no engine can enforce.
    """
    out = []
    for sig in signatures():
        for target in TARGETS:
            try:
                compiled = ts.compile_schema(sig, target)
            except SchemaError:
                continue
            if has_code_constraints(sig):
                continue
            out.append((f"{sig.__module__}.{sig.__qualname__}[{target}]", sig, compiled))
    return out
