"""`LM` stands on the public surface of the openai SDK and its HTTP library (ADR-064).

A private name of theirs (``httpx._utils.get_environment_proxies``, an override of
``OpenAI._calculate_retry_timeout``) can move in any release; the modules that talk to them
(`lm/_openai*.py`) read no private attribute of theirs, import none of their private modules,
and override no private method in a subclass of theirs.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SDK_MODULES = sorted((ROOT / "src" / "typedspy" / "lm").glob("_openai*.py"))
# The names the SDK and its HTTP library are bound to there (`_http` is the SDK's own httpx).
THEIRS = {"openai", "httpx", "httpx2", "_http"}


def _private(name: str) -> bool:
    return name.startswith("_") and not name.endswith("__")


def _root(node: ast.expr) -> str | None:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def private_uses(source: str) -> list[str]:
    """Their private names that ``source`` reads, imports or overrides."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and _private(node.attr) and _root(node) in THEIRS:
            found.append(f"line {node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.ImportFrom) and node.module:
            parts = node.module.split(".")
            if parts[0] in THEIRS and any(_private(part) for part in parts[1:]):
                found.append(f"line {node.lineno}: from {node.module} import ...")
        elif isinstance(node, ast.ClassDef) and any(_root(b) in THEIRS for b in node.bases):
            found += [
                f"line {item.lineno}: {node.name}.{item.name} overrides a private method"
                for item in node.body
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and _private(item.name)
            ]
    return sorted(found, key=lambda use: int(use.split(":")[0].removeprefix("line ")))


@pytest.mark.parametrize("module", SDK_MODULES, ids=lambda path: path.name)
def test_the_sdk_modules_use_no_private_name_of_the_sdk_or_httpx(module: Path) -> None:
    assert private_uses(module.read_text(encoding="utf-8")) == []


def test_the_checker_sees_each_kind_of_private_use() -> None:
    source = """
import openai
from httpx._utils import get_environment_proxies

proxies = _http._utils.get_environment_proxies()

class Blocking(openai.OpenAI):
    def _calculate_retry_timeout(self, *args): ...
    def __init__(self): ...

class Ours:
    def _fine(self): ...
"""
    assert private_uses(source) == [
        "line 3: from httpx._utils import ...",
        "line 5: _http._utils",
        "line 8: Blocking._calculate_retry_timeout overrides a private method",
    ]
