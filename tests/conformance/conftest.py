"""Fixtures of the opt-in real-engine suite: each engine's server, started once per module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from llama import ENGINES, PROFILES, TIMEOUT, Engine, missing_reason, serve

import typedspy as ts


@pytest.fixture(scope="module", params=ENGINES)
def engine(request: pytest.FixtureRequest) -> Engine:
    engine: Engine = request.param
    return engine


@pytest.fixture(scope="module")
def base_url(engine: Engine) -> Iterator[str]:
    reason = missing_reason(engine)
    if reason is not None:
        pytest.skip(reason)
    with serve(engine) as url:
        yield url


@pytest.fixture
def lm(engine: Engine, base_url: str) -> Iterator[ts.LM]:
    profile = PROFILES[engine]
    lm = ts.LM("smollm2", base_url=base_url, api_key="none", profile=profile, timeout=TIMEOUT)
    yield lm
    lm.close()
