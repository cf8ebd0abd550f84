"""Comparers: how one expected value and one predicted value score, from 0.0 to 1.0."""

from __future__ import annotations

import json
import math
import re
import string
import unicodedata
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import BaseModel

from typedspy.signature import to_jsonable

__all__ = ["Comparer", "exact", "f1", "normalized", "type_match"]

Comparer = Callable[[Any, Any], float]
"""Scores a predicted value against the expected one: ``(expected, predicted) -> 0.0..1.0``."""

_PUNCT = re.compile(f"[{re.escape(string.punctuation)}]")


def exact(*, rel_tol: float = 1e-9, abs_tol: float = 0.0) -> Comparer:
    """Equal values score 1.0, others 0.0; numbers within the tolerance count as equal.

    Models are equal when they are of the same class and their fields are equal (compared
    the same way, at any depth); lists and dicts compare element by element.

    Args:
        rel_tol: Relative tolerance for numbers (`math.isclose`).
        abs_tol: Absolute tolerance for numbers.
    """

    def compare(expected: Any, predicted: Any) -> float:
        return 1.0 if _equal(expected, predicted, rel_tol, abs_tol) else 0.0

    compare.__qualname__ = f"exact(rel_tol={rel_tol}, abs_tol={abs_tol})"
    return compare


def _equal(a: Any, b: Any, rel: float, abs_: float) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        try:
            return math.isclose(a, b, rel_tol=rel, abs_tol=abs_)
        except OverflowError:  # an int past a float (400 digits): equal only when equal
            return a == b
    if isinstance(a, BaseModel):
        return type(a) is type(b) and _equal(dict(a), dict(b), rel, abs_)
    if isinstance(b, BaseModel):
        return False
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_equal(a[k], b[k], rel, abs_) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_equal(x, y, rel, abs_) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def normalize_text(text: str) -> str:
    """Unicode NFKC, case folded, punctuation removed, whitespace collapsed."""
    text = unicodedata.normalize("NFKC", text).casefold()
    return " ".join(_PUNCT.sub(" ", text).split())


def normalized() -> Comparer:
    """Strings equal after `normalize_text` (case, punctuation, spacing) score 1.0.

    Non-string values are compared with `exact`.
    """
    fallback = exact()

    def compare(expected: Any, predicted: Any) -> float:
        if isinstance(expected, str) and isinstance(predicted, str):
            return 1.0 if normalize_text(expected) == normalize_text(predicted) else 0.0
        return fallback(expected, predicted)

    compare.__qualname__ = "normalized()"
    return compare


def type_match() -> Comparer:
    """1.0 when the prediction is the same union member (class) as the expected value.

    This is `_type` accuracy: the fields inside the member are not compared. For values that
    are not models it falls back to `exact`.
    """
    fallback = exact()

    def compare(expected: Any, predicted: Any) -> float:
        if isinstance(expected, BaseModel) or isinstance(predicted, BaseModel):
            return 1.0 if type(expected) is type(predicted) else 0.0
        return fallback(expected, predicted)

    compare.__qualname__ = "type_match()"
    return compare


def f1() -> Comparer:
    """F1 overlap: of list/set items (as multisets), or of normalised words for strings.

    Two empty collections score 1.0. Items that are models are compared by their JSON form.
    """

    def compare(expected: Any, predicted: Any) -> float:
        if isinstance(expected, str) and isinstance(predicted, str):
            return _f1(normalize_text(expected).split(), normalize_text(predicted).split())
        if isinstance(expected, (list, tuple, set, frozenset)) and isinstance(
            predicted, (list, tuple, set, frozenset)
        ):
            return _f1([_key(x) for x in expected], [_key(x) for x in predicted])
        return exact()(expected, predicted)

    compare.__qualname__ = "f1()"
    return compare


def _key(item: Any) -> Any:
    if isinstance(item, str):
        return normalize_text(item)
    data = to_jsonable(item)
    return json.dumps(data, sort_keys=True) if isinstance(data, (dict, list)) else data


def _f1(expected: list[Any], predicted: list[Any]) -> float:
    if not expected and not predicted:
        return 1.0
    common = sum((Counter(expected) & Counter(predicted)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(predicted), common / len(expected)
    return 2 * precision * recall / (precision + recall)
