"""Datasets: JSONL, CSV, JSON files or lists of dicts, each row validated against a signature."""

from __future__ import annotations

import csv
import os
import re
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from typedspy._json import loads
from typedspy._types import FieldError
from typedspy.errors import ConfigurationError, DatasetError, ExampleError, RowError, check_int
from typedspy.evaluation._example import Example
from typedspy.signature import Signature

__all__ = ["load_dataset"]

_MAX_LISTED = 10
MAX_ROW_BYTES = 64 * 1024 * 1024
"""Bytes one JSONL row may have (64 MiB): a longer line is refused before it is read whole."""
_BOM = b"\xef\xbb\xbf"  # the UTF-8 byte-order mark Excel and Windows tools write first
_ESCAPED = re.compile("[\udc80-\udcff]")  # a byte that was not UTF-8, read with surrogateescape


def load_dataset(
    source: str | os.PathLike[str] | Iterable[Mapping[str, Any]],
    signature: type[Signature],
    *,
    rename: Mapping[str, str] | None = None,
    max_row_bytes: int = MAX_ROW_BYTES,
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
        devset = ts.evaluation.load_dataset("tickets.jsonl", Triage)
        devset = ts.evaluation.load_dataset([{"text": "refund please", "label": {...}}], Triage)
        ```

    Args:
        source: A file path, or an iterable of mappings.
        signature: The signature whose fields the rows hold.
        rename: Column name to field name, for files whose columns are named differently.
        max_row_bytes: The most bytes one JSONL line may have (64 MiB); a longer one is refused
            having read no more than that.

    Returns:
        One typed `Example` per row, in order.

    Raises:
        DatasetError: Rows that do not fit; ``rows`` holds a `RowError` (row number from 1,
            field path, message) per problem, and the message lists the first ones. Also a
            row that is not JSON or not UTF-8, a JSONL line longer than ``max_row_bytes``, or
            a CSV cell longer than ``csv.field_size_limit()``, naming the row (and line, or
            column).
        ConfigurationError: A file of an unknown type, a ``source`` that is neither a path
            nor an iterable of mappings, or a ``rename`` that is not a mapping of column names
            to field names of ``signature``. Two columns of a row named (or renamed) as one
            field are that row's problem, in the `DatasetError`.
        OSError: The file cannot be read.
    """
    check_int("load_dataset", "max_row_bytes", max_row_bytes, optional=False)
    if not (isinstance(signature, type) and issubclass(signature, Signature)):
        raise ConfigurationError(
            f"load_dataset: signature={signature!r} is not a Signature subclass "
            "(for a string one, pass ts.make_signature(...))"
        )
    renames = _renames(rename, signature)
    name, rows = _rows(source, max_row_bytes)
    from_csv = name.lower().endswith(".csv")
    examples: list[Example] = []
    problems: list[RowError] = []
    for number, row in rows:
        if isinstance(row, FieldError):  # a row the reader could not take apart
            problems.append(RowError(number, row))
            continue
        if not isinstance(row, Mapping):
            problems.append(
                RowError(number, FieldError((), f"expected an object, got {_kind(row)}"))
            )
            continue
        values = {renames.get(str(k), str(k)): v for k, v in row.items()}
        if len(values) < len(row):  # two columns renamed to one field: neither is dropped
            problems.extend(RowError(number, e) for e in _collisions(row, renames))
            continue
        if from_csv:
            not_utf8 = _not_utf8(values)
            if not_utf8:
                problems.extend(RowError(number, e) for e in not_utf8)
                continue
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


def _renames(rename: object, signature: type[Signature]) -> dict[str, str]:
    """``rename`` checked: a mapping of column names to names of ``signature``'s fields.

    Raises:
        ConfigurationError: Not a mapping, or a pair that is not two strings or renames a
            column to no field of the signature, naming it.
    """
    if rename is None:
        return {}
    if not isinstance(rename, Mapping):
        raise ConfigurationError(
            f"load_dataset: rename is {_kind(rename)}, not a mapping of column names to field "
            "names such as {'question_text': 'question'}"
        )
    fields = {**signature.input_fields, **signature.output_fields}
    for column, field in rename.items():  # pyright: ignore[reportUnknownVariableType]
        if not (isinstance(column, str) and isinstance(field, str)):
            problem = "is not a column name and a field name, both strings"
        elif field not in fields:
            problem = f"names no field of {signature.__name__} (fields: {', '.join(fields)})"
        else:
            continue
        raise ConfigurationError(f"load_dataset: rename {column!r}: {field!r} {problem}")
    return dict(rename)  # pyright: ignore[reportUnknownArgumentType]


def _collisions(row: Mapping[Any, Any], renames: Mapping[str, str]) -> list[FieldError]:
    """A problem for each field that two or more of ``row``'s columns are named (renamed) as."""
    columns: dict[str, list[str]] = {}
    for key in row:
        columns.setdefault(renames.get(str(key), str(key)), []).append(str(key))
    return [
        FieldError((field,), f"given by more than one column: {', '.join(map(repr, keys))}")
        for field, keys in columns.items()
        if len(keys) > 1
    ]


def _rows(
    source: str | os.PathLike[str] | Iterable[Mapping[str, Any]], max_row_bytes: int
) -> tuple[str, list[tuple[int, Any]]]:
    if not isinstance(source, (str, os.PathLike)):
        if isinstance(source, (bytes, Mapping)) or not isinstance(source, Iterable):
            raise ConfigurationError(
                f"load_dataset: source is {_kind(source)}, neither a file path (str or Path) "
                "nor an iterable of rows (mappings)"
            )
        return "<list>", list(enumerate(source, start=1))
    path = Path(source)
    suffix = path.suffix.lower()
    if suffix not in (".jsonl", ".json", ".csv"):
        raise ConfigurationError(
            f"{path}: unknown dataset type {suffix!r}; use .jsonl, .json or .csv"
        )
    if suffix == ".jsonl":
        return str(path), _jsonl(path, max_row_bytes)
    if suffix == ".json":
        data = _json(_decoded(path.read_bytes().removeprefix(_BOM), str(path), 1, 1), str(path), 1)
        if not isinstance(data, list):
            got = f"{path}: expected a JSON list of objects, got {_kind(data)}"
            raise _bad_row(str(path), 1, "not a list", got)
        return str(path), list(enumerate(data, start=1))
    return str(path), _csv(path)


def _jsonl(path: Path, max_row_bytes: int) -> list[tuple[int, Any]]:
    rows: list[tuple[int, Any]] = []
    with path.open("rb") as f:  # lines end at "\n" only: JSON strings may hold U+2028
        line = 0
        most = min(max_row_bytes, sys.maxsize - 1) + 1  # readline takes no more than maxsize
        while raw := f.readline(most):  # never more than the limit held at once
            line += 1
            number = len(rows) + 1
            if len(raw) > max_row_bytes:
                problem = f"longer than max_row_bytes={max_row_bytes:,} (line {line})"
                raise _bad_row(str(path), number, problem)
            if line == 1:
                raw = raw.removeprefix(_BOM)
            if raw.strip():
                text = _decoded(raw, str(path), number, line)
                rows.append((number, _json(text, str(path), number)))
    return rows


def _decoded(raw: bytes, name: str, number: int, line: int) -> str:
    """``raw`` (row ``number``, from the file's line ``line``) as text, or a `DatasetError`."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line += raw.count(b"\n", 0, exc.start)
        column = exc.start - raw.rfind(b"\n", 0, exc.start)
        problem = f"not valid UTF-8 at line {line}, byte {column} ({exc.reason})"
    raise _bad_row(name, number, problem)  # not chained: the decode error holds the whole text


def _bad_row(name: str, number: int, problem: str, message: str = "") -> DatasetError:
    """The error for row ``number`` of ``name``: ``message``, or ``row {number} is {problem}``."""
    return DatasetError(
        message or f"{name}: row {number} is {problem}",
        rows=[RowError(number, FieldError((), problem))],
        source=name,
    )


def _json(text: str, name: str, number: int) -> Any:
    try:
        return loads(text, unique_keys=True)
    except ValueError as exc:
        message = f"{name}: row {number} is not valid JSON: {exc}"
        raise _bad_row(name, number, f"invalid JSON: {exc}", message) from exc


def _csv(path: Path) -> list[tuple[int, dict[str, Any] | FieldError]]:
    """The rows of a CSV file, bytes that are not UTF-8 kept as lone surrogates (`_not_utf8`).

    Quoting is read strictly: a quote never closed, or text after a closing quote, is an
    error naming the row, not the rest of the file read as one cell. A row with more cells
    than the header has columns is that row's problem (an unquoted comma shifts its cells).
    """
    rows: list[tuple[int, dict[str, Any] | FieldError]] = []
    with path.open(encoding="utf-8-sig", errors="surrogateescape", newline="") as f:
        reader = csv.DictReader(f, strict=True)
        number = 0  # the row being read: 0 for the header
        try:
            header = reader.fieldnames or ()
            bad = _not_utf8({f"column {i}": name for i, name in enumerate(header, start=1)})
            if bad:
                raise DatasetError(
                    f"{path}: the header row is not valid UTF-8: {bad[0]}",
                    rows=[RowError(0, e) for e in bad],
                    source=str(path),
                )
            twice = sorted({name for name in header if header.count(name) > 1})
            if twice:  # DictReader would keep the last such cell of each row, unsaid
                raise DatasetError(
                    f"{path}: the header row names {twice} more than once",
                    rows=[RowError(0, FieldError((n,), "a column named twice")) for n in twice],
                    source=str(path),
                )
            number = 1
            for row in reader:
                extra = row.pop(None, None)
                if extra:
                    problem = f"{len(extra)} cell(s) past the header's {len(header)} columns"
                    rows.append((number, FieldError((), problem)))
                else:
                    rows.append((number, {k: v for k, v in row.items() if v not in ("", None)}))
                number += 1
        except csv.Error as exc:  # a cell past csv.field_size_limit(), unclosed quoting, ...
            raise _unreadable(str(path), number, reader.reader.line_num, exc) from exc
    return rows


def _unreadable(name: str, number: int, line: int, exc: csv.Error) -> DatasetError:
    limit = csv.field_size_limit()
    if "field limit" in str(exc):
        problem = f"a cell is longer than csv.field_size_limit() ({limit:,} characters)"
    elif "unexpected end of data" in str(exc):
        problem = "a quoted cell is never closed (the file ends inside it)"
    else:
        problem = f"not readable as CSV: {exc}"
    where = f"row {number}" if number else "the header row"
    return _bad_row(name, number, problem, f"{name}: {where} (line {line}): {problem}")


def _not_utf8(values: Mapping[str, Any]) -> list[FieldError]:
    """A problem for each text value holding bytes that were not UTF-8 (read as surrogates)."""
    problems = []
    for key, value in values.items():
        found = _ESCAPED.search(value) if isinstance(value, str) else None
        if found is not None:
            byte = ord(found.group()) - 0xDC00
            where = f"byte 0x{byte:02x} at character {found.start() + 1}"
            problems.append(FieldError((key,), f"not valid UTF-8 ({where})"))
    return problems


def _cell(text: Any, signature: type[Signature], name: str) -> Any:
    """A CSV cell: text for a ``str`` field, else JSON when it parses (else text).

    Validation then decides: ``"three"`` for an ``int`` field fails with the row's number.
    """
    field = signature.input_fields.get(name) or signature.output_fields.get(name)
    if not isinstance(text, str) or field is None or field.annotation is str:
        return text
    try:
        return loads(text, unique_keys=True)
    except ValueError:  # then validation names the field
        return text


def _kind(value: object) -> str:
    return "null" if value is None else type(value).__name__
