"""The public surface: every export exists, is documented, and the list is in order."""

from __future__ import annotations

import importlib
import importlib.util
import inspect

import pytest

import typedspy as ts

PACKAGES = [
    "typedspy",
    "typedspy.batch",
    "typedspy.batch_api",
    "typedspy.cache",
    "typedspy.errors",
    "typedspy.limits",
    "typedspy.lm",
    *(["typedspy.mcp"] if importlib.util.find_spec("mcp") else []),  # the typedspy[mcp] extra
    "typedspy.media",
    "typedspy.modules",
    "typedspy.pipeline",
    "typedspy.prediction",
    "typedspy.program",
    "typedspy.react",
    "typedspy.schema",
    "typedspy.signature",
    "typedspy.testing",
    "typedspy.tracing",
    "typedspy.tools",
    "typedspy.streaming",
    "typedspy.evaluation",
    "typedspy.optimize",
    "typedspy.metrics",
]


@pytest.mark.parametrize("name", PACKAGES)
def test_all_names_exist(name: str) -> None:
    module = importlib.import_module(name)
    missing = [n for n in module.__all__ if not hasattr(module, n)]
    assert missing == []


def test_top_level_all_is_sorted_case_insensitively_within_groups() -> None:
    # ruff's RUF022 order: SCREAMING_CASE first, then CamelCase, then the rest, each sorted.
    def group(n: str) -> int:
        if n.isupper() and len(n) > 1:
            return 0
        return 1 if n[:1].isupper() else 2

    assert ts.__all__ == sorted(ts.__all__, key=lambda n: (group(n), n))


def test_every_public_callable_and_class_has_a_docstring() -> None:
    undocumented = []
    for name in ts.__all__:
        obj = getattr(ts, name)
        if (inspect.isclass(obj) or inspect.isfunction(obj)) and not inspect.getdoc(obj):
            undocumented.append(name)
    assert undocumented == []


def test_the_front_door_is_small() -> None:
    # Issue 22 item 4, ADR-062: the DSPy vocabulary, what every program touches and the error
    # roots; everything else is in its subpackage (ts.errors, ts.optimize, ts.limits, ...).
    assert len(ts.__all__) <= 40
    assert all(hasattr(ts, p) for p in ("errors", "optimize", "evaluation", "limits", "cache"))


def test_errors_share_one_root_and_refine_builtins() -> None:
    assert issubclass(ts.SchemaError, TypeError)
    assert issubclass(ts.ConfigurationError, ValueError)
    assert issubclass(ts.InputError, ts.ConfigurationError)
    exceptions = [
        getattr(ts.errors, n)
        for n in ts.errors.__all__
        if inspect.isclass(getattr(ts.errors, n))
        and issubclass(getattr(ts.errors, n), BaseException)
    ]
    # Pauses are control flow, not failures (ADR-012); everything else shares the root.
    failures = [e for e in exceptions if e is not ts.ConfirmationRequired]
    assert len(failures) > 15
    assert all(issubclass(e, ts.TypedspyError) for e in failures)


def test_package_ships_type_information() -> None:
    from pathlib import Path

    assert (Path(ts.__file__).parent / "py.typed").is_file()


def test_all_lists_every_public_name_of_the_package() -> None:
    import types

    helpers = {"annotations", "TYPE_CHECKING", "Any"}  # imports of the module itself
    public = {
        n
        for n, v in vars(ts).items()
        if not n.startswith("_")
        and not isinstance(v, types.ModuleType)
        and n not in helpers
        and n.isidentifier()  # pydantic 2.12.0 files a parametrized `Returns[...]` here too
    }
    assert sorted(public - set(ts.__all__)) == []


def test_public_exceptions_live_at_the_public_path_and_pickle_there() -> None:
    import pickle

    errors = [
        getattr(ts, n)
        for n in ts.__all__
        if inspect.isclass(getattr(ts, n)) and issubclass(getattr(ts, n), BaseException)
    ]
    assert {e.__name__: e.__module__ for e in errors} == {e.__name__: "typedspy" for e in errors}
    data = pickle.dumps(ts.ConfigurationError("x"))
    assert b"typedspy.modules" not in data and b"typedspy.errors" not in data
    assert type(pickle.loads(data)) is ts.ConfigurationError


def test_moved_classes_live_at_the_public_path_and_pickle_there() -> None:
    # ADR-042: Module, ReAct, Tool, ResumeState... moved packages; pickles name `typedspy`.
    import pickle

    moved = [ts.Module, ts.ReAct, ts.Tool, ts.ResumeState]
    assert {c.__name__: c.__module__ for c in moved} == {c.__name__: "typedspy" for c in moved}
    classes = [c for n in ts.__all__ if inspect.isclass(c := getattr(ts, n))]
    assert {c.__name__: c.__module__ for c in classes} == {c.__name__: "typedspy" for c in classes}
    data = pickle.dumps(ts.Predict("question -> answer"))
    assert b"typedspy.modules" not in data
    # A subpackage's classes pickle under the subpackage users import them from (ADR-062).
    assert (ts.tools.Toolset.__module__, ts.react.Trajectory.__module__) == (
        "typedspy.tools",
        "typedspy.react",
    )
    data = pickle.dumps(ts.react.Trajectory())
    assert b"typedspy.react._" not in data
    assert type(pickle.loads(data)) is ts.react.Trajectory
