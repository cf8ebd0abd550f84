"""Datasets: JSONL, CSV, JSON files or lists of dicts, each row validated against a signature."""

from __future__ import annotations

import csv
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from typedspy._json import loads
from typedspy._types import FieldError
from typedspy.errors import DatasetError, ExampleError, RowError
from typedspy.evaluation._example import Example
from typedspy.signature import Signature

__all__ = ["load_dataset"]

_MAX_LISTED = 10


def load_dataset(
    source: str | os.PathLike[str] | Iterable[Mapping[str, Any]],
    signature: type[Signature],
    *,
    rename: Mapping[str, str] | None = None,
) -> list[Example]:
    """Read a dataset and validate every row against ``signature``.

    A ``.jsonl`` file holds one JSON object per line (blank lines are skipped); a ``.json``
    file holds a list of objects; a ``.csv`` file has a header row naming the fields, and a
    cell for a field that is not a string is read as JSON when it parses (``3``, ``["a"]``,
    ``{"_type": "Bug", ...}``), as text otherwise; an empty cell is a missing value. Union
    values may carry ``_type``. Every row is checked before anything is returned, and all bad
    rows are reported together.

    Example:
        ```python
        devset = ts.load_dataset("tickets.jsonl", Triage)
        devset = ts.load_dataset([{"text": "refund please", "label": {...}}], Triage)
        ```

    Args:
        source: A file path, or an iterable of mappings.
        signature: The signature whose fields the rows hold.
        rename: Column name to field name, for files whose columns are named differently.

    Returns:
        One typed `Example` per row, in order.

    Raises:
        DatasetError: Rows that do not fit; ``rows`` holds a `RowError` (row number from 1,
            field path, message) per problem, and the message lists the first ones.
        ConfigurationError: A file of an unknown type.
        OSError: The file cannot be read.
    """
    name, rows = _rows(source)
    from_csv = name.lower().endswith(".csv")
    renames = dict(rename or {})
    examples: list[Example] = []
    problems: list[RowError] = []
    for number, row in rows:
        if not isinstance(row, Mapping):
            problems.append(
                RowError(number, FieldError((), f"expected an object, got {_kind(row)}"))
            )
            continue
        values = {renames.get(str(k), str(k)): v for k, v in row.items()}
        if from_csv:
            values = {k: _cell(v, signature, k) for k, v in values.items()}
        try:
            examples.append(Example(signature, **values))
        except ExampleError as exc:
            problems.extend(RowError(number, e) for e in exc.errors)
    if problems:
        listed = "\n  ".join(str(p) for p in problems[:_MAX_LISTED])
        more = (
            f"\n  ... and {len(problems) - _MAX_LISTED} more" if len(problems) > _MAX_LISTED else ""
        )
        bad = len({p.row for p in problems})
        raise DatasetError(
            f"{name}: {bad} row(s) do not fit {signature.__name__}:\n  {listed}{more}",
            rows=problems,
            source=name,
        )
    return examples


def _rows(
    source: str | os.PathLike[str] | Iterable[Mapping[str, Any]],
) -> tuple[str, list[tuple[int, Any]]]:
    from typedspy.errors import ConfigurationError

    if not isinstance(source, (str, os.PathLike)):
        return "<list>", list(enumerate(source, start=1))
    path = Path(source)
    suffix = path.suffix.lower()
    if suffix not in (".jsonl", ".json", ".csv"):
        raise ConfigurationError(
            f"{path}: unknown dataset type {suffix!r}; use .jsonl, .json or .csv"
        )
    text = path.read_text(encoding="utf-8")
    if suffix == ".jsonl":
        return str(path), list(_jsonl(text, str(path)))
    if suffix == ".json":
        data = _json(text, str(path), 1)
        if not isinstance(data, list):
            raise DatasetError(
                f"{path}: expected a JSON list of objects, got {_kind(data)}",
                rows=[RowError(1, FieldError((), "not a list"))],
                source=str(path),
            )
        return str(path), list(enumerate(data, start=1))
    return str(path), list(_csv(text))


def _jsonl(text: str, name: str) -> Iterable[tuple[int, Any]]:
    number = 0
    for line in text.splitlines():
        if line.strip():
            number += 1
            yield number, _json(line, name, number)


def _json(text: str, name: str, number: int) -> Any:
    try:
        return loads(text)
    except ValueError as exc:
        raise DatasetError(
            f"{name}: row {number} is not valid JSON: {exc}",
            rows=[RowError(number, FieldError((), f"invalid JSON: {exc}"))],
            source=name,
        ) from exc


def _csv(text: str) -> Iterable[tuple[int, dict[str, Any]]]:
    reader = csv.DictReader(text.splitlines())
    for number, row in enumerate(reader, start=1):
        yield number, {k: v for k, v in row.items() if k is not None and v not in ("", None)}


def _cell(text: Any, signature: type[Signature], name: str) -> Any:
    """A CSV cell: text for a ``str`` field, else JSON when it parses (else text).

    Validation then decides: ``"three"`` for an ``int`` field fails with the row's number.
    """
    field = signature.input_fields.get(name) or signature.output_fields.get(name)
    if not isinstance(text, str) or field is None or field.annotation is str:
        return text
    try:
        return loads(text)
    except ValueError:
        return text


def _kind(value: object) -> str:
    return "null" if value is None else type(value).__name__
