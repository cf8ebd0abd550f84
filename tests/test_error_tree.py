"""The error tree drawn in docs/retries-and-errors.md and in `typedspy.errors` is the code's."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

import typedspy as ts

ROOT = Path(__file__).resolve().parents[1]
LINE = re.compile(r"^(?P<indent>[│ ]*)[├└]── (?P<name>\w+)(?: \((?P<builtins>[\w, ]+)\))?")


def _tree(text: str) -> dict[str, tuple[str, set[str]]]:
    """Each class the drawing names: its parent in the drawing, and the builtins it names."""
    lines = text.splitlines()
    top = next(i for i, line in enumerate(lines) if line.strip() == "TypedspyError")
    margin = lines[top].index("T")
    parents: list[str] = ["TypedspyError"]
    drawn: dict[str, tuple[str, set[str]]] = {}
    for line in (line[margin:] for line in lines[top + 1 :]):
        if not line.strip() or line.startswith("```"):
            break
        match = LINE.match(line)
        if match is None:  # a note continuing the line above
            continue
        depth = len(match["indent"]) // 4
        del parents[depth + 1 :]
        builtins = {b.strip() for b in (match["builtins"] or "").split(",") if b.strip()}
        drawn[match["name"]] = (parents[depth], builtins)
        parents.append(match["name"])
    return drawn


def _classes() -> dict[str, type[ts.TypedspyError]]:
    found: dict[str, type[ts.TypedspyError]] = {}
    for name in ts.errors.__all__:
        value = getattr(ts.errors, name)
        if inspect.isclass(value) and issubclass(value, ts.TypedspyError):
            found[name] = value
    found["ConfirmationRejected"] = ts.ConfirmationRejected
    del found["TypedspyError"]
    return found


@pytest.mark.parametrize(
    "text",
    [
        (ROOT / "docs" / "retries-and-errors.md").read_text(encoding="utf-8"),
        ts.errors.__doc__ or "",
    ],
    ids=["docs/retries-and-errors.md", "typedspy.errors"],
)
def test_the_drawn_error_tree_is_the_code(text: str) -> None:
    drawn, classes = _tree(text), _classes()
    assert sorted(classes.keys() - drawn.keys()) == [], "classes missing from the drawing"
    assert sorted(drawn.keys() - classes.keys()) == [], "drawn classes that do not exist"
    for name, cls in classes.items():
        parent, builtins = drawn[name]
        ours = [b.__name__ for b in cls.__bases__ if issubclass(b, ts.TypedspyError)]
        others = {b.__name__ for b in cls.__bases__ if not issubclass(b, ts.TypedspyError)}
        assert ours == [parent], f"{name}: drawn under {parent}, derives from {ours}"
        assert builtins == others, f"{name}: drawn with {builtins}, derives from {others}"
