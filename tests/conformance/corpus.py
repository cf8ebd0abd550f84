"""Every signature, tool and ReAct agent the test suite defines, and their compiled schemas.

Module-level signatures and tools are found on the imported test modules; those defined inside
test functions, and the ReAct agents the tests build, are rebuilt by `harvest`.
"""

from __future__ import annotations

import functools
import importlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, get_args

from harvest import Harvest, harvest, suite_modules
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


@functools.cache
def harvested() -> Harvest:
    """What the suite defines inside its test functions (see `harvest`)."""
    _import_test_modules()
    return harvest(suite_modules(TESTS))


def _key(*parts: Any) -> str:
    return json.dumps(parts, sort_keys=True, default=repr)


def compiled_schemas() -> list[tuple[str, type[ts.Signature], ts.schema.CompiledSchema]]:
    """``(id, signature, compiled)`` for every signature and target that compiles.

    Module-level signatures first, then those defined inside test functions; a signature with
    the same outputs (schema and types) as one already listed is left out, as are signatures
    a target refuses on purpose (the suite tests those refusals) and signatures whose outputs
    are checked by code (validators), which no engine can enforce.
    """
    named = [(f"{s.__module__}.{s.__qualname__}", s) for s in signatures()]
    named += sorted(harvested().signatures.items())
    out = []
    seen: set[str] = set()
    for name, sig in named:
        if has_code_constraints(sig):
            continue
        for target in TARGETS:
            try:
                compiled = ts.schema.compile_schema(sig, target)
            except SchemaError:
                continue
            outputs = {n: repr(f.annotation) for n, f in sig.output_fields.items()}
            key = _key(target, compiled.schema, outputs)
            if key not in seen:
                seen.add(key)
                out.append((f"{name}[{target}]", sig, compiled))
    return out


def _wire(tool: ts.Tool, target: str) -> dict[str, Any] | None:
    try:
        return tool.to_openai_tool(target)
    except SchemaError:  # a parameter type the target refuses (the suite tests that)
        return None


def _tool_key(tool: ts.Tool) -> str:
    wire = [_wire(tool, t) for t in TARGETS]
    return _key(tool.name, wire, repr(tool.signature.input_fields))


def tools() -> list[tuple[str, ts.Tool, str]]:
    """``(id, tool, target)``: every tool the suite defines, for each target that takes it.

    Module-level tools, those defined inside test functions, and the tools of its ReAct agents;
    one of each (name, wire schemas and parameter types).
    """
    found: list[tuple[str, ts.Tool]] = []
    for name, module in sorted(sys.modules.items()):
        if Path(getattr(module, "__file__", None) or "/").is_relative_to(TESTS):
            found += [
                (f"{name}.{attr}", value)
                for attr, value in sorted(vars(module).items())
                if isinstance(value, ts.Tool)
            ]
    found += sorted(harvested().tools.items())
    for name, (_, agent_tools) in sorted(harvested().agents.items()):
        found += [(f"{name}.{tool.name}", tool) for tool in agent_tools]
    unique: dict[str, tuple[str, ts.Tool]] = {}
    for name, tool in found:
        unique.setdefault(_tool_key(tool), (name, tool))
    return [
        (f"{name}[{target}]", tool, target)
        for name, tool in unique.values()
        for target in TARGETS
        if _wire(tool, target) is not None
    ]


def agents() -> list[tuple[str, Any, list[ts.Tool], str]]:
    """``(id, signature, tools, target)``: every ReAct agent the suite builds that can be
    rebuilt, one of each (same signature and tools), for each target its schemas compile in."""
    out: dict[str, tuple[str, Any, list[ts.Tool]]] = {}
    for name, (signature, agent_tools) in sorted(harvested().agents.items()):
        sig = ts.ReAct(signature, tools=agent_tools).signature
        key = _key(
            {n: repr(f.annotation) for n, f in sig.input_fields.items()},
            {n: repr(f.annotation) for n, f in sig.output_fields.items()},
            sig.instructions,
            sorted(_tool_key(t) for t in agent_tools),
        )
        out.setdefault(key, (name, signature, agent_tools))
    return [
        (f"{name}[{target}]", signature, agent_tools, target)
        for name, signature, agent_tools in out.values()
        for target in TARGETS
        if _compiles(ts.ReAct(signature).signature, target)
        and all(_wire(t, target) is not None for t in agent_tools)
    ]


def _compiles(sig: type[ts.Signature], target: str) -> bool:
    try:
        ts.schema.compile_schema(sig, target)
    except SchemaError:
        return False
    return True
