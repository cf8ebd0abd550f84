"""Errors of tools, examples, datasets, saved programs and saved resume states."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from typedspy._types import FieldError
from typedspy.errors._base import ConfigurationError, TypedspyError

__all__ = [
    "DatasetError",
    "ExampleError",
    "ResumeStateError",
    "RowError",
    "SavedStateError",
    "ToolArgumentsError",
    "ToolError",
    "ToolNotFoundError",
]


class ToolError(TypedspyError):
    """A tool could not be built, or its result does not match its signature's outputs.

    Attributes:
        tool: The tool's name, when the error concerns one tool.
        errors: Field errors, when the problem is a value that failed validation.
    """

    def __init__(
        self, message: str, *, tool: str | None = None, errors: Sequence[FieldError] = ()
    ) -> None:
        super().__init__(message)
        self.tool = tool
        self.errors = tuple(errors)


class ToolNotFoundError(ToolError, KeyError):
    """No tool has the requested name.

    Attributes:
        tool: The name that was asked for.
        available: The names that do exist, sorted.
    """

    def __init__(self, message: str, *, tool: str, available: Sequence[str] = ()) -> None:
        super().__init__(message, tool=tool)
        self.available = tuple(available)

    def __str__(self) -> str:
        # KeyError would show the message as a quoted repr.
        return str(self.args[0]) if self.args else ""


class ToolArgumentsError(ToolError, ValueError):
    """A tool's arguments are not valid JSON or fail its input schema; the tool did not run.

    Attributes:
        tool: The tool's name.
        errors: One `FieldError` per problem; ``path`` names the argument (and nested fields).
    """

    def __init__(self, message: str, *, tool: str, errors: Sequence[FieldError]) -> None:
        super().__init__(message, tool=tool, errors=errors)


class ExampleError(TypedspyError, ValueError):
    """An example's values do not fit its signature.

    Attributes:
        errors: One `FieldError` per problem; ``path`` starts with the field name.
    """

    def __init__(self, message: str, *, errors: Sequence[FieldError] = ()) -> None:
        super().__init__(message)
        self.errors = tuple(errors)


@dataclass(frozen=True)
class RowError:
    """One problem in one dataset row.

    Attributes:
        row: The row's number, from 1 (for a JSONL or CSV file: see `DatasetError.source`);
            0 for a CSV file's header row.
        error: The field path and message.
    """

    row: int
    error: FieldError

    def __str__(self) -> str:
        return f"row {self.row}: {self.error}"


class DatasetError(ExampleError):
    """Rows of a dataset that do not fit its signature; every bad row is listed.

    Attributes:
        rows: One `RowError` per problem, in row order.
        source: The file (or ``"<list>"``) the rows came from.
    """

    def __init__(self, message: str, *, rows: Sequence[RowError], source: str) -> None:
        super().__init__(message, errors=[r.error for r in rows])
        self.rows = tuple(rows)
        self.source = source


class SavedStateError(ConfigurationError):
    """A saved program that cannot be loaded into this program; nothing was changed.

    Raised by `Module.load` and `Module.load_state` for a file that cannot be read (missing,
    a directory, not UTF-8, not JSON, nested too deep), a format version this typedspy does not
    read, a value of the wrong type or an unknown key at any field, or state that does not fit
    this program (other predictor paths, another signature). A `ConfigurationError`, so code
    written against the earlier promise keeps catching it.

    Attributes:
        source: The file read (``"<state>"`` for a dict given to `Module.load_state`).
        path: The predictor path the problem is at (``""`` for the file as a whole).
        errors: One `FieldError` per problem; ``path`` runs from the top of the file
            (``predictors``, the predictor path, ``demos``, the demo's index, the field ...).
    """

    def __init__(
        self,
        message: str,
        *,
        source: str = "<state>",
        path: str = "",
        errors: Sequence[FieldError] = (),
    ) -> None:
        super().__init__(message)
        self.source = source
        self.path = path
        self.errors = tuple(errors)


@dataclass(eq=False, repr=False, kw_only=True)
class ResumeStateError(TypedspyError, ValueError):
    """A saved `ResumeState` was refused: nothing of it was used, and no tool ran.

    Raised by ``ResumeState.from_json`` for text that is not JSON, a state that is not signed,
    a signature that does not match the content (changed after it was signed, or signed with
    another secret), and a signed state that is not a ResumeState (ADR-052).

    Attributes:
        path: The field at fault: ``"signature"`` for a missing or wrong signature, a field
            path such as ``"tool_call"`` for a malformed state, ``""`` for the text as a whole.
    """

    path: str = ""
