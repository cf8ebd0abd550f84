"""What the test suite defines inside its functions: signatures, tools, and the ReAct agents.

Each test module's functions are read with `ast`. The classes and functions they define are
rebuilt in a copy of the module's namespace (a definition runs no test code; one that needs a
test's local values fails to rebuild and is left out). A ``ReAct(...)`` call is rebuilt when
its signature and tools name only module-level objects, objects its function defines, or a
pytest fixture of the same module whose ``return`` names such objects.
"""

from __future__ import annotations

import __future__
import ast
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import typedspy as ts

_FUTURE = __future__.annotations.compiler_flag
_SAFE = (
    ast.Expression,
    ast.Name,
    ast.Load,
    ast.Attribute,
    ast.List,
    ast.Tuple,
    ast.Constant,
    ast.Call,
    ast.keyword,
)


@dataclass
class Harvest:
    """Everything rebuilt from inside the suite's functions."""

    signatures: dict[str, type[ts.Signature]] = field(default_factory=dict)
    tools: dict[str, ts.Tool] = field(default_factory=dict)
    agents: dict[str, tuple[Any, list[ts.Tool]]] = field(default_factory=dict)
    react_calls: int = 0


def _functions(tree: ast.Module) -> Iterator[ast.FunctionDef | ast.AsyncFunctionDef]:
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield node
        elif isinstance(node, ast.ClassDef):
            yield from (
                n for n in node.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
            )


class _Module:
    """One test module: its source tree and the namespaces rebuilt per function."""

    def __init__(self, module: ModuleType, path: Path) -> None:
        self.module = module
        self.path = path
        self.tree = ast.parse(path.read_text(encoding="utf-8"))
        self.flags = _FUTURE if getattr(module, "annotations", None) is __future__.annotations else 0
        self._namespaces: dict[int, dict[str, Any]] = {}
        self.defined: dict[int, list[tuple[str, Any]]] = {}

    def namespace(self, func: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, Any]:
        """The module's namespace plus what ``func`` defines, rebuilt in a function's frame.

        The definitions run inside a function of the same name (each in a ``try``), so a class
        is defined as in the test: in a frame whose locals resolve its forward references.
        """
        if func.lineno in self._namespaces:
            return self._namespaces[func.lineno]
        inner = sorted(
            (
                n
                for n in ast.walk(func)
                if n is not func
                and isinstance(n, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
                and self._compiles(n)
            ),
            key=lambda n: n.lineno,
        )
        guarded: list[ast.stmt] = [
            ast.Try(
                body=[node],
                handlers=[ast.ExceptHandler(type=ast.Name("Exception", ast.Load()), body=[ast.Pass()])],
                orelse=[],
                finalbody=[],
            )
            for node in inner
        ]
        call_locals = ast.Call(func=ast.Name("locals", ast.Load()), args=[], keywords=[])
        wrapper = ast.FunctionDef(
            name=func.name,
            args=ast.arguments([], [], None, [], [], None, []),
            body=[*guarded, ast.Return(call_locals)],
            decorator_list=[],
            returns=None,
            type_params=[],
        )
        tree = ast.fix_missing_locations(ast.Module([wrapper], []))
        ns = dict(vars(self.module))
        made: dict[str, Any] = {}
        try:
            exec(compile(tree, str(self.path), "exec", self.flags, True), ns)  # definitions only
            made = ns.pop(func.name)()
        except Exception:  # noqa: BLE001, S110 - left out as a whole
            pass
        ns.update(made)
        self._namespaces[func.lineno] = ns
        self.defined[func.lineno] = list(made.items())
        return ns

    def _compiles(self, node: ast.stmt) -> bool:
        try:
            compile(ast.Module([node], []), str(self.path), "exec", self.flags, True)
        except SyntaxError:  # e.g. ``nonlocal`` of a test's own variable
            return False
        return True

    def fixture_value(self, name: str) -> Any:
        """The value a same-module fixture returns, when its ``return`` can be rebuilt."""
        fixture = next((f for f in _functions(self.tree) if f.name == name), None)
        if fixture is None:
            raise LookupError(name)
        returns = [n for n in fixture.body if isinstance(n, ast.Return) and n.value is not None]
        if not returns:
            raise LookupError(name)
        assert returns[-1].value is not None
        return _evaluate(returns[-1].value, self.namespace(fixture), self.path)


def _evaluate(node: ast.expr, ns: dict[str, Any], path: Path) -> Any:
    expression = ast.Expression(node)
    if not all(isinstance(n, _SAFE) for n in ast.walk(expression)):
        raise LookupError("not a plain reference")
    return eval(compile(expression, str(path), "eval"), ns)  # noqa: S307 - names and calls only


def _react_calls(func: ast.AST) -> Iterator[ast.Call]:
    for node in ast.walk(func):
        if isinstance(node, ast.Call):
            callee = node.func
            name = callee.id if isinstance(callee, ast.Name) else getattr(callee, "attr", None)
            if name == "ReAct":
                yield node


def _argument(call: ast.Call, position: int, name: str) -> ast.expr | None:
    if len(call.args) > position:
        return call.args[position]
    return next((k.value for k in call.keywords if k.arg == name), None)


def _agent(
    source: _Module, func: ast.FunctionDef | ast.AsyncFunctionDef, call: ast.Call
) -> tuple[Any, list[ts.Tool]]:
    ns = source.namespace(func)
    params = {a.arg for a in func.args.args + func.args.kwonlyargs}
    sig_node = _argument(call, 0, "signature")
    if sig_node is None:
        raise LookupError("no signature")
    signature = _evaluate(sig_node, ns, source.path)
    tools_node = _argument(call, 1, "tools")
    if tools_node is None:
        tools: Any = []
    elif isinstance(tools_node, ast.Name) and tools_node.id in params:
        tools = source.fixture_value(tools_node.id)
    else:
        tools = _evaluate(tools_node, ns, source.path)
    toolset = list(ts.Toolset(tools))
    ts.ReAct(signature, tools=toolset)  # the suite's refusals are not agents
    return signature, toolset


def harvest(modules: list[tuple[ModuleType, Path]]) -> Harvest:
    """Signatures, tools and agents rebuilt from inside the given test modules' functions."""
    out = Harvest()
    for module, path in modules:
        source = _Module(module, path)
        for func in _functions(source.tree):
            source.namespace(func)
            for name, obj in source.defined[func.lineno]:
                key = f"{module.__name__}.{func.name}.{name}"
                if isinstance(obj, type) and issubclass(obj, ts.Signature):
                    out.signatures[key] = obj
                elif isinstance(obj, ts.Tool):
                    out.tools[key] = obj
            for call in _react_calls(func):
                out.react_calls += 1
                try:
                    agent = _agent(source, func, call)
                except Exception:  # noqa: BLE001, S112 - built from a test's locals: left out
                    continue
                out.agents[f"{module.__name__}.{func.name}:{call.lineno}"] = agent
    return out


def test_modules(tests: Path) -> list[tuple[ModuleType, Path]]:
    """The imported modules of the suite's test files, with their paths."""
    found = []
    for path in sorted(tests.rglob("test_*.py")):
        module = sys.modules.get(path.stem)
        if module is not None and Path(getattr(module, "__file__", "")) == path:
            found.append((module, path))
    return found
