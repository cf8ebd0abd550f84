"""Patterns engines can enforce: every string they match is a value Pydantic accepts.

The date patterns are checked exhaustively against the calendar over leap and common years and
centuries; the targets put them (and the Decimal pattern) on the wire.
"""

from __future__ import annotations

import datetime
import re
from decimal import Decimal

import pytest
from pydantic import BaseModel, Field, TypeAdapter, ValidationError

import typedspy as ts
from typedspy.schema._patterns import DATE, DATE_TIME, DECIMAL, INTEGER


class Booking(ts.Signature):
    """Book it."""

    when: datetime.datetime = ts.OutputField()
    day: datetime.date = ts.OutputField()
    price: Decimal = ts.OutputField()


def _is_date(year: int, month: int, day: int) -> bool:
    try:
        datetime.date(year, month, day)
    except ValueError:
        return False
    return True


@pytest.mark.parametrize("year", [1, 4, 100, 400, 1900, 1996, 2000, 2023, 2024, 2100, 9999])
def test_the_date_pattern_is_exactly_the_calendar(year: int) -> None:
    for month in range(0, 14):
        for day in range(0, 33):
            text = f"{year:04d}-{month:02d}-{day:02d}"
            assert bool(re.match(DATE, text)) == _is_date(year, month, day), text


@pytest.mark.parametrize(
    "text",
    [
        "2024-02-29T23:59:59Z",
        "2024-02-29T23:59:59.123456+05:30",
        "2023-01-01T00:00:00",
        "0001-01-01T00:00:00-23:59",
    ],
)
def test_date_times_the_pattern_admits_are_valid(text: str) -> None:
    assert re.match(DATE_TIME, text)
    TypeAdapter(datetime.datetime).validate_python(text)


@pytest.mark.parametrize(
    "text",
    [
        "2023-02-29T00:00:00Z",  # not a leap year
        "2023-01-01t00:00:00Z",  # RFC 3339 allows it; Pydantic does not
        "2023-01-01T00:00:60Z",  # a leap second
        "0000-01-01T00:00:00Z",
        "2023-01-01T24:00:00Z",
        "2023-01-01T00:00:00.1234567Z",
    ],
)
def test_date_times_pydantic_refuses_are_outside_the_pattern(text: str) -> None:
    assert not re.match(DATE_TIME, text)


@pytest.mark.parametrize("text", ["1", "-1.5", ".5", "1.", "+003.20", "0"])
def test_decimal_strings_the_pattern_admits_are_valid(text: str) -> None:
    assert re.match(DECIMAL, text)
    TypeAdapter(Decimal).validate_python(text)


@pytest.mark.parametrize("text", ["", ".", "+", "-.", "1e5", "abc", "1.2.3", " 1"])
def test_other_strings_are_not_decimals(text: str) -> None:
    assert not re.match(DECIMAL, text)


@pytest.mark.parametrize("text", ["0", "7", "-12", "007", "123456789012345678901234567890"])
def test_integer_keys_the_pattern_admits_are_dict_int_keys(text: str) -> None:
    assert re.match(INTEGER, text)
    assert TypeAdapter(dict[int, str]).validate_json(f'{{"{text}": "x"}}') == {int(text): "x"}


@pytest.mark.parametrize("text", ["", "-", "1.5", "1e5", "one", " 1", "0x1"])
def test_other_keys_are_not_integer_text(text: str) -> None:
    assert not re.match(INTEGER, text)


def test_the_json_schema_target_sends_patterns_instead_of_formats() -> None:
    props = ts.schema.compile_schema(Booking, "json-schema").schema["properties"]

    assert (props["when"].get("format"), props["when"]["pattern"]) == (None, DATE_TIME)
    assert (props["day"].get("format"), props["day"]["pattern"]) == (None, DATE)
    assert {"type": "string", "pattern": DECIMAL} in props["price"]["anyOf"]


def test_the_strict_target_keeps_formats_and_sends_the_decimal_pattern() -> None:
    props = ts.schema.compile_schema(Booking).schema["properties"]

    assert props["when"] == {"type": "string", "format": "date-time"}  # OpenAI enforces it
    assert {"type": "string", "pattern": DECIMAL} in props["price"]["anyOf"]


def test_a_users_own_pattern_is_kept() -> None:
    class Stamp(BaseModel):
        at: str = Field(pattern="^[0-9]{8}$", json_schema_extra={"format": "date"})

    class Sig(ts.Signature):
        """Stamp."""

        stamp: Stamp = ts.OutputField()

    schema = ts.schema.compile_schema(Sig, "json-schema").schema
    assert schema["$defs"]["Stamp"]["properties"]["at"]["pattern"] == "^[0-9]{8}$"
    with pytest.raises(ValidationError):
        Stamp(at="2024-01-01")
