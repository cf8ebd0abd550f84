"""What the test suite defines inside its functions: signatures, tools, and the ReAct agents.

Each test module's functions are read with `ast`. The classes and functions a test defines
are rebuilt, each in a ``try``, inside a function of the same name whose globals are a copy of
the module's (a definition runs no test code; one that needs a test's own values fails and is
left out). A ``ReAct(...)`` call is rebuilt when its signature and tools name only module-level
objects, objects its function defines, or a fixture of the same module whose ``return`` names
such objects.
"""

from __future__ import annotations
import __future__

import ast
import re
import sys
from collections.abc import Iterator, Sequence
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
# A file with none of these defines no signature, tool or agent inside a function.
_WORTH_READING = re.compile(r"ReAct\(|^[ \t]+class \w+\(.*Signature\)|^[ \t]+@[\w.]*tool\b", re.M)

Function = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass
class Harvest:
    """Everything rebuilt from inside the suite's functions, and how many ReAct calls it read."""

    signatures: dict[str, type[ts.Signature]] = field(default_factory=dict)
    tools: dict[str, ts.Tool] = field(default_factory=dict)
    agents: dict[str, tuple[Any, list[ts.Tool]]] = field(default_factory=dict)
    react_calls: int = 0


def _functions(tree: ast.Module) -> Iterator[Function]:
    for node in tree.body:
        if isinstance(node, Function):
            yield node
        elif isinstance(node, ast.ClassDef):
            yield from (n for n in node.body if isinstance(n, Function))


def _is_react(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    callee = node.func
    return (callee.id if isinstance(callee, ast.Name) else getattr(callee, "attr", None)) == "ReAct"


class _Module:
    """One test module: its source tree and the namespaces rebuilt per function."""

    def __init__(self, module: ModuleType, path: Path, source: str) -> None:
        self.module = module
        self.path = path
        self.tree = ast.parse(source)
        future = getattr(module, "annotations", None) is __future__.annotations
        self.flags = _FUTURE if future else 0
        self._namespaces: dict[int, tuple[dict[str, Any], dict[str, Any]]] = {}

    def namespace(self, func: Function) -> tuple[dict[str, Any], dict[str, Any]]:
        """The module's namespace with what ``func`` defines, and those definitions alone."""
        if func.lineno not in self._namespaces:
            self._namespaces[func.lineno] = self._rebuild(func)
        return self._namespaces[func.lineno]

    def _rebuild(self, func: Function) -> tuple[dict[str, Any], dict[str, Any]]:
        inner = sorted(
            (
                n
                for n in ast.walk(func)
                if n is not func
                and isinstance(n, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            ),
            key=lambda n: n.lineno,
        )
        made: dict[str, Any] = {}
        ns = dict(vars(self.module))
        try:
            code = self._wrapper(func.name, inner)
        except SyntaxError:  # e.g. a ``nonlocal`` of the test's own variable: try one by one
            code = self._wrapper(func.name, [n for n in inner if self._compiles(n)])
        try:
            exec(code, ns)  # definitions only: class bodies and decorators
            made = ns.pop(func.name)()
        except Exception:  # the function's definitions are left out as a whole
            pass
        ns.update(made)
        return ns, made

    def _wrapper(self, name: str, nodes: Sequence[ast.stmt]) -> Any:
        # Each definition in a `try`, in a function (a class's forward references resolve in
        # its defining frame's locals, as in the test), which returns its locals.
        guarded: list[ast.stmt] = [
            ast.Try(
                body=[node],
                handlers=[
                    ast.ExceptHandler(type=ast.Name("Exception", ast.Load()), body=[ast.Pass()])
                ],
                orelse=[],
                finalbody=[],
            )
            for node in nodes
        ]
        call_locals = ast.Call(func=ast.Name("locals", ast.Load()), args=[], keywords=[])
        wrapper = ast.FunctionDef(
            name=name,
            args=ast.arguments([], [], None, [], [], None, []),
            body=[*guarded, ast.Return(call_locals)],
            decorator_list=[],
            returns=None,
        )
        tree = ast.fix_missing_locations(ast.Module([wrapper], []))
        return compile(tree, str(self.path), "exec", self.flags, True)

    def _compiles(self, node: ast.stmt) -> bool:
        try:
            compile(ast.Module([node], []), str(self.path), "exec", self.flags, True)
        except SyntaxError:
            return False
        return True

    def fixture_value(self, name: str) -> Any:
        """What a same-module fixture returns, when its last ``return`` can be rebuilt."""
        fixture = next((f for f in _functions(self.tree) if f.name == name), None)
        returns = [] if fixture is None else [n for n in fixture.body if isinstance(n, ast.Return)]
        if fixture is None or not returns or returns[-1].value is None:
            raise LookupError(name)
        return self.evaluate(returns[-1].value, self.namespace(fixture)[0])

    def evaluate(self, node: ast.expr, ns: dict[str, Any]) -> Any:
        expression = ast.Expression(node)
        if not all(isinstance(n, _SAFE) for n in ast.walk(expression)):
            raise LookupError("not a plain reference")
        return eval(compile(expression, str(self.path), "eval"), ns)  # names and calls only

    def agent(self, func: Function, call: ast.Call) -> tuple[Any, list[Any]]:
        """The signature and tools (as the test passed them) of a ``ReAct(...)`` call."""
        ns = self.namespace(func)[0]
        sig_node = _argument(call, 0, "signature")
        if sig_node is None:
            raise LookupError("no signature")
        tools_node = _argument(call, 1, "tools")
        params = {a.arg for a in func.args.args + func.args.kwonlyargs}
        if tools_node is None:
            tools: Any = []
        elif isinstance(tools_node, ast.Name) and tools_node.id in params:
            tools = self.fixture_value(tools_node.id)
        else:
            tools = self.evaluate(tools_node, ns)
        return self.evaluate(sig_node, ns), list(tools)


def _argument(call: ast.Call, position: int, name: str) -> ast.expr | None:
    if len(call.args) > position:
        return call.args[position]
    return next((k.value for k in call.keywords if k.arg == name), None)


class _Tools:
    """Each object a test passes as a tool, made a `Tool` once."""

    def __init__(self) -> None:
        self._made: dict[int, ts.Tool] = {}

    def __call__(self, objects: list[Any]) -> list[ts.Tool]:
        out = []
        for obj in objects:
            if id(obj) not in self._made:
                self._made[id(obj)] = next(iter(ts.tools.Toolset([obj])))
            out.append(self._made[id(obj)])
        return out


def harvest(modules: list[tuple[ModuleType, Path]]) -> Harvest:
    """Signatures, tools and agents rebuilt from inside the given test modules' functions."""
    out = Harvest()
    as_tools = _Tools()
    built: set[tuple[Any, ...]] = set()
    for module, path in modules:
        text = path.read_text(encoding="utf-8")
        if not _WORTH_READING.search(text):
            continue
        source = _Module(module, path, text)
        for func in _functions(source.tree):
            nodes = list(ast.walk(func))
            calls = [n for n in nodes if _is_react(n)]
            if not calls and not any(isinstance(n, ast.ClassDef | Function) for n in nodes[1:]):
                continue
            for name, obj in source.namespace(func)[1].items():
                key = f"{module.__name__}.{func.name}.{name}"
                if isinstance(obj, type) and issubclass(obj, ts.Signature):
                    out.signatures[key] = obj
                elif isinstance(obj, ts.Tool):
                    out.tools[key] = obj
            for call in calls:
                assert isinstance(call, ast.Call)
                out.react_calls += 1
                try:
                    signature, objects = source.agent(func, call)
                    same = (
                        signature if isinstance(signature, str) else id(signature),
                        *map(id, objects),
                    )
                    if same in built:  # the same agent again
                        continue
                    built.add(same)
                    tools = as_tools(objects)
                    ts.ReAct(signature, tools=tools)  # the suite's refusals are no agents
                except Exception:  # built from a test's own values, or refused: left out
                    continue
                out.agents[f"{module.__name__}.{func.name}:{call.lineno}"] = (signature, tools)
    return out


def suite_modules(tests: Path) -> list[tuple[ModuleType, Path]]:
    """The imported modules of the suite's test files, with their paths."""
    found = []
    for path in sorted(tests.rglob("test_*.py")):
        module = sys.modules.get(path.stem)
        if module is not None and Path(getattr(module, "__file__", "")) == path:
            found.append((module, path))
    return found
