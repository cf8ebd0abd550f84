"""Every public error survives pickling with its message and details (a worker process's error
reaches its parent: multiprocessing, pytest-xdist, a process pool running a batch)."""

from __future__ import annotations

import inspect
import pickle
from typing import Any

import pytest

import typedspy as ts

SAMPLES: dict[str, Any] = {
    "message": "it went wrong",
    "custom_id": "item-1",
    "max_errors": 3,
    "limit": "requests",
    "allowed": 2,
    "requests": 3,
    "usage": ts.prediction.Usage(1, 2, 3),
    "key": "k1",
    "rows": (),
    "source": "data.jsonl",
    "seconds": 1.0,
    "elapsed": 2.0,
    "timeout": 1.5,
    "status_code": 503,
    "feature": "tools",
    "kind": "image",
    "field": "photo",
    "profile": "generic",
    "refusal": "I can't help with that",
    "pause_id": "p-1",
    "action": "approve",
    "tool": "search",
    "errors": (),
    "reason": "the score fell",
    "expected": 0.9,
    "got": 0.5,
}

ERRORS = [
    cls
    for name in ts.errors.__all__
    if inspect.isclass(cls := getattr(ts.errors, name)) and issubclass(cls, BaseException)
]


def build(cls: type[BaseException]) -> BaseException:
    args, kwargs = [], {}
    for p in inspect.signature(cls).parameters.values():
        if p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if p.kind is p.KEYWORD_ONLY:
            kwargs[p.name] = SAMPLES[p.name]
        else:
            args.append(SAMPLES[p.name])
    return cls(*args, **kwargs)


@pytest.mark.parametrize("cls", ERRORS, ids=lambda c: c.__name__)
def test_every_public_error_pickles_with_its_message_and_details(cls: type[BaseException]) -> None:
    error = build(cls)
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        copy = pickle.loads(pickle.dumps(error, protocol))
        assert type(copy) is cls
        assert str(copy) == str(error) and copy.args == error.args
        assert vars(copy) == vars(error)
