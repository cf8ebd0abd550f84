"""Inputs and demos that JSON cannot write are refused by name, before any request.

A value that contains itself, or nests past `MAX_JSON_DEPTH`, raised a bare `RecursionError`
from the prompt's rendering; an ``object()``, a function, or bytes that are not UTF-8 a bare
Pydantic serialisation or ``UnicodeDecodeError``; an integer of more digits than Python writes
(``sys.get_int_max_str_digits()``) a bare ``ValueError``. Inputs are now the `ts.InputError`, and
demos the `ts.ConfigurationError` of `ts.Predict(demos=...)`, naming the field and the cause.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from typing import Any

import pytest

import typedspy as ts
from typedspy.testing import StandIn


def cyclic_dict() -> object:
    value: dict[str, Any] = {}
    value["self"] = value
    return value


def cyclic_list() -> object:
    value: list[Any] = []
    value.append(value)
    return value


def deep_list() -> object:
    value: list[Any] = []
    for _ in range(5_000):
        value = [value]
    return value


def huge_int() -> object:
    limit = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    try:
        return 10**5_000
    finally:
        sys.set_int_max_str_digits(limit)


HOSTILE: dict[str, tuple[str, Callable[[], object], str]] = {
    "a dict that contains itself": ("x: dict", cyclic_dict, "contains itself"),
    "a list that contains itself": ("x: list", cyclic_list, "contains itself"),
    "a list nested 5,000 deep": ("x: Any", deep_list, "nested deeper than 256 levels"),
    "an object()": ("x: Any", object, "Unable to serialize unknown type"),
    "a function": ("x: Any", lambda: print, "Unable to serialize unknown type"),
    "bytes that are not UTF-8": ("x: bytes", lambda: b"\xff\xfe", "not UTF-8"),
    "an int of 5,001 digits": ("x: int", huge_int, "4300 digits"),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_an_input_json_cannot_write_is_the_input_error_naming_it(
    standin: tuple[StandIn, ts.LM], case: str
) -> None:
    server, lm = standin
    inputs, make, cause = HOSTILE[case]
    predict = ts.Predict(f"{inputs}, question: str -> answer: str", lm=lm)
    with pytest.raises(ts.InputError, match=rf"input 'x' cannot be sent: .*{cause}"):
        predict(x=make(), question="q")
    with pytest.raises(ts.InputError, match="input 'x' cannot be sent"):
        asyncio.run(predict.acall(x=make(), question="q"))
    assert server.requests == []


@pytest.mark.parametrize("case", list(HOSTILE))
def test_a_demo_json_cannot_write_is_refused_when_the_module_is_built(case: str) -> None:
    inputs, make, cause = HOSTILE[case]
    demo = ts.Example(x=make(), answer="a")
    with pytest.raises(ts.ConfigurationError, match=rf"demo 0: x: cannot be sent: .*{cause}"):
        ts.Predict(f"{inputs} -> answer: str", demos=[demo])


def test_values_json_writes_are_sent_as_before(standin: tuple[StandIn, ts.LM]) -> None:
    server, lm = standin
    predict = ts.Predict("x: Any, n: int, raw: bytes -> answer: str", lm=lm)
    predict(x={"deep": [[[{"nan": float("nan")}]]], "set": {1}}, n=10**4_000, raw=b"ok")
    assert len(server.requests) == 1
